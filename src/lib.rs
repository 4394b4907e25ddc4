//! dpsynth: differentially private synthetic data, as a desktop app and a command line.
//!
//! Brief overview of the layers (lower never import higher; see DESIGN.md §1):
//!
//! | module | owns |
//! |---|---|
//! | [`privacy`] | RDP curves, RDP→(ε,δ), calibration, the `Accountant`, the on-disk budget ledger |
//! | [`data`] | CSV/IDX loading, schema with domain provenance, encode/decode, export |
//! | [`eval`] | metrics, classifiers, reports (reads real data in the clear; spends no budget) |
//! | [`nn`] | network blocks on candle, DP-SGD with per-example clipping, optimizers, devices |
//! | [`gui`] | the eframe window |
//! | [`cli`] | clap subcommands |
//!
//! `privacy` is plain `f64` math and storage: no candle, polars or GUI code.

pub mod cli;
pub mod data;
pub mod eval;
pub mod fuzz;
pub mod gpu;
#[cfg(feature = "gui")]
pub mod gui;
pub mod job;
pub mod methods;
pub mod nn;
pub mod privacy;
pub mod util;
