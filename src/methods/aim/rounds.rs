//! One AIM round (see the module doc of [`super`] for its mechanisms and accounting):
//! the candidates the model can afford, the worst answered picked by the exponential
//! mechanism, its measurement, and the model grown and refit.

use super::super::counts::Counts;
use super::super::marginal::{charge, l1, measure, model_marginal};
use super::super::noise_floor;
use super::super::pgm::GraphicalModel;
use super::super::pgm::domain::Domain;
use super::super::pgm::estimate::{Estimate, Measurement};
use super::super::pgm::junction::JunctionTree;
use super::super::pgm::junction::model_cells;
use super::super::structural::Structural;
use super::super::{Result, TrainSetup};
use super::config::AimConfig;
use super::schedule::{Round, Schedule};
use super::wide::EXACT_COLUMNS;
use super::wide::PairBounds;
use crate::privacy::Mechanism;
use rayon::prelude::*;

/// What every round chooses from: the candidates with their workload weights, their
/// exact answers (private: only ever read through a mechanism), and the domain.
pub(super) struct Pool<'a> {
    pub all: &'a [(Vec<usize>, f64)],
    pub answers: &'a [&'a [f64]],
    pub sizes: &'a [usize],
    pub domain: &'a Domain,
}

/// The model the rounds grow: the measurements so far, the cliques it must hold, and
/// its fitted estimate.
pub(super) struct Grown {
    pub measured: Vec<Measurement>,
    pub cliques: Vec<Vec<usize>>,
    pub est: Estimate,
}

/// What a round measured, and the refit's loss.
pub(super) struct Measured {
    pub clique: Vec<usize>,
    pub loss: f64,
}

impl Grown {
    /// The figures a round's progress shows: the refit's loss and the model's size.
    pub(super) fn figures(&self, loss: f64, sizes: &[usize]) -> Vec<(String, f64)> {
        vec![
            ("fit loss".into(), loss),
            ("model cells".into(), self.est.tree.cells(sizes) as f64),
        ]
    }

    /// The model's start: every column's counts, measured with the 1-way share of ρ
    /// (charged first), and a first fit; the rules' columns share a node from the start,
    /// with their structural zeros.
    pub(super) fn start(
        s: &mut TrainSetup<'_>,
        (c, structural, domain): (&AimConfig, &Structural, &Domain),
        exact: &Counts,
        (sizes, n): (&[usize], f64),
        budget: &mut Schedule,
    ) -> Result<Self> {
        let private = c.common.private;
        let d = sizes.len();
        let oneway = budget.oneway(d);
        if private {
            charge(s, Mechanism::Zcdp { rho: oneway })?;
        }
        let sigma = budget.sigma;
        let measured: Vec<Measurement> = (0..d)
            .map(|a| measure(s.noise.rng(), exact.get(&[a])?, &[a], sigma, private))
            .collect::<Result<_>>()?;
        let (cliques, mut est) = structural.start(sizes, n);
        if private && c.noise_floor {
            let floor = noise_floor::zeros(&s.encoding.schema, domain, &measured);
            noise_floor::apply(&mut est, floor);
        }
        est.fit(&measured, c.round_iters.max(100));
        Ok(Grown {
            measured,
            cliques,
            est,
        })
    }

