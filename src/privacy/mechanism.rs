//! Every mechanism dpsynth runs, as a value the accountant can charge and the ledger can
//! store. Each variant states its sensitivity and how it is accounted.

use serde::{Deserialize, Serialize};

use super::rdp;

/// One use of a privacy mechanism on the private records.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Mechanism {
    /// One DP-SGD step: each record is included independently with probability `q`
    /// (true Poisson sampling), per-example gradients are clipped to L2 norm C (so adding
    /// or removing a record moves the clipped sum by at most C), and N(0, σ²C²) noise is
    /// added. Accounting: the sampled Gaussian's RDP (Mironov–Talwar–Zhang 2019), exact for
    /// integer orders and by the convergent series for fractional ones. With `q = 1` this
    /// is the plain Gaussian mechanism, RDP α/(2σ²).
    SubsampledGaussian { q: f64, sigma: f64 },
    /// A Gaussian release of a statistic with L2 sensitivity `sensitivity` and noise
    /// standard deviation `std` (PEARL's characteristic-function release, DP estimates of
    /// bounds or means). RDP α·Δ²/(2s²) (Mironov 2017, Prop. 7).
    Gaussian { sensitivity: f64, std: f64 },
    /// Any ε₀-DP mechanism (Laplace, randomized response). ε₀-DP implies ε₀²/2-zCDP (Bun &
    /// Steinke 2016, Prop. 1.4) and (α, ε₀)-RDP for every α, so RDP = min(ε₀, α·ε₀²/2).
    PureDp { epsilon: f64 },
    /// The exponential mechanism with utility sensitivity Δu run at ε₀ (post-GAN boosting
    /// picks a discriminator per round). It is ε₀-bounded-range, hence ε₀²/8-zCDP (Cesar &
    /// Rogers 2021, Lemma 3.2 with Durfee & Rogers 2019), and ε₀-DP, so RDP = min(ε₀, α·ε₀²/8).
    Exponential { epsilon: f64 },
    /// PATE's Gaussian NoisyMax on the teachers' vote histogram, data-independent bound:
    /// one record changes one teacher's vote, moving two histogram bins by one each, so the
    /// L2 sensitivity is √2 and with noise N(0, σ²) per bin the RDP is α·2/(2σ²) = α/σ².
    /// The bound covers the whole noisy histogram (its argmax is post-processing), and PLD
    /// composes it exactly as the Gaussian mechanism at noise multiplier σ/√2.
    GnMax { sigma: f64 },
    /// PATE 2017's Laplace NoisyMax with noise Lap(1/λ), data-independent part of its
    /// moments bound: log-moment α(l) ≤ 2λ²·l(l+1) at integer l (Papernot et al. 2017,
    /// Thm 2), i.e. RDP 2λ²·a at integer order a = l + 1. At fractional orders the next
    /// integer's value is used (RDP is non-decreasing in the order), and every order is
    /// capped by the pure-DP bound 2λ. The bound uses only that the noisy histogram is
    /// 2λ-DP, which the exact discrete Laplace of scale 1/λ that dpsynth draws
    /// ([`super::discrete::DiscreteLaplace`]) also is.
    LnMax { lambda: f64 },
    /// A ρ-zCDP mechanism given directly: RDP αρ.
    Zcdp { rho: f64 },
    /// A Gaussian histogram over keys read from the data, releasing only the keys whose
    /// noisy count passes a threshold (DP category estimation,
    /// [`super::estimators::estimate_categories`]). One record sits in one cell (L2
    /// sensitivity 1); a key held by that record alone passes with probability at most
    /// `delta_inf`. Accounting: the PLD of the Gaussian (σ = `std`) with `delta_inf` of its
    /// mass moved to +∞, whose δ(ε) = δ∞ + (1 − δ∞)·δ_Gauss(ε) dominates both the
    /// shared-key case (δ_Gauss) and the new-key case (δ∞). RDP cannot hold an infinite
    /// loss and reports ∞: a history with this charge is composed by PLD.
    ThresholdedGaussian { std: f64, delta_inf: f64 },
    /// Integer counts plus exact discrete Gaussian noise N_ℤ(0, σ²) per count
    /// ([`super::discrete::DiscreteGaussian`]), where one record moves exactly one count by
    /// one (a histogram under add/remove; class counts). RDP α/(2σ²) — for an integer shift
    /// the discrete Gaussian's Rényi divergence equals the continuous one's bound (Canonne,
    /// Kamath & Steinke 2020, Prop. 5) — and PLD from its exact pmf
    /// ([`super::pld::Pld::discrete_gaussian`]), built at the σ² the sampler really uses.
    DiscreteGaussian { std: f64 },
    /// The category estimator on exact discrete noise: counts of levels read from the data
    /// plus N_ℤ(0, σ²), released only above an integer threshold that a level held by one
    /// record passes with probability at most `delta_inf` (computed from the discrete
    /// pmf). PLD of [`Mechanism::DiscreteGaussian`] with `delta_inf` of its mass at +∞, as
    /// for the continuous [`Mechanism::ThresholdedGaussian`]; RDP is ∞.
    ThresholdedDiscreteGaussian { std: f64, delta_inf: f64 },
    /// PATE's NoisyMax on the teachers' integer vote histogram with N_ℤ(0, σ²) per bin: one
    /// record changes one teacher's vote, moving two bins by one each. RDP 2·α/(2σ²) = α/σ²
    /// (two independent unit shifts), PLD the unit discrete Gaussian's composed twice.
    DiscreteGnMax { sigma: f64 },
}

