//! MST (McKenna, Miklau & Sheldon 2021, winner of the NIST 2018 challenge): measure every
//! 1-way marginal, choose a maximum spanning tree of attribute pairs with the exponential
//! mechanism, measure the tree's 2-way marginals, fit a graphical model to all of them
//! (Private-PGM, exact on a tree) and sample rows from it.
//!
//! Mechanisms and accounting, on the run's zCDP budget ρ (calibrated from (ε, δ) and any
//! earlier charges, [`super::marginal::rho_for`]), in three equal thirds:
//! 1. the d 1-way count marginals, each plus N(0, σ₁²) per cell: a record sits in one cell
//!    of each, L2 sensitivity 1 each, so d/(2σ₁²) = ρ/3;
//! 2. d − 1 rounds of the exponential mechanism, each over the pairs that join two
//!    components of the tree so far, with utility the L1 distance between the pair's
//!    counts and what the 1-way estimate predicts for it (sensitivity 1: one record moves
//!    one cell of the pair's counts by one), at ε₀ with (d − 1)·ε₀²/8 = ρ/3;
//! 3. the d − 1 chosen pairs' count marginals plus N(0, σ₂²): (d − 1)/(2σ₂²) = ρ/3.
//!
//! Each third is one [`Mechanism::Zcdp`] charge of ρ/3, made before its step reads a row.
//! The plan reserves ρ; the model file lists every measured clique and its σ. Fitting and
//! sampling read only the noisy measurements: post-processing.
//!
//! Departures from the reference code, and why: continuous columns are cut into public
//! bins from the schema's bounds (the reference needs pre-discretised data); rows are drawn
//! by ancestral sampling from the fitted model (the reference rounds expected counts, which
//! costs about 2 points of accuracy on Adult); the reference's merging of rare categories
//! is not done (the bins are public, so nothing is gained in privacy by it).

use super::counts::{Counts, count_all};
use super::marginal::{charge, l1, measure, release, rho_for};
use super::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};
use super::pgm::domain::Domain;
use super::pgm::estimate::{Estimate, Measurement};
use super::pgm::junction::JunctionTree;
use super::released::ReleasedModel;
use super::structural::Structural;
use super::{Flow, Footprint, Plan, Progress, Result, Synthesizer, TrainSetup, plan_preamble};
use crate::privacy::{Budget, Charge, Mechanism};

/// MST settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MstConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
    /// Levels a continuous column is cut into (integer columns whose range fits keep one
    /// level per whole number).
    pub bins: usize,
    /// Mirror-descent iterations of the final fit.
    pub iters: usize,
    /// Keep column pairs whose noisy counts are one-to-one (education and its number) as
    /// one-to-one maps in the model: post-processing, no charge (`one_to_one.rs`).
    #[serde(default = "keep_pairs")]
    pub one_to_one: bool,
    /// Close the bins of a column's empty tails and an empty blank slot where the noisy
    /// one-way counts do not clear the noise (`noise_floor.rs`): post-processing, no charge.
    /// Off, noise in empty cells becomes rows (a wide public bound smears the column).
    #[serde(default = "keep_pairs")]
    pub noise_floor: bool,
}

fn keep_pairs() -> bool {
    true
}

impl MstConfig {
    fn base() -> Self {
        Self {
            common: Common::private(),
            bins: 32,
            iters: 1_000,
            one_to_one: true,
            noise_floor: true,
        }
    }

    // The reference code's 5,000 iterations of Private-PGM.
    fn paper() -> Self {
        Self {
            iters: 5_000,
            ..Self::base()
        }
    }

    fn tiny() -> Self {
        Self {
            bins: 8,
            iters: 200,
            ..Self::base()
        }
    }
}

/// Every preset, the default first.
const PRESETS: [PresetOf<MstConfig>; 3] = [
    PresetOf {
        name: "quick",
        doc: "32 bins per continuous column, 1,000 fitting iterations: seconds on Adult",
        settings: MstConfig::base,
    },
    PresetOf {
        name: "paper",
        doc: "the reference code's 5,000 fitting iterations",
        settings: MstConfig::paper,
    },
    PresetOf {
        name: "tiny",
        doc: "8 bins, 200 iterations: for tests and smoke checks",
        settings: MstConfig::tiny,
    },
];

impl MethodConfig for MstConfig {
    const PRESETS: &'static [PresetOf<Self>] = &PRESETS;

    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn into_method(self) -> Box<dyn Synthesizer + Send> {
        Box::new(Mst { config: self })
    }
}

