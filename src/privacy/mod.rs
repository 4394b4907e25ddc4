//! Brief overview: the privacy core. Plain `f64` math and storage only — no candle, polars
//! or GUI code (a test enforces it).
//!
//! - [`rdp`]: Rényi-DP curves of every mechanism dpsynth uses, on a fixed order grid.
//! - [`convert`]: RDP → (ε, δ) with the conversion dp-accounting uses, and δ for a given ε.
//! - [`calibrate`]: the smallest noise multiplier for a target, the most steps that fit.
//! - [`compose`]: ε of a list of charges by RDP and PLD, reporting the smaller.
//! - [`exponential`]: the exponential mechanism's sampler and its per-round ε₀.
//! - [`discrete`]: exact discrete Gaussian and Laplace noise for integer releases (counts,
//!   votes), on integers only.
//! - [`estimators`]: DP estimates of a column's bounds and categories.
//! - [`point_masses`]: DP estimates of the exact values many rows of a number column hold.
//! - [`record_count`]: a record count with exact discrete Gaussian noise (linked tables).
//! - [`audit`]: empirical lower bounds on ε (distinguishing tests, one-run canary audits).
//! - [`votes`]: PATE's noisy vote counts and the mechanism each query charges.
//! - [`tradeoff`]: what ε means for a person: the best attack's TPR at each FPR.
//! - [`accountant`]: a run's [`Accountant`]: budget, charges, spent and remaining ε.
//! - [`ledger`]: the per-dataset budget book on disk (SQLite, WAL, synchronous=FULL).
//!
//! Invariants (DESIGN.md §2): every access to private records is charged before it runs;
//! the budget is never exceeded; when in doubt the larger ε is reported.

pub mod accountant;
pub mod audit;
pub mod calibrate;
pub mod compose;
pub mod convert;
pub mod discrete;
pub mod estimators;
pub mod exponential;
pub mod ledger;
pub mod mechanism;
pub mod pld;
pub mod point_masses;
pub mod probe;
pub mod rdp;
pub mod record_count;
#[cfg(test)]
mod sampler_vectors;
pub mod tradeoff;
pub mod votes;

pub use accountant::{Accountant, Budget};
pub use convert::EpsilonAt;
pub use mechanism::Mechanism;
pub use mechanism::{Charge, charges_curve};