impl Mechanism {
    /// RDP of one use at each order.
    pub fn rdp(&self, orders: &[f64]) -> Vec<f64> {
        match *self {
            Mechanism::SubsampledGaussian { q, sigma } => {
                rdp::subsampled_gaussian(q, sigma, orders)
            }
            Mechanism::Gaussian { sensitivity, std } => {
                if std <= 0.0 {
                    return vec![f64::INFINITY; orders.len()];
                }
                rdp::zcdp(sensitivity * sensitivity / (2.0 * std * std), orders)
            }
            Mechanism::PureDp { epsilon } => orders
                .iter()
                .map(|a| epsilon.min(a * epsilon * epsilon / 2.0))
                .collect(),
            Mechanism::Exponential { epsilon } => orders
                .iter()
                .map(|a| epsilon.min(a * epsilon * epsilon / 8.0))
                .collect(),
            Mechanism::GnMax { sigma } => {
                if sigma <= 0.0 {
                    return vec![f64::INFINITY; orders.len()];
                }
                orders.iter().map(|a| a / (sigma * sigma)).collect()
            }
            Mechanism::LnMax { lambda } => orders
                .iter()
                .map(|a| (2.0 * lambda * lambda * a.ceil()).min(2.0 * lambda))
                .collect(),
            Mechanism::Zcdp { rho } => rdp::zcdp(rho, orders),
            Mechanism::ThresholdedGaussian { .. }
            | Mechanism::ThresholdedDiscreteGaussian { .. } => vec![f64::INFINITY; orders.len()],
            Mechanism::DiscreteGaussian { std } => {
                if std <= 0.0 {
                    return vec![f64::INFINITY; orders.len()];
                }
                rdp::zcdp(1.0 / (2.0 * std * std), orders)
            }
            Mechanism::DiscreteGnMax { sigma } => {
                if sigma <= 0.0 {
                    return vec![f64::INFINITY; orders.len()];
                }
                orders.iter().map(|a| a / (sigma * sigma)).collect()
            }
        }
    }

