//! Small helpers shared by every layer: atomic file writes, number formatting, and the
//! count of parses and hashes per file.

pub mod atomic;
pub mod fmt;
pub mod presets;
pub mod tally;
