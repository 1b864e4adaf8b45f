//! Reading ladder files: `verify` (replay against the legal order), `split` (one file per
//! run) and `report` (the statistics of METHOD.md).

pub mod across;
pub mod analysis;
pub mod extras;
pub mod frames;
pub mod identity;
pub mod markdown;
pub mod plots;
pub mod report;
pub mod split;
pub mod stats;
pub mod verify;
pub mod witness;
