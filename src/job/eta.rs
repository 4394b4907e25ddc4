//! Time left in a run, read off its progress reports.
//!
//! Counting from the run's start puts the setup (reading, encoding, counting every
//! candidate marginal) into the rate of the first steps: AIM's first round showed "ETA
//! 130 s" for a run of 3 s. The rate is therefore measured from the first report of the
//! current phase, and nothing is promised until a second report of that phase has come.

use std::time::Instant;

/// Extrapolates the current phase's rate of progress.
#[derive(Debug, Clone, Default)]
pub struct Eta {
    phase: String,
    /// When the phase's first report came, and its fraction done then.
    first: Option<(Instant, f64)>,
}

impl Eta {
    /// Takes one progress report (`step` of `total` in `phase`) and returns the seconds the
    /// phase has left, `None` until the phase has moved since its first report.
    pub fn update(&mut self, phase: &str, step: u64, total: u64) -> Option<f64> {
        self.update_at(phase, step, total, Instant::now())
    }

    fn update_at(&mut self, phase: &str, step: u64, total: u64, now: Instant) -> Option<f64> {
        let frac = (step as f64 / total.max(1) as f64).clamp(0.0, 1.0);
        if self.phase != phase || self.first.is_none() {
            self.phase = phase.to_string();
            self.first = Some((now, frac));
            return None;
        }
        let (t0, f0) = self.first?;
        let moved = frac - f0;
        (moved > 0.0).then(|| now.duration_since(t0).as_secs_f64() * (1.0 - frac) / moved)
    }
}

/// "ETA 12 s" style text for `seconds` left, empty when unknown.
pub fn eta_text(seconds: Option<f64>) -> String {
    match seconds {
        Some(s) if s.is_finite() => format!(" · ETA {}", super::resources::duration(s)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The setup before the first report does not count, and a new phase starts afresh.
    #[test]
    fn the_rate_is_measured_from_the_phase_s_first_report() {
        let t = Instant::now();
        let mut eta = Eta::default();
        // The first report comes 10 s into the run, at 1 % done: no promise yet.
        assert_eq!(
            eta.update_at("rounds", 1, 100, t + Duration::from_secs(10)),
            None
        );
        // One more second and 10 % more: 89 % left at 10 % a second.
        let left = eta
            .update_at("rounds", 11, 100, t + Duration::from_secs(11))
            .unwrap();
        assert!((left - 8.9).abs() < 1e-9, "{left}");
        // No movement since the phase's first report: no promise.
        let mut still = Eta::default();
        assert_eq!(still.update_at("rounds", 1, 100, t), None);
        assert_eq!(
            still.update_at("rounds", 1, 100, t + Duration::from_secs(5)),
            None
        );
        assert_eq!(
            eta.update_at("final fit", 0, 4, t + Duration::from_secs(12)),
            None
        );
        let left = eta
            .update_at("final fit", 1, 4, t + Duration::from_secs(14))
            .unwrap();
        assert!((left - 6.0).abs() < 1e-9, "{left}");
    }
}
