//! Released models as the window and the CLI use them: read a model's statement, sample
//! it, export samples as CSV, copy it. All of it is post-processing of a DP release: no
//! private row is read and nothing is charged.

use std::path::{Path, PathBuf};

use super::{Draw, JobError, PrivacyStatement};
use crate::data::Table;
use crate::data::schema::{Kind, Schema};
use crate::methods::released::{Acceptance, Jitter, ReleasedModel};

/// What a model file says about itself.
#[derive(Debug, Clone)]
pub struct ModelSummary {
    pub method: String,
    pub preset: String,
    pub statement: PrivacyStatement,
    pub schema: Schema,
    /// The image side when the model generates `label, pixel0, …` images.
    pub image_side: Option<usize>,
    /// Whether the model carries a post-GAN-boosted mixture.
    pub boosted: bool,
    /// What sampling draws by default.
    pub draw: Draw,
    /// How the mixture was made, for a boosted model.
    pub mixture: Option<crate::methods::released::Mixture>,
}

fn load(path: &Path) -> Result<ReleasedModel, JobError> {
    ReleasedModel::load(path, &candle_core::Device::Cpu).map_err(|e| JobError::file(path, e))
}

/// A model file's privacy statement, read from its header alone (no weights: cheap enough
/// to list every kept run's). Not checked against the weights' checksum; sampling loads
/// and checks the whole file.
pub fn read_statement(path: &Path) -> Result<PrivacyStatement, JobError> {
    ReleasedModel::read_header(path)
        .map(|h| h.privacy)
        .map_err(|e| JobError::file(path, e))
}

/// What an export of the model holds, in words for the line after "wrote N rows": its
/// columns, and the ones the private domain estimate dropped (read from the header).
pub fn export_holds(path: &Path) -> String {
    let Ok(h) = ReleasedModel::read_header(path) else {
        return String::new();
    };
    let columns = &h.schema.columns;
    let kept = columns.iter().filter(|c| c.kind != Kind::Ignored).count();
    let dropped: Vec<&str> = columns
        .iter()
        .filter(|c| {
            c.kind == Kind::Ignored
                && matches!(
                    c.provenance,
                    crate::data::schema::Provenance::DpEstimated { .. }
                )
        })
        .map(|c| c.name.as_str())
        .collect();
    let mut s = format!("{kept} column(s)");
    if !dropped.is_empty() {
        s.push_str(&format!(
            "; the private domain estimate found too few values to keep {} column(s), left out: {}",
            dropped.len(),
            dropped.join(", ")
        ));
    }
    s
}

/// What the window lists a finished run by, from its model's header alone (no weights:
/// cheap on the UI thread): the privacy statement, and for a boosted model the draw its
/// mixture defaults to.
pub fn run_header(path: &Path) -> Result<(PrivacyStatement, Option<Draw>), JobError> {
    let h = ReleasedModel::read_header(path).map_err(|e| JobError::file(path, e))?;
    Ok((h.privacy, h.mixture.map(|m| m.draw)))
}

/// Reads a model file's header (and checks its weights load).
pub fn read_model(path: &Path) -> Result<ModelSummary, JobError> {
    let m = load(path)?;
    let schema = m.header.schema.clone();
    Ok(ModelSummary {
        method: m.header.method.clone(),
        preset: m.header.preset.clone(),
        statement: m.header.privacy.clone(),
        image_side: image_side(&schema),
        schema,
        boosted: m.mixture.is_some(),
        draw: m.default_draw(),
        mixture: m.header.mixture.clone(),
    })
}

/// `rows` synthetic rows from a model file, decoded (a fixed `seed` reproduces them).
pub fn sample(model: &Path, rows: usize, seed: Option<u64>) -> Result<Table, JobError> {
    sample_with(model, rows, seed, None)
}

/// [`sample`] by `draw` (`None`: the model's default; see [`Draw`]).
pub fn sample_with(
    model: &Path,
    rows: usize,
    seed: Option<u64>,
    draw: Option<Draw>,
) -> Result<Table, JobError> {
    let m = load(model)?;
    draw_rows(&m, model, rows, seed, draw)
}