/// The registry entry of MST.
pub const INFO: MethodInfo = MethodInfo {
    id: "mst",
    title: "MST",
    sentence: "Measures every column's counts and the most telling pairs of columns (a tree of them) with noise, then fits a probability model to those counts and draws rows from it: fast and strong on tables of categories.",
    pick_when: "Better than AIM when speed matters most: large tables of categories, where a tree of pairs is enough.",
    paper: "McKenna, Miklau & Sheldon, Winning the NIST Contest: A scalable and general approach to differentially private synthetic data (2021)",
    url: "https://arxiv.org/abs/2108.04978",
    kinds: &[DataKind::Table],
    private: true,
    critic: false,
    streams: true,
    presets: &listed(&PRESETS),
    settings: settings::<MstConfig>,
    build: build::<MstConfig>,
};

/// The largest 2-way marginal MST measures (cells): beyond it the counts are mostly
/// noise and the table alone takes hundreds of megabytes.
const MAX_PAIR_CELLS: usize = 1 << 22;

pub struct Mst {
    config: MstConfig,
}

/// The zCDP budget a reserved plan holds (its one Zcdp charge), less a hair: the
/// charges that split it add up in floating point, and their sum must never round above
/// the reserved ρ (and so above the budget's ε).
pub(crate) fn planned_rho(plan: &Plan) -> f64 {
    let rho: f64 = plan
        .charges
        .iter()
        .map(|c| match c.mechanism {
            Mechanism::Zcdp { rho } => rho * c.count as f64,
            _ => 0.0,
        })
        .sum();
    rho * (1.0 - 1e-9)
}

/// The plan of a marginal method: one pool of ρ-zCDP, as large as the budget allows.
pub(crate) fn zcdp_plan(
    n: usize,
    private: bool,
    budget: Budget,
    prior: &[Charge],
    what: &str,
    describe: impl Fn(f64) -> String,
) -> Result<Plan> {
    if let Some(p) = plan_preamble(n, private, budget)? {
        return Ok(p);
    }
    let make = |rho| {
        vec![Charge {
            mechanism: Mechanism::Zcdp { rho },
            count: 1,
        }]
    };
    let (rho, charges) = rho_for(prior, make, budget, what)?;
    let all: Vec<Charge> = prior.iter().chain(&charges).copied().collect();
    let whole = crate::privacy::compose::compose(
        &all,
        &crate::privacy::rdp::product_orders(),
        budget.delta,
    );
    Ok(Plan {
        charges,
        epsilon: whole.epsilon,
        accountant: whole.by.name(),
        summary: describe(rho),
    })
}

/// Every count the run may measure: each column, and each pair small enough to measure
/// usefully (chosen by its public size alone).
fn candidate_sets(sizes: &[usize]) -> Vec<Vec<usize>> {
    let d = sizes.len();
    let mut sets: Vec<Vec<usize>> = (0..d).map(|a| vec![a]).collect();
    for a in 0..d {
        for b in a + 1..d {
            if sizes[a].saturating_mul(sizes[b]) <= MAX_PAIR_CELLS {
                sets.push(vec![a, b]);
            }
        }
    }
    sets
}

/// The Gaussian noise's σ on each of `k` counts measured together at zCDP `rho`
/// (each count has L2 sensitivity 1, so the k of them ρ = k/(2σ²)). Non-private: no
/// noise; σ = 1 only weighs the measurements in the fit.
fn noise_scale(private: bool, k: usize, rho: f64) -> f64 {
    if private {
        (k as f64 / (2.0 * rho)).sqrt()
    } else {
        1.0
    }
}

/// Charges one of the run's three ρ shares to a private run's ledger.
fn spend(s: &mut TrainSetup<'_>, private: bool, rho: f64) -> Result<()> {
    if private {
        charge(s, Mechanism::Zcdp { rho })?;
    }
    Ok(())
}

