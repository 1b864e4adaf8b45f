//! Reading ladder files: `verify` (replay against the legal order), `split` (one file per
//! run) and `report` (the statistics of METHOD.md).

pub mod report;
pub mod split;
pub mod verify;