    /// Rejects parameters that make no sense (negative noise, q outside [0, 1], …).
    pub fn validate(&self) -> Result<(), String> {
        let bad = |m: String| Err(m);
        match *self {
            Mechanism::SubsampledGaussian { q, sigma } => {
                if !(0.0..=1.0).contains(&q) {
                    return bad(format!("sampling rate q must be in [0, 1], got {q}"));
                }
                if !(sigma.is_finite() && sigma > 0.0) {
                    return bad(format!(
                        "noise multiplier sigma must be positive, got {sigma}"
                    ));
                }
            }
            Mechanism::Gaussian { sensitivity, std } => {
                if !(sensitivity.is_finite() && sensitivity >= 0.0 && std.is_finite() && std > 0.0)
                {
                    return bad(format!(
                        "Gaussian needs sensitivity ≥ 0 and std > 0, got {sensitivity}, {std}"
                    ));
                }
            }
            Mechanism::PureDp { epsilon } | Mechanism::Exponential { epsilon } => {
                if !(epsilon.is_finite() && epsilon >= 0.0) {
                    return bad(format!("epsilon must be finite and ≥ 0, got {epsilon}"));
                }
            }
            Mechanism::GnMax { sigma } => {
                if !(sigma.is_finite() && sigma > 0.0) {
                    return bad(format!("GNMax sigma must be positive, got {sigma}"));
                }
            }
            Mechanism::LnMax { lambda } => {
                if !(lambda.is_finite() && lambda >= 0.0) {
                    return bad(format!("LNMax lambda must be finite and ≥ 0, got {lambda}"));
                }
            }
            Mechanism::Zcdp { rho } => {
                if !(rho.is_finite() && rho >= 0.0) {
                    return bad(format!("rho must be finite and ≥ 0, got {rho}"));
                }
            }
            Mechanism::ThresholdedGaussian { std, delta_inf } => {
                if !(std.is_finite() && std > 0.0 && delta_inf > 0.0 && delta_inf < 1.0) {
                    return bad(format!(
                        "thresholded Gaussian needs std > 0 and 0 < δ∞ < 1, got {std}, {delta_inf}"
                    ));
                }
            }
            Mechanism::DiscreteGaussian { std: s } | Mechanism::DiscreteGnMax { sigma: s } => {
                if !(s.is_finite() && s > 0.0 && s <= super::discrete::MAX_STD) {
                    return bad(format!(
                        "discrete Gaussian noise needs 0 < σ ≤ {}, got {s}; a count with more noise says nothing: raise ε",
                        super::discrete::MAX_STD
                    ));
                }
            }
            Mechanism::ThresholdedDiscreteGaussian { std, delta_inf } => {
                if !(std.is_finite()
                    && std > 0.0
                    && std <= super::discrete::MAX_STD
                    && delta_inf > 0.0
                    && delta_inf < 1.0)
                {
                    return bad(format!(
                        "thresholded discrete Gaussian needs 0 < std ≤ {} and 0 < δ∞ < 1, got {std}, {delta_inf}",
                        super::discrete::MAX_STD
                    ));
                }
            }
        }
        Ok(())
    }

    /// A one-line description for statements and logs.
    pub fn describe(&self) -> String {
        let n = short;
        match *self {
            Mechanism::SubsampledGaussian { q, sigma } => {
                format!("Poisson-subsampled Gaussian (q={}, σ={})", n(q), n(sigma))
            }
            Mechanism::Gaussian { sensitivity, std } => {
                format!("Gaussian (Δ₂={}, std={})", n(sensitivity), n(std))
            }
            Mechanism::PureDp { epsilon } => format!("pure ε-DP (ε₀={})", n(epsilon)),
            Mechanism::Exponential { epsilon } => {
                format!("exponential mechanism (ε₀={}, bounded range)", n(epsilon))
            }
            Mechanism::GnMax { sigma } => format!("PATE Gaussian NoisyMax (σ={})", n(sigma)),
            Mechanism::LnMax { lambda } => format!("PATE Laplace NoisyMax (λ={})", n(lambda)),
            Mechanism::Zcdp { rho } => format!("ρ-zCDP (ρ={})", n(rho)),
            Mechanism::ThresholdedGaussian { std, delta_inf } => format!(
                "thresholded Gaussian histogram (Δ₂=1, std={}, δ∞={})",
                n(std),
                n(delta_inf)
            ),
            Mechanism::DiscreteGaussian { std } => {
                format!("discrete Gaussian on counts (Δ₂=1, σ={})", n(std))
            }
            Mechanism::ThresholdedDiscreteGaussian { std, delta_inf } => format!(
                "thresholded discrete Gaussian histogram (Δ₂=1, σ={}, δ∞={})",
                n(std),
                n(delta_inf)
            ),
            Mechanism::DiscreteGnMax { sigma } => {
                format!("PATE discrete Gaussian NoisyMax (σ={})", n(sigma))
            }
        }
    }
}

/// A parameter for a sentence: five significant digits, scientific when tiny or huge.
fn short(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e7) {
        return format!("{x:.3e}");
    }
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (4.0 - x.abs().log10().floor()).clamp(0.0, 9.0) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `count` uses of a mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Charge {
    pub mechanism: Mechanism,
    pub count: u64,
}

/// The summed RDP curve of `charges` on `orders` (what a ledger stores for a plan or a
/// history).
pub fn charges_curve(charges: &[Charge], orders: &[f64]) -> Vec<f64> {
    let mut sum = vec![0.0; orders.len()];
    for ch in charges {
        for (s, r) in sum.iter_mut().zip(ch.mechanism.rdp(orders)) {
            *s += r * ch.count as f64;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    #[test]
    fn parameters_read_short() {
        assert_eq!(super::short(131.6209184062677), "131.62");
        assert_eq!(super::short(0.0033333), "0.0033333");
        assert_eq!(super::short(3.333e-8), "3.333e-8");
        assert_eq!(super::short(1.0), "1");
        assert_eq!(super::short(0.01572), "0.01572");
    }
}