/// The pairs' columns named, for the progress note.
fn describe_all(domain: &Domain, edges: &[Vec<usize>]) -> String {
    edges
        .iter()
        .map(|e| domain.describe(e))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Synthesizer for Mst {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn plan(&self, n: usize, budget: Budget, prior: &[Charge]) -> Result<Plan> {
        zcdp_plan(n, self.config.common.private, budget, prior, "MST", |rho| {
            format!(
                "ρ = {rho:.4} zCDP in three thirds: noisy counts of every column, a tree of column pairs chosen by the exponential mechanism, noisy counts of the tree's pairs; then a graphical model fitted to them ({} iterations, free)",
                self.config.iters
            )
        })
    }

    fn footprint(&self, n: usize, width: usize) -> Footprint {
        // A tree of pairs of up to `bins` levels each (the encoded width bounds the number
        // of columns from above); a fit's iteration costs about 50 passes per cell, and
        // counting every pair reads the rows d²/2 times.
        let d = width as u64;
        let b = self.config.bins as u64;
        let cells = d.saturating_mul(b * b);
        Footprint {
            params: 0,
            passes: (self.config.iters as u64)
                .saturating_mul(cells)
                .saturating_mul(50)
                .saturating_add((n as u64).saturating_mul(d.saturating_pow(2) / 2)),
            batch: 1,
            steps: 0,
            widest: 0,
            extra_values: 2 * 8 * cells,
            ..Default::default()
        }
    }

    fn train(&mut self, mut s: TrainSetup<'_>) -> Result<ReleasedModel> {
        let c = self.config.clone();
        let private = c.common.private;
        let domain = super::counts::domain(&s, c.bins)?;
        let sizes = domain.sizes();
        let d = sizes.len();
        let exact = count_all(&mut s, private, &domain, &candidate_sets(&sizes))?;
        let n = s.records as f64;
        let third = planned_rho(s.plan) / 3.0;
        let sigma = |k: usize| noise_scale(private, k, third);
        let total_steps = 3 + c.iters as u64 / 100;
        let report = |s: &mut TrainSetup<'_>, phase: &str, step: u64, losses, note| {
            let mut p = Progress::at(s, private, phase, (step, total_steps), losses);
            p.note = note;
            (s.observer)(p)
        };

        // 1. Every column's counts.
        spend(&mut s, private, third)?;
        let s1 = sigma(d);
        let mut measured: Vec<Measurement> = (0..d)
            .map(|a| measure(s.noise.rng(), exact.get(&[a])?, &[a], s1, private))
            .collect::<Result<_>>()?;
        let structural = Structural::of(&s.encoding.schema, &domain)?;
        let (singles, mut est) = structural.start(&sizes, n);
        if private && c.noise_floor {
            let floor = super::noise_floor::zeros(&s.encoding.schema, &domain, &measured);
            super::noise_floor::apply(&mut est, floor);
        }
        est.fit(&measured, 200);
        let stopped = report(
            &mut s,
            "measured every column",
            1,
            vec![],
            Some(format!("every column's counts (σ = {s1:.1})")),
        ) == Flow::Stop;

        // 2. A spanning tree of pairs, chosen by the exponential mechanism.
        let mut edges: Vec<Vec<usize>> = Vec::new();
        if d > 1 && !stopped {
            spend(&mut s, private, third)?;
            let eps0 = (8.0 * third / (d - 1) as f64).sqrt();
            let pairs = pair_errors(&exact, &sizes, &est, n)?;
            edges = spanning_tree(&pairs, d, eps0, private, &mut s);
        }
        let stopped = stopped
            || report(
                &mut s,
                &format!("chose {} pairs", edges.len()),
                2,
                vec![("pairs".into(), edges.len() as f64)],
                Some(format!(
                    "the tree's pairs: {}",
                    describe_all(&domain, &edges)
                )),
            ) == Flow::Stop;

        // 3. The tree's pairs.
        if !edges.is_empty() && !stopped {
            spend(&mut s, private, third)?;
            let s2 = sigma(edges.len());
            for e in &edges {
                measured.push(measure(s.noise.rng(), exact.get(e)?, e, s2, private)?);
            }
            let mut cliques = singles.clone();
            cliques.extend(edges.iter().cloned());
            est = Estimate::warm_from(&est, JunctionTree::build(&sizes, &cliques));
            fit(&mut s, &mut est, &measured, c.iters, total_steps, private);
        }
        finish(
            s,
            &c,
            (structural, est, &measured),
            domain,
            (stopped, total_steps),
        )
    }
}