fn draw_rows(
    m: &ReleasedModel,
    model: &Path,
    rows: usize,
    seed: Option<u64>,
    draw: Option<Draw>,
) -> Result<Table, JobError> {
    m.sample_with(rows, seed, draw.unwrap_or_else(|| m.default_draw()))
        .map_err(|e| sampling_error(model, e))
}

/// A sampling failure: bad usage (a mixture draw from an unboosted model, too many rows
/// for memory) stays usage, anything else names the model.
fn sampling_error(model: &Path, e: crate::methods::MethodError) -> JobError {
    match e {
        crate::methods::MethodError::Usage(u) => JobError::Usage(u),
        e => JobError::Training(format!("sampling {}: {e}", model.display())),
    }
}

/// Samples `rows` rows from the model file and writes them as CSV, with the statement
/// beside it ([`sidecar_path`]); both atomically. Returns the sidecar's path.
pub fn export_csv(
    model: &Path,
    rows: usize,
    seed: Option<u64>,
    out: &Path,
) -> Result<PathBuf, JobError> {
    export_csv_with(model, rows, seed, None, out)
}

/// [`export_csv`] by `draw` (`None`: the model's default).
pub fn export_csv_with(
    model: &Path,
    rows: usize,
    seed: Option<u64>,
    draw: Option<Draw>,
    out: &Path,
) -> Result<PathBuf, JobError> {
    export_csv_jittered(model, rows, seed, draw, None, out)
}

/// [`export_csv_with`], every image warped by `jitter` as it is sampled (images only;
/// post-processing, named in the statement).
pub fn export_csv_jittered(
    model: &Path,
    rows: usize,
    seed: Option<u64>,
    draw: Option<Draw>,
    jitter: Option<Jitter>,
    out: &Path,
) -> Result<PathBuf, JobError> {
    export_csv_where(model, rows, seed, draw, jitter, None, out).map(|(side, _)| side)
}

/// [`export_csv_jittered`] keeping only rows where `condition` holds (`sample --where
/// 'sex = "Female" and age >= 60'`): rows are drawn until `rows` of them pass, and the
/// statement says so with the acceptance rate. Post-processing: no charge.
pub fn export_csv_where(
    model: &Path,
    rows: usize,
    seed: Option<u64>,
    draw: Option<Draw>,
    jitter: Option<Jitter>,
    condition: Option<&str>,
    out: &Path,
) -> Result<(PathBuf, Acceptance), JobError> {
    if out.as_os_str().is_empty() {
        return Err(JobError::Usage(
            "type a file path to export to first".into(),
        ));
    }
    let m = load(model)?;
    let draw = draw.unwrap_or_else(|| m.default_draw());
    let cond = match condition {
        Some(text) => Some(
            crate::data::rules::condition(text, &m.header.schema)
                .map_err(|e| JobError::Usage(e.to_string()))?,
        ),
        None => None,
    };
    if cond.is_some() && jitter.is_some() {
        return Err(JobError::Usage(
            "--where keeps table rows by a condition and --jitter warps images; use one of them"
                .into(),
        ));
    }
    let mut acceptance = Acceptance::default();
    // Streamed chunk by chunk into the file: any number of rows that fits on disk.
    let written = crate::data::export::write_csv_stream(out, |sink| match &jitter {
        Some(j) => m.sample_each_jittered(rows, seed, draw, j, sink),
        None => {
            acceptance = m.sample_where(rows, seed, draw, cond.as_ref(), sink)?;
            Ok(())
        }
    })
    .map_err(|e| match e {
        crate::data::export::StreamError::Produce(e) => sampling_error(model, e),
        crate::data::export::StreamError::Write(e) => JobError::write(out, e),
    })?;
    let side = sidecar_path(out);
    let mut statement = sidecar(&m, model, written, out, draw);
    if let Some(j) = jitter {
        statement["jittered"] = jitter_statement(&j);
    }
    if !m.header.schema.rules.is_empty() {
        statement["rules"] = serde_json::json!({
            "stated": m.header.schema.rules,
            "what": "rules the user stated as public facts (no privacy cost); rows that broke one were repaired or dropped as they were drawn, so every row here obeys them",
            "rows_drawn": acceptance.drawn,
            "acceptance_rate": acceptance.rate(),
        });
    }
    if !acceptance.moved.is_empty() {
        statement["moved"] = moved_statement(&acceptance.moved);
    }
    if let (Some(c), Some(text)) = (&cond, condition) {
        statement["condition"] = serde_json::json!({
            "where": c.to_string(),
            "as_given": text,
            "what": "rows drawn from the model until this many met the condition; the rest were dropped (post-processing: no privacy cost)",
            "rows_drawn": acceptance.drawn,
            "acceptance_rate": acceptance.rate(),
        });
    }
    let text = serde_json::to_string_pretty(&statement).map_err(|e| JobError::write(&side, e))?;
    crate::util::atomic::write_atomic(&side, text.as_bytes())
        .map_err(|e| JobError::write(&side, e))?;
    Ok((side, acceptance))
}

