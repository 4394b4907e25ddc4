//! `dpsynth train …` and `dpsynth sample …`

use std::io::Write as _;
use std::path::PathBuf;

use serde_json::json;

use crate::job::{self, DeviceChoice, Draw, Event, Jitter, JobError, RunConfig};

#[derive(Debug, clap::Args)]
pub struct TrainArgs {
    /// The private data: a CSV table, or MNIST-style images (IDX, with the labels file
    /// beside it, or a `label,pixel0,…` CSV). `ballista://HOST:PORT/PATH` counts a
    /// Parquet or CSV table where a Ballista cluster holds it (MST and AIM; a build with
    /// `--features ballista`).
    #[arg(long)]
    pub data: PathBuf,
    /// Schema JSON with public domains (default: guessed from the data, which a private
    /// run refuses unless --estimate-domains or --allow-data-domains; see `inspect`).
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Rules between columns, one per line, as public facts (no privacy cost; added to
    /// the schema's `rules`): `education -> education-num`, `relationship = "Husband" =>
    /// sex = "Male"`, `capital-gain > 0 => capital-loss = 0`, `age >= 17`. Every synthetic
    /// row obeys them; how many real rows break each is shown here only.
    #[arg(long, value_name = "FILE", requires = "schema")]
    pub rules: Option<PathBuf>,
    /// Estimate every domain that was read off the rows privately, with a share of ε
    /// (--domain-share), charged like training.
    #[arg(long, conflicts_with = "allow_data_domains")]
    pub estimate_domains: bool,
    /// Share of the run's ε spent estimating domains (with --estimate-domains).
    #[arg(long, default_value_t = crate::data::estimate::DEFAULT_SHARE, requires = "estimate_domains")]
    pub domain_share: f64,
    /// The number of records as a public fact (e.g. a published census count): sampling
    /// rates and σ are computed from it instead of the file's exact row count, which is
    /// otherwise treated as public (the usual convention; the statement says which).
    #[arg(long, value_name = "N")]
    pub public_rows: Option<usize>,
    /// Train even when δ ≥ 1/n (such a δ allows releasing a whole record outright).
    #[arg(long)]
    pub force: bool,
    /// Train even when the estimated peak memory exceeds the memory available.
    #[arg(long)]
    pub force_memory: bool,
    /// Release domains read off the rows as they are: they are NOT covered by the
    /// guarantee, and the statement and --json (`non_private_domains`) say so.
    #[arg(long)]
    pub allow_data_domains: bool,
    /// The column kinds (binary / categorical / continuous / ignored) and date formats —
    /// guessed from the rows when no schema gives them — are public facts (a codebook's):
    /// the statement then covers them. Without it, guessed kinds are named in the
    /// statement and --json (`non_private_kinds`) as not covered.
    #[arg(long)]
    pub public_kinds: bool,
    /// The file's codebook — the value labels of an SPSS or Stata file, which become the
    /// category lists of their columns — is public: those columns' kinds and categories
    /// are then covered. Without it they are named as not covered, like domains read off
    /// the rows.
    #[arg(long)]
    pub public_codebook: bool,
    /// Read the data in parts instead of into memory (MST and AIM only, CSV or Parquet):
    /// a table of any number of rows trains in the memory of one part and the counts.
    /// Needs --schema with every domain public; the file is read twice (a check and key
    /// pass before anything is spent, then the counts)
    #[arg(long)]
    pub stream: bool,
    /// Rows per part with --stream (default 262144): fewer use less memory
    #[arg(long, value_name = "N", requires = "stream", value_parser = clap::value_parser!(u64).range(1..))]
    pub part_rows: Option<u64>,
    /// The method (`dpsynth methods` lists them with their presets).
    #[arg(long)]
    pub method: String,
    /// Privacy budget ε of this run; `inf` trains without privacy (the reference line).
    #[arg(long, value_parser = parse_epsilon)]
    pub epsilon: f64,
    #[arg(long)]
    pub delta: f64,
    #[arg(long, default_value = crate::job::DEFAULT_PRESET)]
    pub preset: String,
    /// Fix the randomness (reproducible runs; the model is marked not-for-release).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Model file to write (default: next to the data, `<name>.<method>.dpsynth`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Training device: auto (a GPU this build can drive, else the CPU), cpu, cuda,
    /// cuda:N, metal.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Ledger file (default: $DPSYNTH_LEDGER, else the user data folder).
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    /// Print one JSON object on stdout at the end.
    #[arg(long)]
    pub json: bool,
    /// Override one of the preset's settings, e.g. `--set gan_lr=0.001` (repeatable;
    /// values are JSON, else text).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Keep a checkpoint per GAN epoch in this folder (generator as a model file, critic
    /// as safetensors), for post-GAN boosting.
    #[arg(long, value_name = "DIR")]
    pub checkpoints: Option<PathBuf>,
    /// Private post-GAN boosting after training (GAN methods): combine the last
    /// generators by the exponential mechanism and multiplicative weights, with a share of
    /// ε (--boost-share); the model then samples from the boosted mixture.
    #[arg(long)]
    pub boost: bool,
    /// Share of ε the boosting rounds cost alone (the GAN gets the rest).
    #[arg(long, value_name = "SHARE", requires = "boost")]
    pub boost_share: Option<f64>,
    /// How many of the last generators to combine.
    #[arg(long, value_name = "N", requires = "boost")]
    pub boost_generators: Option<usize>,
    /// Rows drawn from each generator into the boosted set.
    #[arg(long, value_name = "R", requires = "boost")]
    pub boost_samples: Option<usize>,
    /// Rounds of the boosting game.
    #[arg(long, value_name = "T", requires = "boost")]
    pub boost_rounds: Option<u64>,
    /// Sample the boosted mixture after discriminator rejection sampling by default (off
    /// unless asked: with DP critics it often sharpens the wrong rows; see README).
    #[arg(long, requires = "boost")]
    pub drs: bool,
    /// A child table linked to --data (the members of households, the visits of
    /// patients, the years of persons), trained with it under one guarantee whose unit is
    /// a parent with all its children (MST and AIM). Needs --key and --max-children.
    #[arg(long, value_name = "FILE", requires_all = ["key", "max_children"])]
    pub child: Option<PathBuf>,
    /// The child table's public schema (with --child; --schema is the parent's).
    #[arg(long, value_name = "FILE", requires = "child")]
    pub child_schema: Option<PathBuf>,
    /// The column both tables share that links a child to its parent. Keys are
    /// identifiers: never released; synthetic keys are fresh.
    #[arg(long, value_name = "COLUMN", requires = "child")]
    pub key: Option<String>,
    /// K, the most children one parent contributes (a public bound: a parent with more
    /// keeps its first K; the child counts' noise grows with K).
    #[arg(long, value_name = "K", requires = "child")]
    pub max_children: Option<usize>,
    /// The fewest children every parent has, as a public fact (a person in a panel has at
    /// least one year): no synthetic parent gets fewer; a parent with fewer is an error.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "child")]
    pub min_children: usize,
    /// Share of the budget for the parent table (the children get the rest).
    #[arg(long, value_name = "SHARE", requires = "child")]
    pub parent_share: Option<f64>,
    /// Draw children without their parent's columns: the baseline that synthesizes the two
    /// tables apart and loses the link (to measure what the link is worth).
    #[arg(long, requires = "child")]
    pub independent: bool,
    /// A child column no two children of one parent share (a person has one row a year):
    /// a public fact the synthetic children keep (repeatable).
    #[arg(long, value_name = "COLUMN", requires = "child")]
    pub unique: Vec<String>,
    /// A child column of categories each parent counts its children by (a household's
    /// women and men): the parent model learns the counts, and each synthetic parent's
    /// children take exactly its counts' values.
    #[arg(long, value_name = "COLUMN", requires = "child")]
    pub count_by: Option<String>,
}

impl TrainArgs {
    /// The boosting settings the flags ask for (`None` without --boost).
    fn boost(&self) -> Option<job::BoostConfig> {
        if !self.boost {
            return None;
        }
        let d = job::BoostConfig::default();
        Some(job::BoostConfig {
            share: self.boost_share.unwrap_or(d.share),
            generators: self.boost_generators.unwrap_or(d.generators),
            samples_per_generator: self.boost_samples.unwrap_or(d.samples_per_generator),
            rounds: self.boost_rounds.unwrap_or(d.rounds),
            drs: self.drs,
            ..d
        })
    }
}

fn parse_rows(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0 rows would write an empty file; ask for at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a whole number of rows (1 or more)")),
    }
}