    /// Runs one round at `round` (`fraction`: the share of ρ spent so far, which sets the
    /// model's size limit): charges the selection, picks, charges the measurement,
    /// measures, and refits; anneals `budget` when the measurement barely moved the
    /// model. `None` when no candidate fits within the limit (nothing charged).
    pub(super) fn round(
        &mut self,
        s: &mut TrainSetup<'_>,
        pool: &Pool<'_>,
        c: &AimConfig,
        (round, fraction): (&Round, f64),
        budget: &mut Schedule,
    ) -> Result<Option<Measured>> {
        let private = c.common.private;
        let (all, sizes) = (pool.all, pool.sizes);
        let limit = (c.max_cells as f64 * fraction) as usize;
        let small = if sizes.len() > EXACT_COLUMNS {
            affordable_wide(all, &self.est, sizes, limit)
        } else {
            affordable(all, &self.est, &self.cliques, sizes, limit)
        };
        if small.is_empty() {
            return Ok(None);
        }
        // The model's answers: exact in a node, else from rows drawn from the model.
        let needs_rows = small
            .iter()
            .any(|i| self.est.tree.node_of(&all[*i].0).is_none());
        let rows = if needs_rows {
            let g =
                GraphicalModel::of_estimate(pool.domain.clone(), &self.est, &[], |_| Vec::new());
            g.sample_levels(c.estimate_rows.max(1), s.noise.rng())
        } else {
            Vec::new()
        };
        if private {
            charge(
                s,
                Mechanism::Zcdp {
                    rho: round.select_rho,
                },
            )?;
        }
        let pick = worst_answered(all, pool.answers, &small, &self.est, sizes, &rows, round, s);
        let chosen = small[pick];
        let cl = all[chosen].0.clone();
        if private {
            charge(
                s,
                Mechanism::Zcdp {
                    rho: round.measure_rho,
                },
            )?;
        }
        self.measured.push(measure(
            s.noise.rng(),
            pool.answers[chosen],
            &cl,
            round.sigma,
            private,
        )?);
        let before = model_marginal(&self.est, sizes, &cl, &rows);
        if self.est.tree.node_of(&cl).is_none() {
            self.cliques.push(cl.clone());
            self.est = Estimate::warm_from(&self.est, JunctionTree::build(sizes, &self.cliques));
        } else if !self.cliques.contains(&cl) {
            self.cliques.push(cl.clone());
        }
        let loss = self.est.fit(&self.measured, c.round_iters);
        let after = self.est.project(&cl).unwrap_or_default();
        if private && l1(&after, &before) <= round.bias(after.len()) {
            budget.anneal();
        }
        Ok(Some(Measured { clique: cl, loss }))
    }
}

/// The candidates (indices into `all`) the model can take now: those a junction-tree node
/// already holds, and those whose clique keeps the model within `limit` cells.
fn affordable(
    all: &[(Vec<usize>, f64)],
    est: &Estimate,
    cliques: &[Vec<usize>],
    sizes: &[usize],
    limit: usize,
) -> Vec<usize> {
    (0..all.len())
        .filter(|i| {
            let cl = &all[*i].0;
            est.tree.node_of(cl).is_some() || {
                let mut with = cliques.to_vec();
                with.push(cl.clone());
                model_cells(sizes, &with) <= limit
            }
        })
        .collect()
}

/// [`affordable`] for a wide table, whose candidates are columns and pairs: a pair is
/// taken when the bound of [`PairBounds::with_pair`] is within `limit` (linear in the
/// tree, where the exact test triangulates the whole graph per candidate).
fn affordable_wide(
    all: &[(Vec<usize>, f64)],
    est: &Estimate,
    sizes: &[usize],
    limit: usize,
) -> Vec<usize> {
    let bounds = PairBounds::new(&est.tree, sizes);
    (0..all.len())
        .into_par_iter()
        .filter(|i| match all[*i].0.as_slice() {
            cl if est.tree.node_of(cl).is_some() => true,
            [a, b] => bounds.with_pair(*a, *b) <= limit,
            _ => false,
        })
        .collect()
}

/// The position in `small` of the candidate the model answers worst, picked by the
/// exponential mechanism at the round's ε over the utilities wᵢ·(‖xᵢ − x̂ᵢ‖₁ − bias)
/// (sensitivity max wᵢ; see the module doc), or exactly without privacy. The round's
/// selection must be charged before this is called.
#[allow(clippy::too_many_arguments)]
fn worst_answered(
    all: &[(Vec<usize>, f64)],
    answers: &[&[f64]],
    small: &[usize],
    est: &Estimate,
    sizes: &[usize],
    rows: &[Vec<u32>],
    round: &Round,
    s: &mut TrainSetup<'_>,
) -> usize {
    let scores: Vec<f64> = small
        .par_iter()
        .map(|i| {
            let (cl, w) = &all[*i];
            let guess = model_marginal(est, sizes, cl, rows);
            w * (l1(answers[*i], &guess) - round.bias(answers[*i].len()))
        })
        .collect();
    let sensitivity = small
        .iter()
        .map(|i| all[*i].1)
        .fold(0.0f64, f64::max)
        .max(1e-12);
    if round.private {
        crate::privacy::exponential::select(&scores, round.eps, sensitivity, false, s.noise.rng())
    } else {
        (0..scores.len())
            .max_by(|i, j| scores[*i].total_cmp(&scores[*j]))
            .unwrap_or(0)
    }
}
