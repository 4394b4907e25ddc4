//! Small helpers shared by every layer: atomic file writes, a file's size-and-time stamp,
//! number formatting, and the count of parses and hashes per file.

pub mod atomic;
pub mod file_stamp;
pub mod fmt;
pub mod presets;
pub mod tally;
