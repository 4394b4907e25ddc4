//! ε of a composition of charges, by both accountants, reporting the smaller.
//!
//! RDP and PLD are each a valid upper bound on the same composition, so their minimum is
//! one too. PLD is the tighter for Gaussian-type mechanisms (often by half at ε ≈ 1) and
//! RDP is the only one for the mechanisms the PLD code does not model (exponential,
//! pure-DP, PATE's Laplace NoisyMax). A history mixing both gets a third bound as well:
//! the Gaussian-type part by PLD at δ − δ₂ plus the rest by RDP at δ₂, added (basic
//! composition of an (ε₁, δ₁) and an (ε₂, δ₂) guarantee), the best of a few splits δ₂.
//! It is the only finite one when the history holds a thresholded histogram (which RDP
//! cannot express) and an exponential mechanism (which PLD does not model): a private
//! category estimate followed by post-GAN boosting. Otherwise RDP, which composes a small
//! zCDP part almost for free, usually wins.
//!
//! Everything that spends or checks budget (calibration, a run's accountant, the ledger)
//! goes through [`compose`], so the figure that decides is the figure that is shown.

use super::convert::to_epsilon;
use super::mechanism::Mechanism;
use super::mechanism::{Charge, charges_curve};
use super::pld::{DEFAULT_INTERVAL, Pld};

/// Which accountant gave a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Rdp,
    Pld,
    /// PLD for the Gaussian-type charges plus RDP for the rest, δ split between them.
    PldRdp,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Rdp => "rdp",
            Method::Pld => "pld",
            Method::PldRdp => "pld+rdp",
        }
    }
}

/// ε of a composition at one δ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Composed {
    /// The reported figure: the smaller of the two.
    pub epsilon: f64,
    pub by: Method,
    pub rdp: f64,
    /// `None` when some charge is a mechanism the PLD accountant does not model.
    pub pld: Option<f64>,
}

/// The PLD of one charge, or `None` for a mechanism PLD does not model. A zero-count or
/// zero-rate charge has no loss and gives `Some(None)`.
fn pld_of(ch: &Charge) -> Option<Option<Pld>> {
    if let Mechanism::ThresholdedGaussian { std, delta_inf } = ch.mechanism {
        if ch.count == 0 {
            return Some(None);
        }
        let one = Pld::subsampled_gaussian(1.0, std, DEFAULT_INTERVAL).with_infinity(delta_inf);
        return Some(Some(one.self_compose(ch.count)));
    }
    // Exact discrete noise: the PLD of the discrete Gaussian's own pmf.
    let discrete = match ch.mechanism {
        Mechanism::DiscreteGaussian { std } => Some((std, 1, 0.0)),
        Mechanism::ThresholdedDiscreteGaussian { std, delta_inf } => Some((std, 1, delta_inf)),
        // Two bins move by one each: two independent unit shifts.
        Mechanism::DiscreteGnMax { sigma } => Some((sigma, 2, 0.0)),
        _ => None,
    };
    if let Some((std, shifts, delta_inf)) = discrete {
        if ch.count == 0 {
            return Some(None);
        }
        let one = Pld::discrete_gaussian(std, DEFAULT_INTERVAL)?;
        let one = if shifts == 2 { one.compose(&one) } else { one };
        let one = if delta_inf > 0.0 {
            one.with_infinity(delta_inf)
        } else {
            one
        };
        return Some(Some(one.self_compose(ch.count)));
    }
    let (q, sigma) = match ch.mechanism {
        Mechanism::SubsampledGaussian { q, sigma } => (q, sigma),
        Mechanism::Gaussian { sensitivity, std } if sensitivity > 0.0 => (1.0, std / sensitivity),
        Mechanism::Gaussian { .. } => return Some(None),
        // GNMax releases (a function of) the vote histogram plus N(0, σ²) per bin, whose
        // L2 sensitivity is √2: the Gaussian mechanism at noise multiplier σ/√2.
        Mechanism::GnMax { sigma } => (1.0, sigma / std::f64::consts::SQRT_2),
        _ => return None,
    };
    if q <= 0.0 || ch.count == 0 {
        return Some(None);
    }
    Some(Some(
        Pld::subsampled_gaussian(q.min(1.0), sigma, DEFAULT_INTERVAL).self_compose(ch.count),
    ))
}

/// The PLD of the charges PLD models (`None` when none has a loss), and the charges it
/// does not model. Uses of one mechanism compose as one FFT power, however they were split.
fn pld_part(charges: &[Charge]) -> (Option<Pld>, Vec<Charge>) {
    let mut merged: Vec<Charge> = Vec::new();
    for ch in charges {
        match merged.iter_mut().find(|m| m.mechanism == ch.mechanism) {
            Some(m) => m.count += ch.count,
            None => merged.push(*ch),
        }
    }
    let mut total: Option<Pld> = None;
    let mut rest = Vec::new();
    for ch in &merged {
        match pld_of(ch) {
            None => rest.push(*ch),
            Some(None) => {}
            Some(Some(p)) => {
                total = Some(match total {
                    None => p,
                    Some(t) => t.compose(&p),
                })
            }
        }
    }
    (total, rest)
}

