//! One module per subcommand.
pub mod bench;
pub mod bench_run;
pub mod check;
pub mod clean;
pub mod fuzz;
pub mod images;
pub mod matrix;
pub mod report;
pub mod run;
pub mod serve;
pub mod worker;
