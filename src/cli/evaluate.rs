//! `dpsynth evaluate --real-train CSV --real-test CSV --synthetic CSV [--schema FILE]
//! [--label COLUMN] [--json FILE] [--html FILE]`

use std::path::PathBuf;

use anyhow::Context as _;

use crate::data::schema::Schema;
use crate::data::{self, Dataset, Table};
use crate::eval::report::{self, Options};
use crate::job::JobError;
use crate::job::evaluation::{EvalSpec, Evaluated, Named, evaluate_tables};

#[derive(Debug, clap::Args)]
pub struct EvaluateArgs {
    /// The real rows the synthesizer was trained on.
    #[arg(long)]
    pub real_train: PathBuf,
    /// Real rows held out from training (the test set of every score).
    #[arg(long)]
    pub real_test: PathBuf,
    /// The synthetic rows to judge.
    #[arg(long)]
    pub synthetic: PathBuf,
    /// Schema (JSON) of the tables; default: inferred from the real rows.
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Rules (one per line, as `train --rules` takes them) whose broken rows the first
    /// look counts, real against synthetic, besides the schema's own.
    #[arg(long, value_name = "FILE", requires = "schema")]
    pub rules: Option<PathBuf>,
    /// Binary or categorical column for the train-on-synthetic / test-on-real table.
    #[arg(long)]
    pub label: Option<String>,
    /// Write the full report as JSON to FILE ("-" for stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report to FILE.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Keep the first look's random real rows in the JSON and HTML reports (they then
    /// carry a banner saying they contain real records). Without it those files hold no
    /// real row and can be handed on with the synthetic data's other figures.
    #[arg(long)]
    pub with_real_rows: bool,
    /// Add a privacy audit's figure to the HTML report: the JSON `dpsynth audit --json`
    /// printed for the model.
    #[arg(long, value_name = "AUDIT_JSON", requires = "html")]
    pub audit: Option<PathBuf>,
    /// Image datasets: write a 10×10 PNG grid of synthetic images (one row per class when
    /// labelled) to FILE.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    /// Seed of every subsample and model.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Rows each dimension-wise prediction model trains on.
    #[arg(long, default_value_t = 5_000)]
    pub dimwise_rows: usize,
    /// Repeats of the 100-point Wasserstein protocol.
    #[arg(long, default_value_t = 100)]
    pub wasserstein_repeats: usize,
    /// Linked tables: the real child rows the synthesizer was trained on (--real-train,
    /// --real-test and --synthetic are then the parents). Adds the cross-table figures:
    /// children per parent, parent × child tables on the joined rows, and a task that
    /// needs both tables.
    #[arg(long, value_name = "FILE", requires_all = ["real_test_child", "synthetic_child", "key", "schema", "child_schema"])]
    pub real_train_child: Option<PathBuf>,
    /// The held-out real children (of the --real-test parents).
    #[arg(long, value_name = "FILE", requires = "real_train_child")]
    pub real_test_child: Option<PathBuf>,
    /// The synthetic children (`sample --child-out`).
    #[arg(long, value_name = "FILE", requires = "real_train_child")]
    pub synthetic_child: Option<PathBuf>,
    /// The child table's schema (--schema is the parents').
    #[arg(long, value_name = "FILE", requires = "real_train_child")]
    pub child_schema: Option<PathBuf>,
    /// The key column both tables share.
    #[arg(long, value_name = "COLUMN", requires = "real_train_child")]
    pub key: Option<String>,
    /// The parent column the two-table task predicts (default: the parent schema's
    /// target, else its first binary column).
    #[arg(long, value_name = "COLUMN", requires = "real_train_child")]
    pub parent_label: Option<String>,
}

pub(super) fn load_table(path: &PathBuf, what: &str) -> anyhow::Result<Table> {
    match data::open(path, &data::csv::LoadOptions::default())
        .with_context(|| format!("--{what} {}", path.display()))?
    {
        Dataset::Table(t) => Ok(t),
        Dataset::Images(_) => anyhow::bail!(
            "--{what} {}: holds images; tabular evaluation needs a CSV table",
            path.display()
        ),
    }
}

/// `--schema` with the lines of `--rules` added to its rules.
fn schema_with_rules(a: &EvaluateArgs) -> anyhow::Result<Option<Schema>> {
    let mut schema = a.schema.as_ref().map(|p| Schema::load(p)).transpose()?;
    if let (Some(s), Some(p)) = (schema.as_mut(), &a.rules) {
        let text = std::fs::read_to_string(p).map_err(|e| JobError::file(p, e))?;
        let stated = data::rules::parse_text(&text, &p.display().to_string())?;
        data::rules::check(&stated, s).with_context(|| format!("--rules {}", p.display()))?;
        s.rules.extend(stated.into_iter().map(|r| r.text));
    }
    Ok(schema)
}