/// ε of `charges` by PLD at `delta`; `None` if a charge is not modelled, or its PLD cannot
/// be built (a σ the exact sampler refuses): such a charge is never dropped from the sum
/// (fail closed; the callers fall back to RDP, which counts every charge). Milliseconds to
/// about a second (one FFT power per distinct mechanism): not for every step.
pub fn pld_epsilon(charges: &[Charge], delta: f64) -> Option<f64> {
    if !charges.iter().all(|c| models(&c.mechanism)) {
        return None;
    }
    let (total, rest) = pld_part(charges);
    if !rest.is_empty() {
        return None;
    }
    Some(total.map_or(0.0, |t| t.epsilon(delta)))
}

/// δ(ε′) of `charges` by PLD at each of `epsilons`; `None` if a charge is not modelled
/// (the trade-off curve then falls back to the (ε, δ) bound).
pub fn pld_delta_curve(charges: &[Charge], epsilons: &[f64]) -> Option<Vec<(f64, f64)>> {
    if !charges.iter().all(|c| models(&c.mechanism)) {
        return None;
    }
    let (total, rest) = pld_part(charges);
    if !rest.is_empty() {
        return None;
    }
    Some(
        epsilons
            .iter()
            .map(|e| (*e, total.as_ref().map_or(0.0, |t| t.delta(*e))))
            .collect(),
    )
}

/// Whether [`pld_of`] models the mechanism (without building its PLD).
fn models(m: &Mechanism) -> bool {
    matches!(
        m,
        Mechanism::SubsampledGaussian { .. }
            | Mechanism::Gaussian { .. }
            | Mechanism::GnMax { .. }
            | Mechanism::ThresholdedGaussian { .. }
            | Mechanism::DiscreteGaussian { .. }
            | Mechanism::ThresholdedDiscreteGaussian { .. }
            | Mechanism::DiscreteGnMax { .. }
    )
}

/// The shares of δ tried for the RDP part of a mixed history.
const SPLITS: [f64; 6] = [0.02, 0.05, 0.1, 0.2, 0.35, 0.5];

/// The split bound of a mixed history (module doc): the smallest over [`SPLITS`] of
/// ε_PLD(Gaussian-type part, δ − δ₂) + ε_RDP(the rest, δ₂); ∞ without both parts.
fn split_epsilon(pld: Option<Pld>, rest: &[Charge], orders: &[f64], delta: f64) -> f64 {
    let Some(pld) = pld else {
        return f64::INFINITY;
    };
    if rest.is_empty() {
        return f64::INFINITY;
    }
    let curve = charges_curve(rest, orders);
    SPLITS
        .iter()
        .map(|f| {
            let d2 = f * delta;
            pld.epsilon(delta - d2) + to_epsilon(orders, &curve, d2).epsilon
        })
        .fold(f64::INFINITY, f64::min)
}

/// ε at `delta` of a fixed `prior` history followed by charges that vary (a planner's
/// search over its noise), as the smaller of the two bounds [`compose`] reports for a
/// mixed history: RDP of everything, or PLD of the prior's Gaussian-type part at δ − δ₂
/// plus RDP of the rest at δ₂ (best of [`SPLITS`]). The prior's PLD is built once, so
/// each call of the returned closure costs an RDP conversion only. This is what lets a
/// pure-RDP plan (zCDP) follow a step RDP cannot bound, such as a thresholded Gaussian
/// (infinite RDP at every order).
pub fn after_prior<'a>(
    prior: &'a [Charge],
    orders: &'a [f64],
    delta: f64,
) -> impl Fn(&[Charge]) -> f64 + 'a {
    let (pld, rest) = pld_part(prior);
    // (δ₂, ε_PLD of the prior's modelled part at δ − δ₂) per split.
    let splits: Vec<(f64, f64)> = match &pld {
        Some(p) => SPLITS
            .iter()
            .map(|f| (f * delta, p.epsilon(delta - f * delta)))
            .collect(),
        None => vec![(delta, 0.0)],
    };
    move |next: &[Charge]| {
        let all: Vec<Charge> = prior.iter().chain(next).copied().collect();
        let rdp = to_epsilon(orders, &charges_curve(&all, orders), delta).epsilon;
        let others: Vec<Charge> = rest.iter().chain(next).copied().collect();
        let curve = charges_curve(&others, orders);
        splits
            .iter()
            .map(|(d2, e1)| e1 + to_epsilon(orders, &curve, *d2).epsilon)
            .fold(rdp, f64::min)
    }
}

