//! The outputs of `analyze report`, one module per format, each from the same reading:
//! markdown (with the one-screen summary), JSON, CSV, the SVG figures the markdown links,
//! and the plain-text summary for a terminal.

pub mod breakdown_svg;
pub mod csv;
pub mod json;
pub mod markdown;
pub mod status;
pub mod svg;
pub mod terminal;
