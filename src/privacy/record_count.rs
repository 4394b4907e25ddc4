//! A record count released with exact discrete Gaussian noise, for runs whose number of
//! records must not be read off the rows: the parents and the children of a linked pair.
//!
//! A marginal method scales its model to the record count it is given. When that count
//! is the file's exact one, a neighbour with one more unit gets a model scaled to one
//! more, and the method's scores move by more than its declared sensitivity (the
//! neighbour harness shows it). Released with noise, the count is a DP output, and
//! everything scaled by it is post-processing.
//!
//! **Sensitivity:** one unit changes the count by at most `sensitivity` (1 for a table
//! whose unit is a row; K for a child table whose unit holds up to K rows). **Accounting:**
//! N_ℤ(0, σ²) with σ = Δ/√(2ρ) is ρ-zCDP (Canonne, Kamath & Steinke 2020), charged as
//! [`Mechanism::Zcdp`] `{ rho }` by the caller's plan.

use rand::RngCore;

use super::discrete::DiscreteGaussian;

/// σ of a count with sensitivity `sensitivity` released at ρ-zCDP.
pub fn count_std(sensitivity: f64, rho: f64) -> f64 {
    sensitivity / (2.0 * rho).sqrt()
}

/// `count` plus N_ℤ(0, σ²), at least 1 (a count a method can plan with); `None` when ρ
/// or the sensitivity is not positive and finite.
pub fn release_count(count: u64, sensitivity: f64, rho: f64, rng: &mut dyn RngCore) -> Option<u64> {
    use super::probe::{Norm, Value, noise_call};
    let g = DiscreteGaussian::new(count_std(sensitivity, rho))?;
    if !(sensitivity > 0.0 && sensitivity.is_finite()) {
        return None;
    }
    let out: usize = noise_call(
        "record-count",
        (Norm::L2, sensitivity),
        || super::mechanism::Mechanism::Gaussian {
            sensitivity,
            std: g.variance().sqrt(),
        },
        || Value::Dense(vec![count as f64]),
        || g.release(count, rng).max(1) as usize,
    );
    Some(out as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_noise_has_the_planned_spread() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let rho = 0.0005;
        let std = count_std(5.0, rho);
        assert!((std - 5.0 / 0.001f64.sqrt()).abs() < 1e-9);
        let draws: Vec<f64> = (0..4000)
            .map(|_| release_count(100_000, 5.0, rho, &mut rng).unwrap() as f64 - 100_000.0)
            .collect();
        let var = draws.iter().map(|d| d * d).sum::<f64>() / draws.len() as f64;
        assert!(
            (var.sqrt() / std - 1.0).abs() < 0.05,
            "{} vs {std}",
            var.sqrt()
        );
        assert_eq!(release_count(0, 1.0, 1e9, &mut rng), Some(1));
        assert!(release_count(10, 0.0, 1.0, &mut rng).is_none());
        assert!(release_count(10, 1.0, 0.0, &mut rng).is_none());
    }
}