pub(super) fn parse_epsilon(s: &str) -> Result<f64, String> {
    match s {
        "inf" | "infinity" | "∞" => Ok(f64::INFINITY),
        // "1e400" parses as ∞: only the word trains without privacy.
        _ => s
            .parse::<f64>()
            .ok()
            .filter(|e| *e > 0.0 && e.is_finite())
            .ok_or_else(|| format!("'{s}' is not a positive finite number or 'inf'")),
    }
}

#[derive(Debug, clap::Args)]
pub struct SampleArgs {
    #[arg(long)]
    pub model: PathBuf,
    /// How many rows to write (streamed in chunks: any number that fits on disk).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_rows)]
    pub rows: usize,
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub seed: Option<u64>,
    /// For a boosted model: draw from `boosted` (the mixture; the default unless trained
    /// with --drs), `boosted-drs` (the mixture after discriminator rejection sampling) or
    /// `generator` (the last generator, as without boosting). For a model with a labeller:
    /// `labelled` (the default: only rows it reads as their class) or `generator`.
    #[arg(long, value_parser = Draw::parse)]
    pub draw: Option<Draw>,
    /// Images only: turn, zoom and move each sampled image at random, for digits meant to
    /// train a classifier (post-processing, no privacy cost; the statement says so).
    /// `--jitter` alone is the usual MNIST augmentation (10°, 10 % zoom, 10 % shift);
    /// `--jitter DEGREES,ZOOM,SHIFT` sets it, and `DEGREES,ZOOM,SHIFT,ALPHA,SIGMA` adds an
    /// elastic bend (Simard et al.'s is 34,4).
    #[arg(long, value_parser = Jitter::parse, num_args = 0..=1, default_missing_value = "standard")]
    pub jitter: Option<Jitter>,
    /// Keep only rows where this condition holds, e.g. `'sex = "Female" and age >= 60'`
    /// (comparisons =, !=, <, <=, >, >=, `in {…}`, joined by `and`): rows are drawn until
    /// --rows of them pass (post-processing, no privacy cost); the acceptance rate is
    /// printed and written in the statement.
    #[arg(long = "where", value_name = "CONDITION")]
    pub condition: Option<String>,
    /// For a linked model: where the children go (--out gets the parents; --rows counts
    /// parents).
    #[arg(long, value_name = "FILE")]
    pub child_out: Option<PathBuf>,
}

