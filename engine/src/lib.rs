//! A decode engine for the hybrid Gated DeltaNet + gated attention + sparse MoE
//! architecture (Qwen3.5 / Qwen3-Next family) with an MTP draft layer.
//!
//! One model definition ([`model::Model`]) runs on a [`backend::Backend`]: the CPU backend
//! here, the CUDA backend in [`cuda`].

pub mod backend;
pub mod bench;
pub mod breakdown;
pub mod chain;
pub mod cli;
pub mod config;
pub mod cpu;
pub mod cuda;
pub mod decode;
pub mod energy_counter;
pub mod info;
pub mod meter;
pub mod model;
pub mod options;
pub mod pad;
pub mod rows;
pub mod state;
pub mod synthetic;
pub mod tensors;
pub mod weights;
