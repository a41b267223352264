//! The run on this machine's Docker Engine: the Docker backend handed to the
//! backend-neutral pipeline ([`crate::run::run_with_backend`]). The pipeline in
//! `run/` names no Docker type; this entry is where the two meet.
//!
//! May import: `run` and `backend::docker`.
use crate::backend::docker::DockerBackend;
use crate::error::HarnessError;
use crate::run::{run_with_backend, EventSink, RunOptions, RunOutcome, Scenario};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Runs a scenario. `exe` is the `gauntlet` binary (for worker processes).
/// What happens goes to `events`; Ctrl-C ends the run with
/// [`RunOutcome::interrupted`] (or [`HarnessError::Interrupted`] when nothing
/// was recorded yet).
pub async fn run(
    scenario: &Scenario,
    exe: &Path,
    events: EventSink,
) -> Result<RunOutcome, HarnessError> {
    run_with(scenario, exe, events, RunOptions::default()).await
}

/// [`run`] with recording options: the scenario on a Docker deployment.
pub async fn run_with(
    scenario: &Scenario,
    exe: &Path,
    events: EventSink,
    opts: RunOptions,
) -> Result<RunOutcome, HarnessError> {
    let entered = Instant::now();
    let backend = Arc::new(DockerBackend::connect().await?);
    run_with_backend(backend, entered, scenario, exe, events, opts).await
}
