//! The runner: reads a ladder spec and runs every cell as a fresh process of the command,
//! in the legal order, writing the ladder file one durable row at a time.

pub mod ab;
pub mod binary;
pub mod capture;
pub mod card_sampler;
pub mod cell;
pub mod cell_check;
pub mod cell_env;
pub mod cli;
pub mod fleet;
pub mod ladder_run;
pub mod output;
pub mod plan;
pub mod preflight;
pub mod progress;
pub mod reading;
pub mod reaper;
pub mod sbatch;
pub mod stop_signal;
pub mod summary;
pub mod terminal;
pub mod witness;
pub mod words;