/// The last steps: the one-to-one pairs kept and every `->` map fixed with a short refit
/// (none for a stopped run), and the release.
fn finish(
    s: TrainSetup<'_>,
    c: &MstConfig,
    (mut structural, mut est, measured): (Structural, Estimate, &[Measurement]),
    domain: Domain,
    (stopped, total_steps): (bool, u64),
) -> Result<ReleasedModel> {
    let private = c.common.private;
    let mut pairs = Vec::new();
    let floor = (private && c.noise_floor)
        .then(|| super::noise_floor::zeros(&s.encoding.schema, &domain, measured));
    let before = (structural.clone(), est.clone());
    // Tried with the floor and the one-to-one maps, then without the maps, then without
    // the floor: post-processing must never leave a node with no mass.
    for attempt in 0..3 {
        (structural, est) = before.clone();
        match &floor {
            Some(f) if attempt < 2 => _ = super::noise_floor::apply(&mut est, f.clone()),
            Some(_) => super::noise_floor::lift(&mut est, structural.zeros()),
            None => {}
        }
        pairs = if c.one_to_one && !stopped && attempt == 0 {
            structural.keep_one_to_one(measured, &domain.sizes())
        } else {
            Vec::new()
        };
        if !stopped {
            structural.settle(&mut est, &domain, measured, c.iters / 4);
        }
        if super::marginal::has_mass(&est) {
            break;
        }
    }
    if !stopped {
        if let Some(note) = super::one_to_one::note(&domain, &pairs) {
            let mut p = Progress::at(
                &s,
                private,
                "kept one-to-one pairs",
                (total_steps, total_steps),
                vec![],
            );
            p.note = Some(note);
            (s.observer)(p);
        }
    }
    if !super::marginal::has_mass(&est) {
        return Err(super::marginal::massless());
    }
    let config = serde_json::to_value(c).unwrap_or_default();
    Ok(release(
        &s,
        private,
        (INFO.id, &c.common.preset),
        config,
        domain,
        &est,
        (measured, &pairs),
    ))
}

/// Each pair of columns (a, b, error): how far the counts of the pair are from what the
/// 1-way model predicts (their product), in L1. A record moves each error by at most 1, so
/// the exponential mechanism over them has sensitivity 1. A pair too large to measure
/// usefully is left out, by its public size alone (the tree may then be a forest).
fn pair_errors(
    exact: &Counts,
    sizes: &[usize],
    est: &Estimate,
    n: f64,
) -> Result<Vec<(usize, usize, f64)>> {
    let d = sizes.len();
    let mut pairs = Vec::new();
    for a in 0..d {
        for b in a + 1..d {
            if sizes[a].saturating_mul(sizes[b]) > MAX_PAIR_CELLS {
                continue;
            }
            let truth = exact.get(&[a, b])?;
            let pa = est.project(&[a]).unwrap_or_default();
            let pb = est.project(&[b]).unwrap_or_default();
            let guess: Vec<f64> = pa
                .iter()
                .flat_map(|x| pb.iter().map(move |y| x * y / n.max(1.0)))
                .collect();
            pairs.push((a, b, l1(truth, &guess)));
        }
    }
    Ok(pairs)
}

/// A maximum spanning tree (or forest) of the `d` columns over the pair errors, each of its
/// d − 1 edges picked by the exponential mechanism at `eps0` among the pairs that join two
/// components (exactly the largest without privacy). The selections' ρ must be charged
/// before this is called.
fn spanning_tree(
    pairs: &[(usize, usize, f64)],
    d: usize,
    eps0: f64,
    private: bool,
    s: &mut TrainSetup<'_>,
) -> Vec<Vec<usize>> {
    let mut edges = Vec::new();
    let mut comp: Vec<usize> = (0..d).collect();
    let root = |comp: &[usize], mut x: usize| {
        while comp[x] != x {
            x = comp[x];
        }
        x
    };
    for _ in 0..d - 1 {
        let open: Vec<&(usize, usize, f64)> = pairs
            .iter()
            .filter(|(a, b, _)| root(&comp, *a) != root(&comp, *b))
            .collect();
        if open.is_empty() {
            break;
        }
        let scores: Vec<f64> = open.iter().map(|p| p.2).collect();
        let pick = if private {
            crate::privacy::exponential::select(&scores, eps0, 1.0, false, s.noise.rng())
        } else {
            (0..scores.len())
                .max_by(|i, j| scores[*i].total_cmp(&scores[*j]))
                .unwrap_or(0)
        };
        let (a, b, _) = *open[pick];
        let (ra, rb) = (root(&comp, a), root(&comp, b));
        comp[ra] = rb;
        edges.push(vec![a, b]);
    }
    edges
}

/// The final fit to every measurement (post-processing), 100 iterations a step so the
/// progress bar moves and a stop is heard.
fn fit(
    s: &mut TrainSetup<'_>,
    est: &mut Estimate,
    measured: &[Measurement],
    iters: usize,
    total_steps: u64,
    private: bool,
) {
    let mut step = 3;
    let mut left = iters;
    while left > 0 {
        let k = left.min(100);
        let loss = est.fit(measured, k);
        left -= k;
        let p = Progress::at(
            s,
            private,
            "fitting the model",
            (step.min(total_steps), total_steps),
            vec![("fit loss".into(), loss)],
        );
        step += 1;
        if (s.observer)(p) == Flow::Stop {
            break;
        }
    }
}
