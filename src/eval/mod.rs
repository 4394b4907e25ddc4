//! The evaluation suite (DESIGN.md §4): how close synthetic data is to the real data it
//! stands for, how useful it is for learning, and how much it reveals about real rows.
//!
//! Evaluation reads the real data in the clear: its report is for the data's custodian,
//! not for release, and it spends no privacy budget. The released artefact is the model.

pub mod cnn;
pub mod dimwise;
pub mod first_look;
pub mod forest;
pub mod frame;
pub mod html;
pub mod images;
pub mod linalg;
pub mod linked;
pub mod marginals;
pub mod models;
pub mod modes;
pub mod net;
pub mod pca;
pub mod report;
pub mod results;
pub mod risk;
pub mod scores;
pub mod stats;
pub mod transport;
pub mod tstr;
pub mod verdict;
pub mod wasserstein;
pub mod xy;
