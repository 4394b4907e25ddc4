//! AIM (McKenna, Mullins, Sheldon & Miklau, VLDB 2022): an adaptive, workload-aware loop
//! of marginal measurements. Each round picks, with the exponential mechanism, the
//! marginal the current model answers worst (weighted by how much of the workload it
//! touches), measures it with Gaussian noise, and refits the graphical model; the model's
//! junction tree may only grow within a size limit that rises as the budget is spent.
//!
//! Mechanisms and accounting on the run's zCDP budget ρ (the plan reserves one pool):
//! - all 1-way marginals first, each plus N(0, σ²), σ = √(T / (2·0.9·ρ)) for T = 16·d
//!   planned rounds: d/(2σ²);
//! - each round: a selection by the exponential mechanism at ε_t over the candidates'
//!   utilities wᵢ·(‖xᵢ − x̂ᵢ‖₁ − √(2/π)·σ·cellsᵢ) — a record moves ‖xᵢ − x̂ᵢ‖₁ by at most 1,
//!   so the sensitivity is max wᵢ — which is ε_t²/8-zCDP; then the chosen marginal plus
//!   N(0, σ_t²), 1/(2σ_t²). Each is one [`Mechanism::Zcdp`] charge made before it runs.
//! - budget annealing: when a measurement barely changed the model's answer (by less than
//!   the noise's expected L1 size), σ halves and ε doubles; when less than two more
//!   rounds fit, the last round spends exactly what is left.
//!
//! The noise of each round depends on earlier DP outputs, so the rounds are a fully
//! adaptive composition; the ρ sum never exceeds the plan's ρ, which bounds the run by
//! the zCDP Rényi filter ([`crate::privacy::compose::covered_by`]). A run stopped early
//! charges what is left of ρ before releasing, so its figure is the plan's, never a
//! data-dependent smaller one.
//!
//! Speed, and where it departs from the reference code (which takes hours on Adult): the
//! model's answer to a candidate that no junction-tree node holds is estimated from rows
//! sampled from the model (`estimate_rows` of them) instead of exact variable elimination.
//! That is post-processing of the model and changes only which candidate looks worst; the
//! noise in the selection's own ε_t dwarfs it. Fits between rounds are short and warm
//! started; the final fit is long.

use super::counts::count_all;
use super::marginal::{charge, release};
use super::mst::{planned_rho, zcdp_plan};
use super::pgm::estimate::{Estimate, Measurement};
use super::released::ReleasedModel;
use super::structural::Structural;
use super::{Flow, Footprint, Plan, Progress, Result, Synthesizer, TrainSetup};
use crate::privacy::{Budget, Charge, Mechanism};

mod config;
mod rounds;
mod schedule;
mod wide;
pub use config::{AimConfig, INFO};
use rounds::{Grown, Pool};
use schedule::*;
use wide::EXACT_COLUMNS;

pub struct Aim {
    config: AimConfig,
}

/// Most workload marginals before the degree falls to pairs.
const MAX_WORKLOAD: usize = 5_000;

/// Most pairs in a wide table's workload (an even spread when there are more): every pair
/// of up to 200 columns. Tables up to 100 columns have fewer than [`MAX_WORKLOAD`] pairs,
/// so this bound changes nothing there; past it a round answers each pair from the rows
/// drawn from the model, linear in their number.
const MAX_PAIRS: usize = 20_000;