/// ε of `charges` at `delta`: RDP on `orders` and PLD (or, for a history PLD cannot model
/// whole, PLD for its Gaussian-type part plus RDP for the rest), reporting the smallest.
pub fn compose(charges: &[Charge], orders: &[f64], delta: f64) -> Composed {
    let rdp = to_epsilon(orders, &charges_curve(charges, orders), delta).epsilon;
    let (pld, rest) = pld_part(charges);
    if rest.is_empty() {
        return Composed::smaller(rdp, Some(pld.map_or(0.0, |t| t.epsilon(delta))));
    }
    let split = split_epsilon(pld, &rest, orders, delta);
    if split < rdp {
        Composed {
            epsilon: split,
            by: Method::PldRdp,
            rdp,
            pld: None,
        }
    } else {
        Composed::smaller(rdp, None)
    }
}

impl Composed {
    /// The smaller of an RDP and an (optional) PLD figure for the same composition.
    pub fn smaller(rdp: f64, pld: Option<f64>) -> Self {
        match pld {
            Some(p) if p < rdp => Composed {
                epsilon: p,
                by: Method::Pld,
                rdp,
                pld,
            },
            _ => Composed {
                epsilon: rdp,
                by: Method::Rdp,
                rdp,
                pld,
            },
        }
    }
}

/// Whether `history` is covered by `plan`: for every mechanism, no more uses than the
/// plan has. Composition only grows with more charges, so a covered history spends at
/// most what the plan does, by either accountant.
///
/// ρ-zCDP charges are the exception: the plan's [`Mechanism::Zcdp`] charges form one
/// pool of ρ, and the history's zCDP charges, whatever their sizes, are covered while
/// their ρ sum stays within it. That is what an adaptive method such as AIM needs — it
/// picks each measurement's noise from earlier DP outputs — and it is sound by fully
/// adaptive composition of zCDP: a Rényi filter that stops before Σρᵢ exceeds ρ is
/// ρ-zCDP (Feldman & Zrnic 2021, Thm 3.1, at every order α), so the plan's Zcdp{ρ} figure
/// bounds the run. (The history's own figure equals it once the pool is spent.)
pub fn covered_by(history: &[Charge], plan: &[Charge]) -> bool {
    let (used, pool) = (zcdp_pool(history), zcdp_pool(plan));
    if used > pool * (1.0 + 1e-9) {
        return false;
    }
    history.iter().all(|h| {
        if matches!(h.mechanism, Mechanism::Zcdp { .. }) {
            return true;
        }
        let used: u64 = history
            .iter()
            .filter(|c| c.mechanism == h.mechanism)
            .map(|c| c.count)
            .sum();
        let allowed: u64 = plan
            .iter()
            .filter(|c| c.mechanism == h.mechanism)
            .map(|c| c.count)
            .sum();
        used <= allowed
    })
}

/// The ρ of the [`Mechanism::Zcdp`] charges among `charges`: one pool (see [`covered_by`]).
pub fn zcdp_pool(charges: &[Charge]) -> f64 {
    charges
        .iter()
        .map(|c| match c.mechanism {
            Mechanism::Zcdp { rho } => rho * c.count as f64,
            _ => 0.0,
        })
        .sum()
}

