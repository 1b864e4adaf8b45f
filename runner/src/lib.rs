//! The runner: reads a ladder spec and runs every cell as a fresh process of the command,
//! in the legal order, writing the ladder file one durable row at a time.

pub mod binary;
pub mod cell;
pub mod cell_env;
pub mod fleet;
pub mod ladder_run;
pub mod output;
pub mod plan;
pub mod progress;
pub mod sbatch;
pub mod witness;
