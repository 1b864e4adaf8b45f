//! Reading ladder files: `verify` (replay against the legal order), `split` (one file per
//! run), `report` (the statistics of METHOD.md, written by `export`) and `calibrate` (the
//! error rates of those statistics on simulated ladders of a spec's design).

pub mod across;
pub mod analysis;
pub mod breakdown_cells;
pub mod calibrate;
pub mod cli;
pub mod energy;
pub mod export;
pub mod extras;
pub mod frames;
pub mod identity;
pub mod minute;
pub mod model;
pub mod plan;
pub mod reading;
pub mod report;
pub mod split;
pub mod stats;
pub mod time_use;
pub mod variance;
pub mod verify;
pub mod witness;
