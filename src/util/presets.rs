//! The preset names every method shares, written once: the command line's defaults, the
//! window's starting choices, the registry's checks and the verdict's advice read them here.

/// The preset every method lists first, and the one the command line and the window
/// start from.
pub const DEFAULT_PRESET: &str = "quick";
/// The preset every method has that trains for seconds: tests and smoke checks.
pub const SMOKE_PRESET: &str = "tiny";
/// The preset every method that learns images has for 28×28 digits with their label.
pub const DIGITS_PRESET: &str = "mnist";