pub fn train(a: TrainArgs) -> anyhow::Result<()> {
    let cfg = run_config(&a)?;
    let ledger = a
        .ledger
        .clone()
        .unwrap_or_else(super::budget::default_ledger_path);
    let summary = follow(job::spawn(cfg, ledger, None), a.epsilon)?;
    warnings(&a, &summary);
    if a.json {
        return super::print_json(&json!({
            "epsilon_spent": summary.epsilon_spent,
            "delta": summary.delta,
            "steps": summary.steps,
            "model": summary.model.display().to_string(),
            "accountant": summary.accountant,
            "seconds": summary.seconds,
            "not_for_release": summary.not_for_release,
            "non_private_domains": summary.non_private_domains,
            "non_private_kinds": summary.non_private_kinds,
            "estimated_domains": summary.estimated_domains,
            "public_rows": a.public_rows,
            "boosted": summary.boosted,
            "device": summary.device,
            "one_to_one": summary.one_to_one,
        }));
    }
    let eps = summary
        .epsilon_spent
        .map_or("∞ (not private)".to_string(), |e| format!("{e:.4}"));
    println!(
        "model written to {} — ε = {eps} at δ = {} ({}), {} steps in {:.1} s on {}{}",
        summary.model.display(),
        summary.delta,
        summary.accountant,
        summary.steps,
        summary.seconds,
        summary.device,
        if summary.not_for_release {
            " — fixed seed: NOT for release"
        } else {
            ""
        }
    );
    Ok(())
}

/// The model file: `--out`, else beside the data named by its stem and the method (in the
/// current folder for an engine table, whose path is the cluster's).
fn default_out(a: &TrainArgs) -> PathBuf {
    a.out.clone().unwrap_or_else(|| {
        let stem = a
            .data
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        let name = format!("{stem}.{}.dpsynth", a.method);
        if crate::data::engine::EngineSource::parse(&a.data).is_some() {
            return PathBuf::from(name);
        }
        a.data.with_file_name(name)
    })
}

