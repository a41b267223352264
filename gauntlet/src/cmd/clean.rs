//! `gauntlet clean`: remove containers and networks left by crashed runs (labelled ones only).

pub fn run() -> anyhow::Result<i32> {
    anyhow::bail!("clean: not implemented yet")
}
