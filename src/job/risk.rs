//! What a guarantee means for one person in the data, for both front ends: the best
//! membership attack's trade-off curve (TPR against FPR) and a plain sentence, from a
//! run's (ε, δ) or from a released model's mechanisms by PLD; and the other way round, the
//! ε that an attack risk the user accepts allows. The arithmetic is
//! [`crate::privacy::tradeoff`]; this module only chooses the source and words it.

use super::PrivacyStatement;
use crate::privacy::tradeoff;

/// Where a curve's bound comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CurveSource {
    /// The (ε, δ) pair alone: valid for any (ε, δ)-DP release.
    EpsilonDelta,
    /// The model's privacy-loss distribution: δ(ε′) at every ε′, tighter.
    Pld,
}

/// The best attack's possible true-positive rate at each false-positive rate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RiskCurve {
    /// `None`: not private (ε = ∞).
    pub epsilon: Option<f64>,
    pub delta: f64,
    pub source: CurveSource,
    /// (FPR, largest TPR), FPR ascending from 0 to 1.
    pub points: Vec<(f64, f64)>,
    /// The best attacker's advantage max(TPR − FPR).
    pub max_advantage: f64,
    /// With a prior of ½: the best attacker's chance of being right, (1 + adv)/2.
    pub max_accuracy: f64,
    pub sentence: String,
    /// δ(ε′) from the PLD, for exact reads between the grid's points.
    #[serde(skip)]
    delta_curve: Option<Vec<(f64, f64)>>,
}

impl RiskCurve {
    /// From a run's (ε, δ): what any (ε, δ)-DP release allows.
    pub fn of_guarantee(epsilon: f64, delta: f64) -> Self {
        let points = tradeoff::fpr_grid()
            .into_iter()
            .map(|f| (f, tradeoff::tpr_bound(epsilon, delta, f)))
            .collect();
        let adv = tradeoff::max_advantage(epsilon, delta);
        Self {
            epsilon: epsilon.is_finite().then_some(epsilon),
            delta,
            source: CurveSource::EpsilonDelta,
            points,
            max_advantage: adv,
            max_accuracy: (1.0 + adv) / 2.0,
            sentence: tradeoff::sentence(epsilon, delta),
            delta_curve: None,
        }
    }

    /// From a released model's statement: by PLD over its mechanisms where the accountant
    /// models them all, else from its (ε, δ). `delta` overrides the statement's.
    pub fn of_statement(st: &PrivacyStatement, delta: Option<f64>) -> Self {
        let delta = delta.unwrap_or(st.delta);
        let eps = st.epsilon.unwrap_or(f64::INFINITY);
        let curve = if eps.is_finite() {
            crate::privacy::compose::pld_delta_curve(&st.mechanisms, &tradeoff::epsilon_grid(eps))
        } else {
            None
        };
        let Some(curve) = curve else {
            return Self::of_guarantee(eps, delta);
        };
        let points = tradeoff::fpr_grid()
            .into_iter()
            .map(|f| (f, tradeoff::tpr_bound_from_curve(&curve, f)))
            .collect();
        let adv = tradeoff::max_advantage_from_curve(&curve);
        Self {
            epsilon: Some(eps),
            delta,
            source: CurveSource::Pld,
            points,
            max_advantage: adv,
            max_accuracy: (1.0 + adv) / 2.0,
            sentence: format!(
                "An attacker who guesses whether a given person was in the data is right at most {:.1} % of the time, against 50 % by chance (from the privacy-loss distribution; (ε, δ) = ({eps:.3}, {delta}) alone allows {:.1} %).",
                50.0 * (1.0 + adv),
                100.0 * tradeoff::max_accuracy(eps, delta)
            ),
            delta_curve: Some(curve),
        }
    }

