//! Brief overview: neural-network building blocks and DP-SGD, on candle tensors.
//!
//! - [`layers`]: [`layers::Net`], a stack of blocks (linear, activations, layer/batch norm,
//!   residual blocks, per-span output heads) with an explicit forward cache and a
//!   hand-written backward pass. The backward pass yields each linear layer's inputs A and
//!   output signals Δ, which is all DP-SGD needs: per-example gradient norms are
//!   ‖g_i‖² = Σ_l ‖δ_il‖²(‖a_il‖² + 1) and the clipped sum is Δᵀdiag(c)A, so no
//!   per-example gradient is ever materialised and no second backward pass is run.
//! - [`conv`]: convolution and transposed convolution as a patch gather and one matrix
//!   product, so the same A/Δ reduction (or, per layer where cheaper, the ghost norm)
//!   clips them.
//! - [`dpsgd`]: Poisson sampling, clipping, calibrated Gaussian noise from a CSPRNG, and
//!   the step that charges the accountant before it touches data.
//! - [`reference`]: the slow, obviously-correct per-example path (candle autograd, one
//!   backward pass per example) that the tests hold the fast path to.
//! - [`optim`]: SGD with momentum, Adam/AdamW, RMSProp.
//! - [`device`]: CPU by default, CUDA/Metal behind cargo features, thread caps.
//!
//! Layering: uses `privacy` (to charge steps); never `data`, `methods`, `gui` or `cli`.

pub mod bench;
pub mod conv;
pub mod dcgan;
pub mod device;
pub mod dpsgd;
mod gather;
pub(crate) mod host;
pub mod layers;
pub mod optim;
pub mod reference;
pub mod spec;

/// Errors from network construction or training, worded for a person.
#[derive(Debug, thiserror::Error)]
pub enum NnError {
    #[error("tensor error: {0}")]
    Candle(#[from] candle_core::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("the device '{0}' is not available: {1}")]
    Device(String, String),
}

pub type Result<T> = std::result::Result<T, NnError>;
