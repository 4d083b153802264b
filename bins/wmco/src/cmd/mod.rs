//! One module per `wmco` subcommand; each exposes a `run` function returning `anyhow::Result<Outcome>`.

pub mod completion;
pub mod crd;
pub mod csr;
pub mod diagnose;
pub mod instances;
pub mod machineset;
pub mod man;
pub mod payload;
pub mod plan;
pub mod preflight;
pub mod run;
pub mod ssh;
pub mod status;
pub mod user_data;
pub mod version;