pub fn run(a: EvaluateArgs) -> anyhow::Result<()> {
    let first = data::open(&a.real_train, &data::csv::LoadOptions::default())
        .with_context(|| format!("--real-train {}", a.real_train.display()))?;
    if let Dataset::Images(train) = first {
        return run_images(&a, &train);
    }
    let train = load_table(&a.real_train, "real-train")?;
    let test = load_table(&a.real_test, "real-test")?;
    let syn = load_table(&a.synthetic, "synthetic")?;
    let schema = schema_with_rules(&a)?;
    let spec = EvalSpec {
        rows: None,
        // The flag, else the target the schema names.
        label: a
            .label
            .clone()
            .or_else(|| schema.as_ref().and_then(|s| s.target.clone())),
        options: Options {
            label: None,
            seed: a.seed,
            dimwise_rows: a.dimwise_rows.max(10),
            wasserstein_repeats: a.wasserstein_repeats.max(1),
        },
        draw: None,
    };
    let start = std::time::Instant::now();
    let named = |t, p: &PathBuf| Named {
        table: t,
        name: p.display().to_string(),
    };
    let Evaluated {
        report: mut rep,
        inputs: names,
        ..
    } = evaluate_tables(
        schema,
        named(&train, &a.real_train),
        named(&test, &a.real_test),
        named(&syn, &a.synthetic),
        &spec,
        &mut |line| eprintln!("[{:6.1}s] {line}", start.elapsed().as_secs_f64()),
    )?;
    if !a.with_real_rows {
        rep = rep.without_real_rows();
    }
    if let Some(p) = &a.html {
        let audit = match &a.audit {
            Some(f) => {
                let text = std::fs::read_to_string(f).map_err(|e| JobError::file(f, e))?;
                let v: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| JobError::file(f, format!("not JSON: {e}")))?;
                Some(
                    crate::eval::html::AuditFigure::from_json(&v).ok_or_else(|| {
                        JobError::file(f, "not the JSON of `dpsynth audit --json`")
                    })?,
                )
            }
            None => None,
        };
        let html = crate::eval::html::render_with_audit(&rep, &names, audit.as_ref());
        crate::util::atomic::write_atomic(p, html.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("wrote {} ({} KiB)", p.display(), html.len() / 1024);
    }
    report_out(a.json.as_ref(), &rep, || print_summary(&rep))
}

/// Where `--json` sends a report: standard output (`-`), a file written atomically, or,
/// without it, the printed `summary`.
pub(super) fn report_out(
    json: Option<&PathBuf>,
    rep: &impl serde::Serialize,
    summary: impl FnOnce(),
) -> anyhow::Result<()> {
    match json {
        Some(p) if p.as_os_str() == "-" => println!("{}", serde_json::to_string_pretty(rep)?),
        Some(p) => {
            let text = serde_json::to_string_pretty(rep)?;
            crate::util::atomic::write_atomic(p, text.as_bytes())
                .with_context(|| format!("writing {}", p.display()))?;
            eprintln!("wrote {}", p.display());
        }
        None => summary(),
    }
    Ok(())
}

fn load_images(path: &PathBuf, what: &str) -> anyhow::Result<data::image::ImageSet> {
    match data::open(path, &data::csv::LoadOptions::default())
        .with_context(|| format!("--{what} {}", path.display()))?
    {
        Dataset::Images(s) => Ok(s),
        Dataset::Table(_) => anyhow::bail!(
            "--{what} {}: a table, but --real-train holds images; give images for all three",
            path.display()
        ),
    }
}