/// The statement's word on images jittered as they were sampled.
fn jitter_statement(j: &Jitter) -> serde_json::Value {
    let mut v = serde_json::json!({
        "what": "each image turned, zoomed and moved at random as it was sampled (post-processing: no privacy cost), for training classifiers; the set no longer matches the real images' poses",
        "degrees": j.degrees, "zoom": j.zoom, "shift": j.shift,
    });
    if let Some(e) = j.elastic {
        v["elastic"] = serde_json::json!({
            "what": "each image first bent by a smooth random displacement field (Simard et al. 2003)",
            "alpha": e.alpha, "sigma": e.sigma,
        });
    }
    v
}

/// The statement's word on what keeping rows by the rules and a condition moved.
fn moved_statement(moved: &[crate::data::rules::Moved]) -> serde_json::Value {
    serde_json::json!({
        "what": format!("columns whose share of a value moved by more than {} between the rows the model drew and those kept here after the rules and the condition (both synthetic: no privacy cost); the kept rows are not distributed as the model's own", crate::data::rules::MOVED),
        "columns": moved.iter().map(|m| serde_json::json!({
            "column": m.column, "value": m.value,
            "share_drawn": m.drawn, "share_kept": m.kept,
        })).collect::<Vec<_>>(),
    })
}

/// Where an exported CSV's statement goes: `synthetic.csv` → `synthetic.csv.privacy.json`.
///
/// A sidecar rather than a `#` comment line in the CSV: most readers (Excel, pandas'
/// defaults, polars, R's `read.csv`) would take a comment line for a data row or fail, and
/// a synthetic file that no longer loads where the real one did is worse than useless.
/// The sidecar holds the whole statement, not a line of it.
pub fn sidecar_path(csv: &Path) -> PathBuf {
    let mut name = csv.file_name().unwrap_or_default().to_os_string();
    name.push(".privacy.json");
    csv.with_file_name(name)
}

/// The statement an exported CSV carries: the model's privacy statement, what it covers,
/// and where the rows came from. Every value in it is the model header's (a DP output or
/// a public fact), or about the synthetic file itself.
fn sidecar(
    m: &ReleasedModel,
    model: &Path,
    rows: usize,
    out: &Path,
    draw: Draw,
) -> serde_json::Value {
    let p = &m.header.privacy;
    let source = if m.graphical.is_some() {
        "sampled from a graphical model fitted to noisy marginals, measured"
    } else if matches!(draw, Draw::Generator | Draw::Labelled) {
        "sampled from a generator trained"
    } else {
        "drawn from a post-GAN-boosted set of generated rows, its generators trained and its weights chosen"
    };
    let covers = coverage(p, source);
    let mut json = serde_json::json!({
        "synthetic_data": out.file_name().map(|n| n.to_string_lossy().into_owned()),
        "rows": rows,
        "generated_by": format!("dpsynth {}", env!("CARGO_PKG_VERSION")),
        // The model by content, not by path: a local path names folders and often the
        // private data file, neither of which the release should carry.
        "model": {
            "sha256": file_sha256(model).ok(),
            "method": m.header.method,
            "preset": m.header.preset,
        },
        "drawn_from": draw.name(),
        "boosting": m.header.mixture,
        "boosting_variant": m.header.mixture.as_ref().map(|x| match x.epsilon0 {
            Some(_) => "private post-GAN boosting: the exponential mechanism picked the critics, within the statement's ε",
            None => "non-private post-GAN boosting (best response): the critics were picked on the exact payoff",
        }),
        "guarantee_covers": covers,
        "what_it_means": super::risk::RiskCurve::of_statement(p, None).sentence,
        "records": super::records_statement(p.public_rows),
        "counted_by": p.counted_by.as_deref().map(super::counted_by_statement),
        "not_for_release": p.not_for_release,
        "privacy": p,
    });
    if m.header.labeller.is_some() {
        json["checked_by"] = "each image kept only when the labeller, a classifier released with the model (trained by DP-SGD within the statement's ε), reads it as its class".into();
    }
    json
}

