//! The engine's integration tests, one binary (each file a module): the privacy core
//! against its fixtures, the readers, the methods end to end, the ledger, sweeps and audits,
//! the CLI as a user runs it. One binary links the crate once instead of once per file.
//!
//! The window's tests stay one binary each (`tests/gui*.rs`): each points the process's
//! data folder and ledger (environment variables) at its own scratch folder, which only a
//! process of its own may do.

#[path = "../common/mod.rs"]
mod common;

mod accountant_fixtures;
mod audit;
mod bad_input;
mod codebook_rules;
#[cfg(feature = "ballista")]
mod distributed;
mod dpsgd;
mod evaluate;
mod first_look;
mod formats;
mod fuzz;
mod inspect;
mod jitter;
mod labeller;
mod layering;
mod ledger;
mod linked;
mod linked_books;
mod marginal;
mod metrics_fixtures;
mod product_words;
mod registry;
mod release_facts;
mod roundtrip;
mod streaming;
mod sweep;
mod train;