fn run_images(a: &EvaluateArgs, train: &data::image::ImageSet) -> anyhow::Result<()> {
    let test = load_images(&a.real_test, "real-test")?;
    let syn = load_images(&a.synthetic, "synthetic")?;
    eprintln!(
        "images: real-train {} · real-test {} · synthetic {} ({}×{})",
        train.len(),
        test.len(),
        syn.len(),
        syn.width,
        syn.height
    );
    if let Some(g) = &a.grid {
        crate::eval::images::grid_png(&syn, 10, 10, g).map_err(|e| anyhow::anyhow!(e))?;
        eprintln!("wrote {}", g.display());
    }
    eprintln!("training logistic regression and an MLP on real-train and on synthetic images");
    let rep = crate::eval::images::evaluate(train, &test, &syn, a.seed)
        .map_err(|e| anyhow::anyhow!("evaluate: {e}"))?;
    if let Some(p) = &a.html {
        let grid = match &a.grid {
            Some(g) => std::fs::read(g).ok(),
            None => None,
        };
        let html = crate::eval::html::render_images(&rep, grid.as_deref());
        crate::util::atomic::write_atomic(p, html.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    report_out(a.json.as_ref(), &rep, || {
        println!(
            "trained on synthetic, tested on real: CNN {:.3}, logistic regression {:.3}, MLP {:.3} (trained on real: {:.3}, {:.3}, {:.3}); Fréchet distance {:.3}",
            rep.synthetic_cnn_accuracy,
            rep.synthetic_logistic_accuracy,
            rep.synthetic_mlp_accuracy,
            rep.real_cnn_accuracy,
            rep.real_logistic_accuracy,
            rep.real_mlp_accuracy,
            rep.frechet_distance
        )
    })
}

pub(super) fn print_summary(r: &report::Report) {
    let f = |v: Option<f64>| v.map_or("—".to_string(), |x| format!("{x:.3}"));
    let v = crate::eval::verdict::verdict(r);
    println!("verdict: {}", v.headline);
    for reason in &v.reasons {
        println!("  - {reason}");
    }
    if let Some(l) = &r.first_look {
        print_first_look(l);
    }
    println!(
        "rows: real-train {} · real-test {} · synthetic {} (encoded width {})",
        r.sizes.real_train, r.sizes.real_test, r.sizes.synthetic, r.sizes.encoded_width
    );
    println!(
        "dimension-wise prediction: mean |real − synthetic| {:.3} over {} points",
        r.prediction.mean_abs_difference,
        r.prediction.points.len()
    );
    let mean_tv =
        r.histograms.iter().map(|h| h.tvd).sum::<f64>() / r.histograms.len().max(1) as f64;
    println!(
        "1-way TV (mean over columns): {mean_tv:.3} · 3-way TV (mean): {:.3}",
        r.three_way.mean_tv
    );
    println!(
        "PCA Wasserstein score {:.4} (W1 {:.4}) · whole-data score {:.4} (W1 {:.4})",
        r.pca.wasserstein.score,
        r.pca.wasserstein.w1_mean,
        r.whole_data_wasserstein.score,
        r.whole_data_wasserstein.w1_mean
    );
    println!(
        "pMSE {:.5} (ratio {:.2}) · MMD² {:.5}",
        r.pmse.fit.pmse, r.pmse.fit.ratio, r.mmd.mmd2_unbiased
    );
    println!(
        "DCR median: synthetic→train {:.3} vs test→train {:.3} · exact copies {} · membership AUC {}",
        r.privacy_risk.dcr_synthetic_median,
        r.privacy_risk.dcr_test_median,
        r.privacy_risk.exact_copies,
        f(r.privacy_risk.membership_auc)
    );
    if let Some(t) = &r.tstr {
        println!(
            "train on synthetic, test on real ({}; majority class {:.3}):",
            t.label, t.majority_accuracy
        );
        println!(
            "  {:40} {:>9} {:>9} {:>9} {:>9}",
            "model", "acc real", "acc syn", "AUC real", "AUC syn"
        );
        for row in &t.rows {
            let get = |s: &Result<report::Scores, String>| s.as_ref().ok().copied();
            let (a, b) = (get(&row.real), get(&row.synthetic));
            println!(
                "  {:40} {:>9} {:>9} {:>9} {:>9}",
                row.label,
                f(a.map(|s| s.accuracy)),
                f(b.map(|s| s.accuracy)),
                f(a.and_then(|s| s.auroc)),
                f(b.and_then(|s| s.auroc))
            );
        }
        println!("  agreed ranking (AUROC): {}", f(t.agreed_ranking_auroc));
    }
}

/// The first look's figures: exact values and precision per number column, broken rules.
fn print_first_look(l: &crate::eval::results::FirstLook) {
    let pct = |x: f64| format!("{:.1} %", 100.0 * x);
    println!("first look (real → synthetic):");
    for e in &l.exact {
        let values: Vec<String> = e
            .values
            .iter()
            .map(|v| format!("= {}: {} → {}", v.value, pct(v.real), pct(v.synthetic)))
            .collect();
        println!(
            "  {:24} {} · decimals {} → {}",
            e.column,
            values.join(" · "),
            e.real_decimals,
            e.synthetic_decimals
        );
    }
    for r in &l.rules {
        println!(
            "  rule {:60} broken {} → {}",
            r.rule,
            pct(r.real),
            pct(r.synthetic)
        );
    }
}
