//! The outputs of `analyze report`, one module per format, each from the same reading:
//! markdown (with the one-screen summary), JSON, CSV, and the SVG figures the markdown links.

pub mod csv;
pub mod json;
pub mod markdown;
pub mod svg;