/// The run the arguments ask for.
pub(super) fn run_config(a: &TrainArgs) -> anyhow::Result<RunConfig> {
    let out = default_out(a);
    Ok(RunConfig {
        inline_schema: with_rules(a)?,
        schema: a.schema.clone(),
        preset: a.preset.clone(),
        seed: a.seed,
        out,
        device: DeviceChoice::parse(&a.device).map_err(|e| JobError::Usage(e.to_string()))?,
        ledger: a.ledger.clone(),
        overrides: parse_overrides(&a.set)?,
        checkpoints: a.checkpoints.clone(),
        force_delta: a.force,
        force_memory: a.force_memory,
        public_rows: a.public_rows,
        boost: a.boost(),
        public_kinds: a.public_kinds,
        public_codebook: a.public_codebook,
        stream: a.stream,
        part_rows: a.part_rows.map(|n| n as usize),
        domains: if a.estimate_domains {
            job::DomainPolicy::Estimate {
                share: a.domain_share,
            }
        } else if a.allow_data_domains {
            job::DomainPolicy::AllowData
        } else {
            job::DomainPolicy::Refuse
        },
        ..RunConfig::new(a.data.clone(), &a.method, a.epsilon, a.delta)
    })
}

/// The schema of `--schema` with the lines of `--rules` added to its rules (checked
/// against it, errors naming the rules file's line); `None` without `--rules`.
fn with_rules(a: &TrainArgs) -> anyhow::Result<Option<crate::data::schema::Schema>> {
    let (Some(rules), Some(path)) = (&a.rules, &a.schema) else {
        return Ok(None);
    };
    let mut schema =
        crate::data::schema::Schema::load(path).map_err(|e| JobError::Usage(e.to_string()))?;
    let text = std::fs::read_to_string(rules).map_err(|e| {
        JobError::Usage(format!(
            "cannot read the rules file {}: {e}",
            rules.display()
        ))
    })?;
    let name = rules.display().to_string();
    let stated =
        crate::data::rules::parse_text(&text, &name).map_err(|e| JobError::Usage(e.to_string()))?;
    crate::data::rules::check(&stated, &schema)
        .map_err(|e| JobError::Usage(format!("{name}: {e}")))?;
    schema.rules.extend(stated.into_iter().map(|s| s.text));
    // The schema's own rules and the file's, together (two that no row can meet at once).
    crate::data::rules::of_schema(&schema).map_err(|e| JobError::Usage(format!("{name}: {e}")))?;
    Ok(Some(schema))
}

/// What the guarantee does not cover, and where the records were counted, on stderr.
fn warnings(a: &TrainArgs, summary: &job::RunSummary) {
    for [x, y] in &summary.one_to_one {
        eprintln!(
            "dpsynth: note: {x} and {y} are one fact written twice in the noisy counts; the model keeps them one-to-one (post-processing, no charge; --set one_to_one=false turns it off)"
        );
    }
    if !summary.non_private_domains.is_empty() {
        eprintln!(
            "dpsynth: warning: the domains of {} were read off the private rows and are in the model file as read; the guarantee does NOT cover them",
            summary.non_private_domains.join(", ")
        );
    }
    if summary.epsilon_spent.is_some() && !summary.non_private_kinds.is_empty() {
        eprintln!(
            "dpsynth: warning: the kinds of {} were guessed from the private rows; the guarantee does NOT cover them (give them in --schema, or say they are public with --public-kinds)",
            summary.non_private_kinds.join(", ")
        );
    }
    if summary.epsilon_spent.is_some() {
        eprintln!("dpsynth: note: {}", job::records_statement(a.public_rows));
        if let Some(Ok(s)) = crate::data::engine::EngineSource::parse(&a.data) {
            eprintln!(
                "dpsynth: note: {}",
                job::counted_by_statement(&s.identity())
            );
        }
    }
}

