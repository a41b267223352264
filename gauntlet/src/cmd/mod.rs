//! One module per subcommand.
pub mod check;
pub mod clean;
pub mod images;
