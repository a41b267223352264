//! Checks one history file and prints the verdict JSON (a library-only `gauntlet check`), with timings on stderr.
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: check_file HISTORY");
        std::process::exit(3);
    };
    let t = std::time::Instant::now();
    let h = match gauntlet_history::read_path(&path) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(3);
        }
    };
    eprintln!("read in {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let v = gauntlet_checkers::check(&h, &gauntlet_checkers::CheckOptions::default());
    eprintln!("checked in {:?}", t.elapsed());
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    std::process::exit(v.valid.exit_code());
}