/// Prints the run's progress on stderr until it ends, and returns its summary.
fn follow(handle: job::JobHandle, epsilon: f64) -> anyhow::Result<job::RunSummary> {
    let mut eta = crate::job::eta::Eta::default();
    let mut err = std::io::stderr();
    let mut result = None;
    for ev in handle.events.iter() {
        match ev {
            Event::Started {
                summary,
                rows,
                width,
                resources,
                ..
            } => {
                let _ = writeln!(
                    err,
                    "dpsynth: {rows} rows, {width} encoded columns; {}; plan: {summary}",
                    resources.line()
                );
                if !epsilon.is_finite() {
                    let _ = writeln!(
                        err,
                        "dpsynth: warning: ε = ∞ — this model is NOT private; use it only as a reference"
                    );
                }
            }
            Event::Notice(m) => {
                let _ = writeln!(err, "dpsynth: warning: {m}");
            }
            Event::Checkpoint { .. } | Event::Samples { .. } | Event::Budget { .. } => {}
            Event::Progress(p) => {
                let left = eta.update(&p.phase, p.step, p.total);
                let losses: Vec<String> = p
                    .losses
                    .iter()
                    .map(|(k, v)| format!("{k} {v:.4}"))
                    .collect();
                let _ = write!(
                    err,
                    "\r{} step {}/{} | {} | ε {:.3} / {}{}   ",
                    p.phase,
                    p.step,
                    p.total,
                    losses.join(", "),
                    p.epsilon_spent,
                    epsilon,
                    crate::job::eta::eta_text(left).replace(" · ", " | ")
                );
                let _ = err.flush();
            }
            Event::Finished(r) => {
                let _ = writeln!(err);
                result = Some(r);
            }
        }
    }
    handle.join();
    Ok(match result {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(e.into()),
        None => anyhow::bail!("the training thread ended without a result"),
    })
}

pub(super) fn parse_overrides(
    set: &[String],
) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let mut m = serde_json::Map::new();
    for s in set {
        let Some((k, v)) = s.split_once('=') else {
            return Err(JobError::Usage(format!("--set expects NAME=VALUE, got '{s}'")).into());
        };
        let val =
            serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        m.insert(k.trim().to_string(), val);
    }
    Ok(m)
}

pub fn sample(a: SampleArgs) -> anyhow::Result<()> {
    let model = job::services::read_model(&a.model)?;
    let (side, acceptance) = job::services::export_csv_where(
        &a.model,
        a.rows,
        a.seed,
        a.draw,
        a.jitter,
        a.condition.as_deref(),
        &a.out,
    )?;
    if acceptance.passed < acceptance.drawn {
        eprintln!(
            "dpsynth: {} of {} rows drawn ({:.1} %) met {}; wrote {} of them",
            acceptance.passed,
            acceptance.drawn,
            100.0 * acceptance.rate(),
            match (&a.condition, model.schema.rules.is_empty()) {
                (Some(c), true) => format!("the condition '{c}'"),
                (Some(c), false) => format!("the model's rules and the condition '{c}'"),
                (None, _) => "the model's rules".to_string(),
            },
            acceptance.kept
        );
    }
    for m in &acceptance.moved {
        eprintln!("dpsynth: keeping rows moved {m}");
    }
    let drawn = a.draw.unwrap_or(model.draw);
    eprintln!(
        "dpsynth: wrote {} synthetic rows to {} ({}; model: {}{}, ε = {} at δ = {}); statement: {}",
        a.rows,
        a.out.display(),
        job::services::export_holds(&a.model),
        model.method,
        if model.boosted {
            format!(", drawn from: {}", drawn.name())
        } else {
            String::new()
        },
        model
            .statement
            .epsilon
            .map_or("∞ (not private)".to_string(), |e| e.to_string()),
        model.statement.delta,
        side.display()
    );
    if !model.statement.non_private_domains.is_empty() {
        eprintln!(
            "dpsynth: caveat: the domains of {} were read off the private rows and are NOT covered by the guarantee",
            model.statement.non_private_domains.join(", ")
        );
    }
    if !model.statement.non_private_kinds.is_empty() {
        eprintln!(
            "dpsynth: caveat: the kinds of {} were guessed from the private rows and are NOT covered by the guarantee",
            model.statement.non_private_kinds.join(", ")
        );
    }
    if model.statement.not_for_release {
        eprintln!("dpsynth: caveat: trained with a fixed seed: NOT for release");
    }
    Ok(())
}