    /// The largest TPR any attack reaches at `fpr` (exact, not read off the grid).
    pub fn tpr_at(&self, fpr: f64) -> f64 {
        match &self.delta_curve {
            Some(c) => tradeoff::tpr_bound_from_curve(c, fpr),
            None => tradeoff::tpr_bound(self.epsilon.unwrap_or(f64::INFINITY), self.delta, fpr),
        }
    }

    /// Where the curve comes from, in words.
    pub fn source_words(&self) -> &'static str {
        match self.source {
            CurveSource::Pld => "the run's privacy-loss distribution",
            CurveSource::EpsilonDelta => "(ε, δ)",
        }
    }
}

/// An attack risk the user accepts, as the budget stated the other way round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AcceptedRisk {
    /// At most this advantage TPR − FPR (so accuracy (1 + a)/2 against a coin).
    Advantage(f64),
    /// At most this TPR at this FPR.
    TprAt { tpr: f64, fpr: f64 },
}

impl AcceptedRisk {
    /// The largest ε that guarantees the risk at `delta`, or why none does.
    pub fn epsilon(&self, delta: f64) -> Result<f64, String> {
        let (eps, what) = match *self {
            AcceptedRisk::Advantage(a) => (
                tradeoff::epsilon_for_advantage(a, delta),
                format!("an attacker's advantage (TPR − FPR) of at most {a}"),
            ),
            AcceptedRisk::TprAt { tpr, fpr } => (
                tradeoff::epsilon_for_tpr(tpr, fpr, delta),
                format!("a TPR of at most {tpr} at FPR {fpr}"),
            ),
        };
        eps.ok_or_else(|| {
            format!("{what} cannot be guaranteed at δ = {delta}: δ alone allows more (lower δ, or accept more)")
        })
    }

    /// The risk in words.
    pub fn describe(&self) -> String {
        match *self {
            AcceptedRisk::Advantage(a) => {
                format!("an attacker's advantage (TPR − FPR) of at most {a}")
            }
            AcceptedRisk::TprAt { tpr, fpr } => format!("a TPR of at most {tpr} at FPR {fpr}"),
        }
    }
}

/// One plain sentence about (ε, δ).
pub fn sentence(epsilon: f64, delta: f64) -> String {
    tradeoff::sentence(epsilon, delta)
}

/// The best attacker's accuracy against a coin's ½ under (ε, δ).
pub fn max_accuracy(epsilon: f64, delta: f64) -> f64 {
    tradeoff::max_accuracy(epsilon, delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accepted risk and the curve are inverses: at the ε an advantage allows, the
    /// curve's advantage is that advantage.
    #[test]
    fn accepted_advantage_round_trips_through_the_curve() {
        let delta = 1e-5;
        let eps = AcceptedRisk::Advantage(0.2).epsilon(delta).unwrap();
        let c = RiskCurve::of_guarantee(eps, delta);
        assert!((c.max_advantage - 0.2).abs() < 1e-9, "{}", c.max_advantage);
        let best = c.points.iter().map(|(f, t)| t - f).fold(0.0, f64::max);
        assert!(best <= 0.2 + 1e-9 && best > 0.19, "{best}");
        let eps = AcceptedRisk::TprAt {
            tpr: 0.1,
            fpr: 0.01,
        }
        .epsilon(delta)
        .unwrap();
        let c = RiskCurve::of_guarantee(eps, delta);
        assert!((c.tpr_at(0.01) - 0.1).abs() < 2e-3, "{}", c.tpr_at(0.01));
        assert!(AcceptedRisk::Advantage(1e-6).epsilon(delta).is_err());
    }

    /// A not-private statement has the certain attacker's curve.
    #[test]
    fn not_private_is_certainty() {
        let c = RiskCurve::of_guarantee(f64::INFINITY, 1e-5);
        assert_eq!(c.epsilon, None);
        assert!((c.tpr_at(0.01) - 1.0).abs() < 1e-12);
        assert_eq!(c.max_accuracy, 1.0);
    }
}