/// The SHA-256 of a file's bytes, in hex.
fn file_sha256(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest as _, Sha256};
    let bytes = std::fs::read(path)?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// What an exported file's guarantee covers, in one sentence: the rows at the statement's
/// (ε, δ), and every fact of the header that was not public or DP-estimated named as not
/// covered (domains read off the rows, kinds guessed from them).
pub fn coverage(p: &crate::methods::released::PrivacyStatement, source: &str) -> String {
    let Some(e) = p.epsilon else {
        return "nothing: this data comes from a model trained WITHOUT privacy (ε = ∞); do not release it".to_string();
    };
    let mut gaps = Vec::new();
    if !p.non_private_domains.is_empty() {
        gaps.push(format!(
            "the domains of {}, which were read off the private rows",
            p.non_private_domains.join(", ")
        ));
    }
    if !p.non_private_kinds.is_empty() {
        gaps.push(format!(
            "the kinds (binary / categorical / continuous / ignored, date formats) of {}, which were guessed from the private rows",
            p.non_private_kinds.join(", ")
        ));
    }
    let dropped = if p.dropped_columns.is_empty() {
        String::new()
    } else {
        format!(
            ". The columns {} are not in the data: no value of theirs was frequent enough to pass the private domain estimate",
            p.dropped_columns.join(", ")
        )
    };
    let sentence = if gaps.is_empty() {
        format!(
            "the whole file: every row is {source} with ({e:.4}, {})-differential privacy, and every column's kind and domain was public or estimated privately",
            p.delta
        )
    } else {
        format!(
            "the rows, {source} with ({e:.4}, {})-differential privacy, but NOT {}",
            p.delta,
            gaps.join("; nor ")
        )
    };
    let mut facts = Vec::new();
    let (named, found) = point_masses(p);
    if !named.is_empty() {
        facts.push(format!(
            "the exact values {} (named by the user)",
            named.join("; ")
        ));
    }
    let found = if found.is_empty() {
        String::new()
    } else {
        format!(
            ". The exact values {} were estimated privately with the domains, inside the guarantee",
            found.join("; ")
        )
    };
    if !p.rules.is_empty() {
        facts.push(format!(
            "the rules {} (stated by the user; every row obeys them)",
            p.rules
                .iter()
                .map(|r| format!("'{r}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let facts = if facts.is_empty() {
        String::new()
    } else {
        format!(". Public facts, at no privacy cost: {}", facts.join("; "))
    };
    sentence + &dropped + &found + &facts
}

/// A statement's exact values per column ("capital-gain (0, 99999)"): those the user
/// named (public facts), then those a private domain estimate found (DP outputs).
pub fn point_masses(p: &PrivacyStatement) -> (Vec<String>, Vec<String>) {
    let estimated = crate::methods::statement::ESTIMATED_MASSES;
    let (found, named): (Vec<&String>, Vec<&String>) = p
        .point_masses
        .iter()
        .partition(|m| m.ends_with(&format!("{estimated})")));
    (
        named.into_iter().cloned().collect(),
        found.iter().map(|m| m.replace(estimated, "")).collect(),
    )
}

/// Copies the released model file. It holds the generator and its privacy statement only
/// (no critic, no encoder, no training rows): safe to hand out as it is.
pub fn copy_model(model: &Path, to: &Path) -> Result<(), JobError> {
    let bytes = std::fs::read(model).map_err(|e| JobError::file(model, e))?;
    crate::util::atomic::write_atomic(to, &bytes).map_err(|e| JobError::write(to, e))
}

/// The image side of a schema of images (columns `label, pixel0, …` with a square count).
pub fn image_side(schema: &Schema) -> Option<usize> {
    crate::data::image::image_side(schema)
}
