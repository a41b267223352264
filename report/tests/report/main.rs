//! The report tests, one binary with a module per area.
mod common;

mod big;
mod chromium;
mod escaping;
mod faults;
mod junit;
mod run_dir;
mod schema;
mod sentences;
mod serve;
mod snapshot;