/// All `k`-subsets of `0..d`, sorted.
fn subsets(d: usize, k: usize) -> Vec<Vec<usize>> {
    fn rec(start: usize, d: usize, k: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for i in start..d {
            cur.push(i);
            rec(i + 1, d, k, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    rec(0, d, k.min(d), &mut Vec::new(), &mut out);
    out
}

fn binomial(n: usize, k: usize) -> usize {
    (0..k.min(n)).fold(1usize, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

/// The workload's degree for `d` columns: `degree`, lowered while there would be more than
/// [`MAX_WORKLOAD`] marginals (never below pairs).
fn workload_degree(d: usize, degree: usize) -> usize {
    let mut k = degree.clamp(1, d.max(1));
    while k > 2 && binomial(d, k) > MAX_WORKLOAD {
        k -= 1;
    }
    k
}

/// How many candidates [`candidates`] gives, without listing them (the cost estimate
/// asks for tables of any width): every subset of up to k columns when the workload is
/// all k-subsets, else the columns and the spread of pairs kept.
pub fn candidate_count(d: usize, degree: usize) -> (usize, usize) {
    let k = workload_degree(d, degree);
    let all = binomial(d, k);
    if all > MAX_PAIRS {
        let step = all.div_ceil(MAX_PAIRS);
        return (k, d + all.div_ceil(step));
    }
    (k, (1..=k).map(|i| binomial(d, i)).sum())
}

/// The candidates (the workload's downward closure) with their weights: Σ over workload
/// marginals W of |C ∩ W| (AIM's `compile_workload`).
pub fn candidates(d: usize, degree: usize) -> (usize, Vec<(Vec<usize>, f64)>) {
    let k = workload_degree(d, degree);
    // Very wide tables: an evenly spread public subset of the pairs (chosen from the
    // column count alone, so it costs no privacy), taken as they are enumerated.
    let workload: Vec<Vec<usize>> = if binomial(d, k) > MAX_PAIRS {
        let step = binomial(d, k).div_ceil(MAX_PAIRS);
        (0..d)
            .flat_map(|a| (a + 1..d).map(move |b| vec![a, b]))
            .step_by(step)
            .collect()
    } else {
        subsets(d, k)
    };
    let mut out = Vec::new();
    let mut closure: Vec<Vec<usize>> = (0..d).map(|a| vec![a]).collect();
    for size in 2..=k {
        let mut more: Vec<Vec<usize>> = workload
            .iter()
            .flat_map(|w| {
                subsets(w.len(), size)
                    .into_iter()
                    .map(|ix| ix.iter().map(|i| w[*i]).collect::<Vec<usize>>())
            })
            .collect();
        more.sort();
        more.dedup();
        closure.extend(more);
    }
    {
        for c in closure {
            let w: usize = workload
                .iter()
                .map(|wl| c.iter().filter(|a| wl.binary_search(a).is_ok()).count())
                .sum();
            out.push((c, w as f64));
        }
    }
    (k, out)
}

impl Synthesizer for Aim {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn plan(&self, n: usize, budget: Budget, prior: &[Charge]) -> Result<Plan> {
        zcdp_plan(n, self.config.common.private, budget, prior, "AIM", |rho| {
            format!(
                "ρ = {rho:.4} zCDP spent adaptively: noisy counts of every column, then rounds that each pick the worst-answered group of up to {} columns (pairs on tables of more than 32 columns; exponential mechanism) and measure it with noise; a graphical model fitted to them (free)",
                self.config.degree
            )
        })
    }

    fn footprint(&self, n: usize, width: usize) -> Footprint {
        // The encoded width bounds the number of columns from above, and so does the most
        // columns a table may have.
        let columns = width.min(crate::data::csv::MAX_COLUMNS);
        self.footprint_for(n, columns, width)
    }

    fn footprint_for(&self, n: usize, columns: usize, _width: usize) -> Footprint {
        // Rounds: annealing ends the loop after about 1.5 rounds a column at ε ≈ 1 (Adult:
        // 26 rounds for 15 columns; 200 columns: 258). Each round draws `estimate_rows`
        // rows from the model (≈ 50 passes a value) and answers every candidate no node
        // holds from them (≈ 2.5 passes a row and candidate: the counting vectorises); on
        // tables up to [`EXACT_COLUMNS`] wide it also triangulates the model once per
        // candidate (≈ d³/4). Fits cost about 25 passes per cell and iteration (about 1.1
        // propagations a step) on models of at most 2^17 cells (the limit for memory).
        // Measured against this (2 cores): Adult `quick` 2.4–4.5 s (4 s estimated);
        // 200 columns × 10,000 rows `wide` 61 s (75 s), `quick` 300 s (6 min).
        let c = &self.config;
        let d = columns.max(1) as u64;
        let rounds = if c.rounds > 0 {
            c.rounds
        } else {
            (3 * d / 2).clamp(16, 16 * d)
        };
        let (k, w) = candidate_count(columns.max(1), c.degree);
        let w = w as u64;
        let cells = (c.max_cells as u64).min(1 << 17);
        let rows = c.estimate_rows as u64;
        let fits = rounds
            .saturating_mul(c.round_iters as u64)
            .saturating_mul(cells / 2)
            .saturating_add((c.iters as u64).saturating_mul(cells))
            .saturating_mul(25);
        let answers = rounds.saturating_mul(rows.saturating_mul(w.saturating_mul(5) / 2 + d * 50));
        let sizes = if columns <= EXACT_COLUMNS {
            rounds
                .saturating_mul(w)
                .saturating_mul(d.saturating_pow(3) / 4)
        } else {
            0
        };
        // The candidates' true counts, each within `max_cells`, at most 2^25 values.
        let truth = w
            .saturating_mul((c.bins as u64).saturating_pow(k as u32))
            .min(1 << 25);
        Footprint {
            params: 0,
            passes: fits
                .saturating_add(answers)
                .saturating_add(sizes)
                .saturating_add((n as u64).saturating_mul(w).saturating_mul(3)),
            batch: 1,
            steps: 0,
            widest: 0,
            // f64 values, counted in 4-byte units: the model's tables and their copies,
            // the rows drawn each round, the candidates' true counts.
            extra_values: 2 * (6 * c.max_cells as u64 + rows * d + truth),
            ..Default::default()
        }
    }

    fn train(&mut self, mut s: TrainSetup<'_>) -> Result<ReleasedModel> {
        let mut c = self.config.clone();
        let private = c.common.private;
        let mut domain = super::counts::domain(&s, c.bins)?;
        let n = s.records as f64;
        // At least d planned rounds, so the 1-way marginals take at most 90 % of ρ.
        let rounds = (if c.rounds > 0 {
            c.rounds
        } else {
            16 * domain.len() as u64
        })
        .max(domain.len() as u64);
        if private && c.noise_floor {
            let sigma = Schedule::new(true, planned_rho(s.plan), rounds).sigma;
            domain = fewer_bins(&s, &mut c, (n, sigma))?.unwrap_or(domain);
        }
        let sizes = domain.sizes();
        let (all, exact) = counted_candidates(&mut s, &c, &domain)?;
        let answers: Vec<&[f64]> = all
            .iter()
            .map(|(cl, _)| exact.get(cl))
            .collect::<Result<_>>()?;
        let mut budget = Schedule::new(private, planned_rho(s.plan), rounds);

        let structural = Structural::of(&s.encoding.schema, &domain)?;
        let mut grown = Grown::start(
            &mut s,
            (&c, &structural, &domain),
            &exact,
            (&sizes, n),
            &mut budget,
        )?;
        let sigma = budget.sigma;
        let mut p = Progress::at(&s, private, "measuring marginals", (0, rounds), vec![]);
        p.note = Some(format!("every column's counts (σ = {sigma:.1})"));
        let mut stopped = (s.observer)(p) == Flow::Stop;

        let pool = Pool {
            all: &all,
            answers: &answers,
            sizes: &sizes,
            domain: &domain,
        };
        let mut t = 0u64;
        while !stopped {
            t += 1;
            let Some(round) = budget.next(t) else {
                break;
            };
            let fraction = budget.fraction(t);
            let Some(m) = grown.round(&mut s, &pool, &c, (&round, fraction), &mut budget)? else {
                break;
            };
            let mut p = Progress::at(
                &s,
                private,
                "measuring marginals",
                (budget.progress(t, fraction), rounds),
                grown.figures(m.loss, &sizes),
            );
            p.note = Some(format!(
                "round {t}: {} (σ = {:.1})",
                domain.describe(&m.clique),
                round.sigma
            ));
            if (s.observer)(p) == Flow::Stop {
                stopped = true;
                break;
            }
            if round.last {
                break;
            }
        }
        // A run stopped early (or out of candidates) settles the whole pool: its figure
        // is the plan's, never one that depends on where the data made it stop.
        if let Some(rest) = budget.unspent() {
            charge(&mut s, Mechanism::Zcdp { rho: rest })?;
        }
        finish(s, &c, (grown, structural), domain, (stopped, rounds))
    }
}

/// The fewest bins a continuous column is cut into on a small table.
const FEWEST_BINS: usize = 8;

/// How many bins a continuous column gets on `n` rows when the first counts carry noise of
/// std `sigma`: at most `bins`, and few enough that rows spread evenly over them would
/// hold twice the noise each (at least [`FEWEST_BINS`]). A hundred bins on 753 rows at
/// ε = 1 (σ ≈ 43) leave every bin under the noise, so the column's one-way counts cannot
/// tell where its rows lie and its bins fill with noise; eight can. The row count is
/// treated as public, as everywhere in the plan, and the σ is the plan's: the choice reads
/// nothing else.
fn bins_for(bins: usize, n: f64, sigma: f64) -> usize {
    let fit = (n / (2.0 * sigma)).floor();
    if !(fit.is_finite() && fit < bins as f64) {
        return bins;
    }
    (fit as usize).clamp(FEWEST_BINS.min(bins), bins)
}

/// Sets `c.bins` to [`bins_for`] the table's rows and the first counts' σ, and returns the
/// domain rebuilt on them when that changes it.
fn fewer_bins(
    s: &TrainSetup<'_>,
    c: &mut AimConfig,
    (n, sigma): (f64, f64),
) -> Result<Option<super::pgm::domain::Domain>> {
    let bins = bins_for(c.bins, n, sigma);
    if bins == c.bins {
        return Ok(None);
    }
    c.bins = bins;
    super::counts::domain(s, c.bins).map(Some)
}

/// The last steps once the rounds end: the one-to-one pairs kept and every `->` map fixed,
/// the final fit (none for a stopped run), and the release.
fn finish(
    mut s: TrainSetup<'_>,
    c: &AimConfig,
    (grown, mut structural): (Grown, Structural),
    domain: super::pgm::domain::Domain,
    (stopped, rounds): (bool, u64),
) -> Result<ReleasedModel> {
    let private = c.common.private;
    let Grown {
        measured, mut est, ..
    } = grown;
    let iters = if stopped { 0 } else { c.iters };
    // Every table measured now speaks for each column's reach, not the first one alone.
    let floor = (private && c.noise_floor)
        .then(|| super::noise_floor::zeros(&s.encoding.schema, &domain, &measured));
    let before = (structural.clone(), est.clone());
    let mut pairs = Vec::new();
    // Tried with the floor and the one-to-one maps, then without the maps, then without
    // the floor: post-processing must never leave a node with no mass.
    for attempt in 0..3 {
        (structural, est) = before.clone();
        pairs = if c.one_to_one && !stopped && attempt == 0 {
            structural.keep_one_to_one(&measured, &domain.sizes())
        } else {
            Vec::new()
        };
        match &floor {
            Some(f) if attempt < 2 => _ = super::noise_floor::apply(&mut est, f.clone()),
            Some(_) => super::noise_floor::lift(&mut est, structural.zeros()),
            None => {}
        }
        structural.fix_determined(&mut est, &domain);
        if super::marginal::has_mass(&est) {
            break;
        }
    }
    let note = super::one_to_one::note(&domain, &pairs);
    final_fit(
        &mut s,
        (&mut est, &measured),
        iters,
        (rounds, note),
        private,
    );
    if !super::marginal::has_mass(&est) {
        return Err(super::marginal::massless());
    }
    let config = serde_json::to_value(c).unwrap_or_default();
    let id = (INFO.id, c.common.preset.as_str());
    Ok(release(
        &s,
        private,
        id,
        config,
        domain,
        &est,
        (&measured, &pairs),
    ))
}

/// The candidates the model could ever hold (the others are dropped up front), with their
/// workload weights, and the exact counts of every column and every candidate, in one
/// pass over the rows (or one batch of engine queries).
fn counted_candidates(
    s: &mut TrainSetup<'_>,
    c: &AimConfig,
    domain: &super::pgm::domain::Domain,
) -> Result<(Vec<(Vec<usize>, f64)>, super::counts::Counts)> {
    let d = domain.sizes().len();
    let (_, all) = candidates(d, c.degree);
    let target = target_attribute(domain, c)?;
    let all: Vec<(Vec<usize>, f64)> = all
        .into_iter()
        .filter(|(cl, _)| domain.cells(cl) <= c.max_cells)
        .collect();
    let all = weigh_target(all, target, c.target_weight);
    let sets: Vec<Vec<usize>> = (0..d)
        .map(|a| vec![a])
        .chain(all.iter().map(|(cl, _)| cl.clone()))
        .collect();
    let exact = count_all(s, c.common.private, domain, &sets)?;
    Ok((all, exact))
}

/// The attribute of the column the user will predict (the `target` setting), checked.
fn target_attribute(domain: &super::pgm::domain::Domain, c: &AimConfig) -> Result<Option<usize>> {
    let Some(t) = c.target.as_deref() else {
        return Ok(None);
    };
    if !(c.target_weight.is_finite() && c.target_weight > 0.0) {
        return Err(super::MethodError::Usage(format!(
            "target_weight must be a positive number, got {}",
            c.target_weight
        )));
    }
    let names: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
    match names.iter().position(|a| *a == t) {
        Some(i) => Ok(Some(i)),
        None => Err(super::MethodError::Usage(format!(
            "the target column '{t}' is not among the columns AIM models ({})",
            names.join(", ")
        ))),
    }
}

/// The workload weights with every candidate that holds `target` weighing `weight` times
/// more: the rounds then measure the groups the predictions will rest on. Public choices
/// only, and the selection's sensitivity is the largest weight (read from the list), so
/// the accounting is unchanged.
fn weigh_target(
    all: Vec<(Vec<usize>, f64)>,
    target: Option<usize>,
    weight: f64,
) -> Vec<(Vec<usize>, f64)> {
    all.into_iter()
        .map(|(cl, w)| match target {
            Some(t) if cl.contains(&t) => (cl, w * weight),
            _ => (cl, w),
        })
        .collect()
}

/// The long final fit of the model to every measurement (post-processing), in chunks so
/// the progress bar moves and a stop is heard.
fn final_fit(
    s: &mut TrainSetup<'_>,
    (est, measured): (&mut Estimate, &[Measurement]),
    iters: usize,
    (rounds, note): (u64, Option<String>),
    private: bool,
) {
    let mut left = iters;
    while left > 0 {
        let k = left.min(250);
        let loss = est.fit(measured, k);
        left -= k;
        let mut p = Progress::at(
            s,
            private,
            "final fit",
            (rounds, rounds),
            vec![("fit loss".into(), loss)],
        );
        p.note = note.clone();
        if (s.observer)(p) == Flow::Stop {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_table_gets_bins_its_noise_can_tell_apart() {
        // The labour survey at ε = 1: 753 rows, σ ≈ 43.
        assert_eq!(bins_for(100, 753.0, 43.0), 8);
        // Adult at ε = 1 keeps its hundred bins.
        assert_eq!(bins_for(100, 32_561.0, 104.0), 100);
        assert_eq!(bins_for(100, 3_000.0, 50.0), 30);
        assert_eq!(bins_for(4, 10.0, 50.0), 4);
        assert_eq!(bins_for(100, 1e6, 0.0), 100);
    }

    #[test]
    fn candidates_are_the_downward_closure_weighted_by_overlap() {
        let (k, c) = candidates(4, 3);
        assert_eq!(k, 3);
        // 4 singles, 6 pairs, 4 triples.
        assert_eq!(c.len(), 14);
        let w = |cl: &[usize]| c.iter().find(|x| x.0 == cl).unwrap().1;
        // Attribute 0 is in 3 of the 4 triples; the pair (0,1) shares 2 with two triples
        // and 1 with the other two.
        assert_eq!(w(&[0]), 3.0);
        assert_eq!(w(&[0, 1]), 6.0);
        assert_eq!(w(&[0, 1, 2]), 3.0 + 2.0 + 2.0 + 2.0);
        // Too many triples: pairs.
        let (k, _) = candidates(60, 3);
        assert_eq!(k, 2);
        // Too many pairs: a spread-out subset of them, every column still a candidate.
        let (k, c) = candidates(400, 3);
        assert_eq!(k, 2);
        assert!(c.len() <= 400 + MAX_PAIRS, "{}", c.len());
        assert_eq!(c.iter().filter(|x| x.0.len() == 1).count(), 400);
    }

    /// Naming a target weighs exactly the candidates that hold it more.
    #[test]
    fn a_target_weighs_the_groups_that_hold_it() {
        let (_, c) = candidates(4, 3);
        let w = weigh_target(c.clone(), Some(2), 10.0);
        for ((cl, before), (_, after)) in c.iter().zip(&w) {
            let expect = if cl.contains(&2) {
                before * 10.0
            } else {
                *before
            };
            assert_eq!(*after, expect, "{cl:?}");
        }
        assert_eq!(weigh_target(c.clone(), None, 10.0), c);
    }

    /// The count the cost estimate uses is the list's length, for narrow, middling and
    /// wide tables, without listing 200 million pairs for a 20,000-column one.
    #[test]
    fn the_candidate_count_is_the_list_s_length() {
        for (d, degree) in [
            (1, 3),
            (4, 3),
            (15, 3),
            (32, 3),
            (33, 3),
            (60, 2),
            (100, 3),
            (150, 3),
            (400, 2),
            (40, 4),
        ] {
            let (k, list) = candidates(d, degree);
            assert_eq!(
                candidate_count(d, degree),
                (k, list.len()),
                "d {d}, degree {degree}"
            );
        }
        let (k, n) = candidate_count(20_000, 3);
        assert_eq!(k, 2);
        assert!(n <= 20_000 + MAX_PAIRS, "{n}");
    }
}
