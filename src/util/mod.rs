//! Small helpers shared by every layer: atomic file writes and number formatting.

pub mod atomic;
pub mod fmt;
