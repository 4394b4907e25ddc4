//! How AIM spends its zCDP pool round by round (see the module doc of [`super`] for the
//! mechanisms): the first noise scales from the planned rounds, annealing, and the last
//! round that spends exactly what is left.

/// How AIM spends its zCDP pool ρ round by round: σ and ε start from the planned rounds
/// (90 % of ρ for measurements, 10 % for selections), halve and double when a measurement
/// barely moved the model (annealing), and the last round that fits spends exactly what is
/// left. A non-private run has no pool: it plays the planned rounds at σ = 1.
pub(super) struct Schedule {
    private: bool,
    rho: f64,
    rounds: u64,
    /// ρ spent so far (by a non-private run: the planned share of its rounds).
    used: f64,
    /// The measurement noise and the selection's ε of the next round.
    pub(super) sigma: f64,
    eps: f64,
}

/// One round's share of ρ.
pub(super) struct Round {
    /// The exponential mechanism's ε (∞ without privacy) and its zCDP cost ε²/8.
    pub(super) eps: f64,
    pub(super) select_rho: f64,
    /// The measurement's noise and its zCDP cost 1/(2σ²).
    pub(super) sigma: f64,
    pub(super) measure_rho: f64,
    pub(super) private: bool,
    /// This round spends what was left: the loop ends after it.
    pub(super) last: bool,
}

impl Round {
    /// The expected L1 size of this round's noise on `cells` cells (√(2/π)·σ per cell):
    /// what a candidate's error is corrected by, and how little a measurement must move
    /// the model for the budget to anneal.
    pub(super) fn bias(&self, cells: usize) -> f64 {
        if self.private {
            (2.0 / std::f64::consts::PI).sqrt() * self.sigma * cells as f64
        } else {
            0.0
        }
    }
}

impl Schedule {
    pub(super) fn new(private: bool, rho: f64, rounds: u64) -> Self {
        let sigma = if private {
            (rounds as f64 / (2.0 * 0.9 * rho)).sqrt()
        } else {
            1.0
        };
        Self {
            private,
            rho,
            rounds,
            used: 0.0,
            sigma,
            eps: (8.0 * 0.1 * rho / rounds as f64).sqrt(),
        }
    }

    /// The zCDP cost of measuring all `d` 1-way marginals at the first σ, counted as used.
    pub(super) fn oneway(&mut self, d: usize) -> f64 {
        let oneway = d as f64 / (2.0 * self.sigma * self.sigma);
        self.used += oneway;
        oneway
    }

    /// Round `t`'s budget, counted as used; `None` when nothing is left to spend.
    pub(super) fn next(&mut self, t: u64) -> Option<Round> {
        if !self.private {
            self.used = self.rho * t as f64 / self.rounds as f64;
            return Some(Round {
                eps: f64::INFINITY,
                select_rho: 0.0,
                sigma: 1.0,
                measure_rho: 0.0,
                private: false,
                last: t >= self.rounds,
            });
        }
        let per = 1.0 / (2.0 * self.sigma * self.sigma) + self.eps * self.eps / 8.0;
        let mut last = false;
        let (select_rho, measure_rho);
        if self.rho - self.used < 2.0 * per {
            let left = (self.rho - self.used).max(0.0);
            if left <= 0.0 {
                return None;
            }
            self.sigma = (1.0 / (2.0 * 0.9 * left)).sqrt();
            self.eps = (8.0 * 0.1 * left).sqrt();
            (select_rho, measure_rho) = (0.1 * left, left - 0.1 * left);
            last = true;
        } else {
            (select_rho, measure_rho) = (
                self.eps * self.eps / 8.0,
                1.0 / (2.0 * self.sigma * self.sigma),
            );
        }
        self.used += select_rho + measure_rho;
        Some(Round {
            eps: self.eps,
            select_rho,
            sigma: self.sigma,
            measure_rho,
            private: true,
            last,
        })
    }

    /// The share of the run done after round `t`: of ρ spent (private), else of the rounds.
    pub(super) fn fraction(&self, t: u64) -> f64 {
        if self.private && self.rho > 0.0 {
            (self.used / self.rho).min(1.0)
        } else {
            (t as f64 / self.rounds as f64).min(1.0)
        }
    }

    /// The progress bar's step: a private run ends when ρ is spent, usually long before
    /// the planned rounds (annealing halves σ), so its bar follows the share of ρ spent,
    /// which is what the remaining time depends on.
    pub(super) fn progress(&self, t: u64, fraction: f64) -> u64 {
        if self.private {
            ((fraction * self.rounds as f64).round() as u64).min(self.rounds)
        } else {
            t.min(self.rounds)
        }
    }

    /// A measurement barely moved the model: spend the rest in fewer, more accurate rounds.
    pub(super) fn anneal(&mut self) {
        self.sigma /= 2.0;
        self.eps *= 2.0;
    }

    /// What is left of ρ when the loop ends early (the run charges it before releasing).
    pub(super) fn unspent(&self) -> Option<f64> {
        (self.private && self.used < self.rho).then(|| self.rho - self.used)
    }
}