/// The first `fraction` of `plan`'s uses, in plan order (phases run in that order).
pub fn plan_prefix(plan: &[Charge], fraction: f64) -> Vec<Charge> {
    let total: u64 = plan.iter().map(|c| c.count).sum();
    let mut left = ((total as f64) * fraction.clamp(0.0, 1.0)).ceil() as u64;
    let mut out = Vec::new();
    for c in plan {
        if left == 0 {
            break;
        }
        let take = c.count.min(left);
        out.push(Charge {
            mechanism: c.mechanism,
            count: take,
        });
        left -= take;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::rdp::product_orders;

    #[test]
    fn a_zcdp_plan_covers_any_split_of_its_rho_and_no_more() {
        let z = |rho| Charge {
            mechanism: Mechanism::Zcdp { rho },
            count: 1,
        };
        let plan = [z(0.1)];
        assert!(covered_by(&[z(0.03), z(0.05), z(0.02)], &plan));
        assert!(!covered_by(&[z(0.03), z(0.05), z(0.021)], &plan));
        let g = Charge {
            mechanism: Mechanism::Gaussian {
                sensitivity: 1.0,
                std: 3.0,
            },
            count: 1,
        };
        // Other mechanisms still need their own entry in the plan.
        assert!(!covered_by(&[z(0.01), g], &plan));
        assert!(covered_by(&[z(0.01), g], &[z(0.1), g]));
    }

    #[test]
    fn gnmax_composes_as_the_gaussian_of_its_histogram() {
        // Noise σ per bin, one vote moved: the Gaussian mechanism with sensitivity √2.
        let one = |mechanism| {
            [Charge {
                mechanism,
                count: 2_000,
            }]
        };
        let gn = compose(
            &one(Mechanism::GnMax { sigma: 60.0 }),
            &product_orders(),
            1e-5,
        );
        let g = compose(
            &one(Mechanism::Gaussian {
                sensitivity: std::f64::consts::SQRT_2,
                std: 60.0,
            }),
            &product_orders(),
            1e-5,
        );
        assert!(gn.pld.is_some(), "PLD models GNMax");
        assert!((gn.rdp - g.rdp).abs() < 1e-9, "{gn:?} vs {g:?}");
        assert!((gn.epsilon - g.epsilon).abs() < 1e-9, "{gn:?} vs {g:?}");
        assert!(gn.epsilon <= gn.rdp);
    }

    fn sg(q: f64, sigma: f64, count: u64) -> Charge {
        Charge {
            mechanism: Mechanism::SubsampledGaussian { q, sigma },
            count,
        }
    }

    #[test]
    fn a_charge_whose_pld_cannot_be_built_is_never_dropped() {
        // A σ beyond what the exact sampler takes: no PLD of its own.
        let unbuildable = Charge {
            mechanism: Mechanism::DiscreteGaussian {
                std: crate::privacy::discrete::MAX_STD * 2.0,
            },
            count: 1,
        };
        let real = Charge {
            mechanism: Mechanism::DiscreteGaussian { std: 1.0 },
            count: 1,
        };
        assert_eq!(pld_epsilon(&[unbuildable], 1e-5), None);
        assert_eq!(pld_epsilon(&[real, unbuildable], 1e-5), None);
        assert!(pld_delta_curve(&[real, unbuildable], &[1.0]).is_none());
        assert!(pld_epsilon(&[real], 1e-5).is_some_and(|e| e > 0.0));
    }

    #[test]
    fn the_smaller_bound_is_reported_and_unmodelled_mechanisms_fall_back_to_rdp() {
        let o = product_orders();
        let c = compose(&[sg(0.01, 1.0, 1000)], &o, 1e-5);
        assert_eq!(c.by, Method::Pld);
        assert!(c.epsilon < c.rdp);
        let mixed = [
            sg(0.01, 1.0, 1000),
            Charge {
                mechanism: Mechanism::Exponential { epsilon: 0.1 },
                count: 1,
            },
        ];
        let m = compose(&mixed, &o, 1e-5);
        assert_eq!(m.pld, None);
        assert!(m.by != Method::Pld && m.epsilon <= m.rdp, "{m:?}");
        assert_eq!(compose(&[], &o, 1e-5).epsilon, 0.0);
    }

    /// A private category estimate (thresholded histogram: RDP ∞) then boosting's rounds
    /// (exponential: no PLD) compose only by the split bound, which is finite and above
    /// each part alone.
    #[test]
    fn a_category_estimate_then_boosting_composes_by_the_split() {
        let o = product_orders();
        let mixed = [
            Charge {
                mechanism: Mechanism::ThresholdedGaussian {
                    std: 20.0,
                    delta_inf: 1e-7,
                },
                count: 1,
            },
            sg(0.0157, 3.0, 2000),
            Charge {
                mechanism: Mechanism::Exponential { epsilon: 0.0027 },
                count: 400,
            },
        ];
        let m = compose(&mixed, &o, 3e-6);
        assert_eq!(m.by, Method::PldRdp, "{m:?}");
        assert!(m.rdp.is_infinite() && m.epsilon.is_finite(), "{m:?}");
        let first = compose(&mixed[..2], &o, 3e-6).epsilon;
        let last = compose(&mixed[2..], &o, 3e-6).epsilon;
        assert!(m.epsilon > first && m.epsilon > last && m.epsilon < first + 2.0 * last + 0.1);
    }

    #[test]
    fn coverage_counts_uses_per_mechanism() {
        let plan = [sg(0.01, 1.0, 100), sg(0.02, 2.0, 50)];
        assert!(covered_by(&[sg(0.01, 1.0, 100), sg(0.02, 2.0, 10)], &plan));
        assert!(covered_by(&[sg(0.01, 1.0, 60), sg(0.01, 1.0, 40)], &plan));
        assert!(!covered_by(&[sg(0.01, 1.0, 101)], &plan));
        assert!(!covered_by(&[sg(0.01, 1.1, 1)], &plan));
        assert_eq!(plan_prefix(&plan, 0.5), vec![sg(0.01, 1.0, 75)]);
        assert_eq!(
            plan_prefix(&plan, 0.8),
            vec![sg(0.01, 1.0, 100), sg(0.02, 2.0, 20)]
        );
        assert_eq!(plan_prefix(&plan, 1.0), plan.to_vec());
    }
}
