//! A linked run: a parent table and a child table (households and their members, patients
//! and their visits) synthesized together under one guarantee whose unit is a parent with
//! all its children ([`crate::data::linked`]).
//!
//! The run is two marginal-method runs on the derived tables: the parents with their
//! number of children, then the children with their parent's columns beside their own,
//! so a child is drawn given its synthetic parent ([`model`]). One reservation in the
//! dataset's ledger pays for both, keyed by both tables' content, at the unit level
//! ([`budget`]); each run spends on a scratch ledger that ends with the run. The derived
//! tables are written to a private temporary folder for the two runs and removed with it.

pub mod books;
pub mod budget;
mod claims;
pub mod model;
mod scratch;
pub mod services;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::data::linked::{self, Joined, Link};
use crate::data::schema::Schema;
use crate::job::{DomainPolicy, Event, JobError, RunConfig, RunSummary};

pub use books::{Books, content_key, standing};
pub use budget::{DEFAULT_PARENT_SHARE, Split};

/// The most bins a linked run cuts a continuous column into unless `--set bins=` says
/// otherwise: the child counts carry K times the noise, and on the bundled pair at ε = 1
/// 16 bins bring the parent × child tables' mean error from 0.07–0.08 to 0.05–0.06 (100 bins
/// spread the noise over cells too small to hold signal).
pub const LINKED_BINS: u64 = 16;

/// The methods that train linked tables: the marginal ones, which spend zCDP (so the
/// child run's share scales by K² exactly) and draw children given their parent.
pub const METHODS: &[&str] = &["aim", "mst"];

/// What a linked run is asked: `parent` is the run on the parent table (its data, schema,
/// method, ε, δ, preset, seed and model file), the rest says how the child table links.
#[derive(Debug, Clone)]
pub struct LinkedConfig {
    pub parent: RunConfig,
    pub child: PathBuf,
    /// The child table's public schema (`None`: read off the rows, with
    /// `--allow-data-domains` only).
    pub child_schema: Option<Schema>,
    pub link: Link,
    /// Share of ρ for the parent table ([`DEFAULT_PARENT_SHARE`]).
    pub parent_share: f64,
    /// The baseline that loses the link: children drawn without their parent's columns.
    pub independent: bool,
    /// Child columns no two children of one parent share (a person's years): kept when
    /// sampling. Binary or categorical columns of the child table.
    pub unique: Vec<String>,
    /// A child column of categories each parent counts its children by (a household's
    /// women and men): the parent model learns the counts, and each synthetic parent's
    /// children take exactly its counts' values.
    pub count_by: Option<String>,
}

/// The most levels a counted child column may have: each is a parent column of K + 1
/// values in the parent model.
pub const MAX_COUNT_LEVELS: usize = 12;

/// What a finished linked run reports.
#[derive(Debug, Clone)]
pub struct LinkedSummary {
    /// `None` for a non-private run.
    pub epsilon_spent: Option<f64>,
    pub delta: f64,
    pub model: PathBuf,
    pub seconds: f64,
    pub split: Option<Split>,
    pub parents: usize,
    pub children: usize,
    /// Parents with more than K children, and the children the bound left out (local
    /// diagnostics: shown to the user, never written in a release).
    pub truncated_parents: usize,
    pub dropped_children: usize,
    pub parent_run: RunSummary,
    pub child_run: RunSummary,
}

/// The statement's sentence about the unit.
pub fn unit_statement(key: &str, k: usize) -> String {
    format!(
        "The privacy unit is one parent with all its children (linked by '{key}'): adding or removing a parent and every child it has changes the release's distribution by at most the stated (ε, δ). A parent contributes at most K = {k} children (a public bound; the first {k} in file order are used)."
    )
}

/// Runs a linked training on this thread, sending the two runs' events.
pub fn run_linked(
    cfg: &LinkedConfig,
    ledger_path: &Path,
    send: &(dyn Fn(Event) + Sync),
    cancel: &AtomicBool,
) -> Result<LinkedSummary, JobError> {
    let t0 = Instant::now();
    let (joined, schemas, books) = prepare(cfg, ledger_path, send)?;
    send(Event::Notice(truncation_notice(
        &joined,
        cfg.link.max_children,
    )));
    let split = match cfg.parent.epsilon.is_finite() {
        true => Some(
            Split::new(
                cfg.parent.epsilon,
                cfg.parent.delta,
                cfg.parent_share,
                cfg.link.max_children,
            )
            .map_err(JobError::Usage)?,
        ),
        false => None,
    };
    let mut reservation = match &split {
        Some(s) => Some(books::reserve(ledger_path, &books, s, cfg, send)?),
        None => {
            books::record_exposure(ledger_path, &books, cfg)?;
            None
        }
    };
    let trained = match split.map(|s| noisy_counts(&joined, &s, cfg.parent.seed)) {
        Some(None) => Err(JobError::Training(
            "the record counts could not be released".into(),
        )),
        Some(Some(c)) => train_parts(
            cfg,
            &joined,
            schemas,
            (split.as_ref(), Some(c)),
            send,
            cancel,
        ),
        None => train_parts(cfg, &joined, schemas, (None, None), send, cancel),
    };
    if let Some((ledger, ids)) = reservation.as_mut() {
        // The plan stays spent whatever happened: both runs may have read the rows.
        let charges = split.map(|s| s.charges()).unwrap_or_default();
        for id in ids {
            ledger.settle(*id, &charges)?;
        }
    }
    let (parent_run, child_run, dir) = trained?;
    model::pack(
        &dir.path().join("parent.dpsynth"),
        &dir.path().join("child.dpsynth"),
        &model::LinkedHeader::new(cfg, split.as_ref()),
        &cfg.parent.out,
    )?;
    Ok(LinkedSummary {
        epsilon_spent: split.map(|_| cfg.parent.epsilon),
        delta: cfg.parent.delta,
        model: cfg.parent.out.clone(),
        seconds: t0.elapsed().as_secs_f64(),
        split,
        parents: joined.parents.n_rows,
        children: joined.children.n_rows,
        truncated_parents: joined.truncated_parents,
        dropped_children: joined.dropped_children,
        parent_run,
        child_run,
    })
}

/// Everything checked before anything is reserved: the request, both files, the link,
/// the schemas and every cell against its public domain. Returns the derived tables,
/// their schemas and the pair's ledger key.
fn prepare(
    cfg: &LinkedConfig,
    ledger_path: &Path,
    send: &(dyn Fn(Event) + Sync),
) -> Result<(Joined, Option<(Schema, Schema)>, Books), JobError> {
    refuse_unsupported(cfg)?;
    let parent = open_table(&cfg.parent.data)?;
    let child = open_table(&cfg.child)?;
    let cfg = &claims::checked(cfg, ledger_path, (&parent.0, &child.0), send)?;
    let levels = count_levels(cfg)?;
    let count_by = cfg.count_by.as_deref().zip(levels.as_deref());
    let joined = linked::join_counting(&parent.1, &child.1, &cfg.link, count_by)
        .map_err(|e| JobError::Usage(e.to_string()))?;
    let schemas = derived_schemas(cfg, count_by)?;
    if let Some((ps, cs)) = &schemas {
        refuse_estimates(ps, cs)?;
    }
    check_unique(cfg, &child.1)?;
    if let Some((ps, cs)) = &schemas {
        // A run's own check of the cells would come after the pair's reservation.
        let fits = |s: &Schema, t: &crate::data::Table, which: &str, path: &Path| {
            s.check_fits(t, &[])
                .map_err(|e| JobError::Usage(format!("the {which} table {}: {e}", path.display())))
        };
        fits(ps, &joined.parents, "parent", &cfg.parent.data)?;
        // The child's own columns, against the file's rows (so an error names the file's
        // row, whatever the bound cut); the parent's columns were checked above.
        let mut own = cs.clone();
        own.columns
            .retain(|c| !c.name.starts_with(linked::PARENT_PREFIX));
        let rows = child.1.keep_columns(|n| n != cfg.link.key);
        fits(&own, &rows, "child", &cfg.child)?;
        // A run refuses domains read off the rows; the pair must before its reservation.
        let read: Vec<&str> = ps
            .non_private_domains()
            .into_iter()
            .chain(cs.non_private_domains())
            .collect();
        if !read.is_empty() && !matches!(cfg.parent.domains, DomainPolicy::AllowData) {
            return Err(JobError::Usage(format!(
                "the domains of {} were read off the rows: give them in the tables' public schemas (or allow data domains, which the guarantee does not cover)",
                read.join(", ")
            )));
        }
    }
    let books = Books {
        pair: content_key(&parent.0, &child.0),
        parent: parent.0,
        child: child.0,
        bytes: [books::pair_byte_key(&parent.2, &child.2), parent.2, child.2],
    };
    Ok((joined, schemas, books))
}

/// Starts a linked run on a worker thread.
pub fn spawn_linked(cfg: LinkedConfig, ledger_path: PathBuf) -> crate::job::Worker<LinkedEvent> {
    crate::job::spawn_worker(
        cfg.parent.threads,
        None,
        move |cancel, send| run_linked(&cfg, &ledger_path, &|e| send(LinkedEvent::Run(e)), cancel),
        |result, send| send(LinkedEvent::Finished(result)),
    )
}

/// A linked run's events: the two runs' own, then the end.
pub enum LinkedEvent {
    Run(Event),
    Finished(Result<LinkedSummary, JobError>),
}

fn refuse_unsupported(cfg: &LinkedConfig) -> Result<(), JobError> {
    let p = &cfg.parent;
    if !METHODS.contains(&p.method.as_str()) {
        return Err(JobError::Usage(format!(
            "linked tables train with {} (marginal methods, which draw each child given its parent), not '{}'",
            METHODS.join(" or "),
            p.method
        )));
    }
    let why = if matches!(p.domains, DomainPolicy::Estimate { .. }) {
        Some(
            "estimating domains privately is not available for linked tables: give both tables' public schemas (--schema, --child-schema)",
        )
    } else if p.public_rows.is_some() {
        Some(
            "--public-rows does not apply to linked tables: their two record counts are released with noise, a small share of the budget",
        )
    } else if p.stream {
        Some("--stream is not available for linked tables: both are read into memory")
    } else if p.boost.is_some() {
        Some("--boost is for the GAN methods, not linked tables")
    } else {
        None
    };
    match why {
        Some(w) => Err(JobError::Usage(w.into())),
        None => Ok(()),
    }
}

/// A column marked to be estimated privately would be estimated inside the child run,
/// where one parent's k children count k times: its threshold would let a level through
/// at up to about k·δ, and the pair books zCDP only. Refused under every domain policy,
/// before anything is reserved, until a unit-level estimate exists.
fn refuse_estimates(parent: &Schema, child: &Schema) -> Result<(), JobError> {
    use crate::data::schema::Provenance;
    let marked: Vec<String> = [("parent", parent), ("child", child)]
        .into_iter()
        .flat_map(|(which, s)| {
            s.columns
                .iter()
                .filter(|c| c.provenance == Provenance::ToEstimate)
                .filter(move |c| which == "parent" || !c.name.starts_with(linked::PARENT_PREFIX))
                .map(move |c| format!("'{}' ({which} table)", c.name))
        })
        .collect();
    if marked.is_empty() {
        return Ok(());
    }
    Err(JobError::Usage(format!(
        "{} {} marked to be estimated privately, which linked tables do not offer (one parent's children would count several times in the estimate): type {} domain in the table's column editor or schema, or drop the column",
        marked.join(", "),
        if marked.len() == 1 { "is" } else { "are" },
        if marked.len() == 1 { "its" } else { "their" }
    )))
}

/// Each column named one-per-parent is a child column of categories.
fn check_unique(cfg: &LinkedConfig, child: &crate::data::Table) -> Result<(), JobError> {
    use crate::data::schema::Kind;
    for u in &cfg.unique {
        let kind = cfg
            .child_schema
            .as_ref()
            .and_then(|s| s.column(u))
            .map(|c| c.kind);
        if child.column(u).is_none() || *u == cfg.link.key {
            return Err(JobError::Usage(format!(
                "--unique '{u}' is not a column of the child table"
            )));
        }
        if kind.is_some_and(|k| !matches!(k, Kind::Binary | Kind::Categorical)) {
            return Err(JobError::Usage(format!(
                "--unique '{u}' must be a column of categories (a year, a member's role), not a number"
            )));
        }
    }
    Ok(())
}

/// A table file opened with its content key.
/// A table's content key, its rows and its file's byte key.
fn open_table(path: &Path) -> Result<(String, crate::data::Table, String), JobError> {
    let opened = crate::job::workspace::open(path, &mut |_, _| {})?;
    match opened.rows {
        crate::job::workspace::Rows::Table(t) => {
            Ok((opened.content_key, (*t).clone(), opened.byte_key))
        }
        _ => Err(JobError::file(
            path,
            "linked tables are tables; this file holds images",
        )),
    }
}

fn truncation_notice(j: &Joined, k: usize) -> String {
    if j.truncated_parents == 0 {
        format!(
            "{} parents, {} children; no parent has more than K = {k} children",
            j.parents.n_rows, j.children.n_rows
        )
    } else {
        format!(
            "{} parents, {} children kept; {} parents have more than K = {k} children, so {} children are left out (seen here only, never released)",
            j.parents.n_rows, j.children.n_rows, j.truncated_parents, j.dropped_children
        )
    }
}

/// The derived tables' schemas, from the given ones (`None` when the run reads domains
/// off the rows, which the two runs then do as any run does).
/// The public levels of the child column the parents count by (its schema's categories).
pub fn count_levels(cfg: &LinkedConfig) -> Result<Option<Vec<String>>, JobError> {
    use crate::data::schema::{Domain, Kind};
    let Some(col) = &cfg.count_by else {
        return Ok(None);
    };
    let spec = cfg
        .child_schema
        .as_ref()
        .and_then(|s| s.column(col))
        .ok_or_else(|| {
            JobError::Usage(format!(
                "--count-by '{col}' is not a column of the child table's schema"
            ))
        })?;
    match (&spec.kind, &spec.domain) {
        (Kind::Binary | Kind::Categorical, Some(Domain::Categories(levels)))
            if levels.len() <= MAX_COUNT_LEVELS && !spec.missing =>
        {
            Ok(Some(levels.clone()))
        }
        _ => Err(JobError::Usage(format!(
            "--count-by '{col}' must be a complete column of at most {MAX_COUNT_LEVELS} public categories (a member's sex, a year's work status)"
        ))),
    }
}

fn derived_schemas(
    cfg: &LinkedConfig,
    count_by: linked::CountBy<'_>,
) -> Result<Option<(Schema, Schema)>, JobError> {
    let parent = match (&cfg.parent.inline_schema, &cfg.parent.schema) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(p)) => Some(Schema::load(p).map_err(|e| JobError::Usage(e.to_string()))?),
        (None, None) => None,
    };
    let child = cfg.child_schema.clone();
    match (parent, child) {
        (Some(p), Some(c)) => {
            let usage = |e: crate::data::DataError| JobError::Usage(e.to_string());
            let p = linked::parent_schema(&p, &cfg.link, count_by).map_err(usage)?;
            let c = linked::child_schema(&c, &p, &cfg.link).map_err(usage)?;
            Ok(Some((p, c)))
        }
        (None, None) if matches!(cfg.parent.domains, DomainPolicy::AllowData) => Ok(None),
        _ => Err(JobError::Usage(
            "linked tables need both public schemas: --schema for the parent table and --child-schema for the child table (or --allow-data-domains, which the guarantee does not cover)".into(),
        )),
    }
}

/// The two runs, each on its derived table in a private folder, paid on a scratch ledger.
fn train_parts(
    cfg: &LinkedConfig,
    joined: &Joined,
    schemas: Option<(Schema, Schema)>,
    (split, counts): (Option<&Split>, Option<(u64, u64)>),
    send: &(dyn Fn(Event) + Sync),
    cancel: &AtomicBool,
) -> Result<(RunSummary, RunSummary, tempfile::TempDir), JobError> {
    let dir = scratch::folder()?;
    let at = |name: &str| dir.path().join(name);
    let write = |t: &crate::data::Table, name: &str| {
        crate::data::export::write_csv(t, &at(name)).map_err(|e| JobError::file(&at(name), e))
    };
    let children = if cfg.independent {
        joined
            .children
            .keep_columns(|n| !n.starts_with(linked::PARENT_PREFIX))
    } else {
        joined.children.clone()
    };
    write(&joined.parents, "parent.csv")?;
    write(&children, "child.csv")?;
    let (eps_p, eps_c) = match split {
        Some(s) => s.run_epsilons(cfg.parent.delta),
        None => (f64::INFINITY, f64::INFINITY),
    };
    let mut parent_cfg = part_config(cfg, at("parent.csv"), at("parent.dpsynth"), eps_p);
    parent_cfg.force_delta = cfg.parent.force_delta;
    let mut child_cfg = part_config(cfg, at("child.csv"), at("child.dpsynth"), eps_c);
    child_cfg.seed = cfg.parent.seed.map(|s| s.wrapping_add(1));
    if let Some((p, c)) = counts {
        parent_cfg.public_rows = Some(p as usize);
        child_cfg.public_rows = Some(c as usize);
    }
    if let Some((p, mut c)) = schemas {
        if cfg.independent {
            c.columns
                .retain(|col| !col.name.starts_with(linked::PARENT_PREFIX));
        }
        parent_cfg.inline_schema = Some(p);
        child_cfg.inline_schema = Some(c);
    }
    let scratch = at("ledger.sqlite");
    for c in [&parent_cfg, &child_cfg] {
        if let Some(s) = &c.inline_schema {
            claims::vouch(&scratch, &c.data, s)?;
        }
    }
    // The scratch ledger's own news (a fresh budget, a δ adopted) is not the user's.
    let forward = |e: Event| match &e {
        Event::Notice(m)
            if m.starts_with("this dataset had no total budget")
                || m.starts_with("nothing had been spent on this dataset") => {}
        _ => send(e),
    };
    let send = &forward;
    send(Event::Notice("parents: training the parent table".into()));
    // The harness allows only the child model's calls K times their row-level Δ.
    crate::privacy::probe::enter_part("parent");
    let parent_run = crate::job::run_part(&parent_cfg, &scratch, send, cancel)?;
    send(Event::Notice(
        "children: training the child table, each child beside its parent".into(),
    ));
    crate::privacy::probe::enter_part("child");
    let child_run = crate::job::run_part(&child_cfg, &scratch, send, cancel)?;
    Ok((parent_run, child_run, dir))
}

/// The two record counts the runs plan with, released with noise (parents: sensitivity
/// 1; children: K, a unit's most rows). `None` when the budget leaves no noise to draw.
fn noisy_counts(j: &Joined, s: &Split, seed: Option<u64>) -> Option<(u64, u64)> {
    use rand::SeedableRng;
    let mut rng = match seed {
        Some(x) => rand::rngs::StdRng::seed_from_u64(x ^ 0x6c69_6e6b),
        None => rand::rngs::StdRng::from_os_rng(),
    };
    let rc = crate::privacy::record_count::release_count;
    crate::privacy::probe::enter_part("counts");
    let p = rc(j.parents.n_rows as u64, 1.0, s.count_rho, &mut rng)?;
    let c = rc(j.children.n_rows as u64, s.k as f64, s.count_rho, &mut rng)?;
    Some((p, c))
}

fn part_config(cfg: &LinkedConfig, data: PathBuf, out: PathBuf, epsilon: f64) -> RunConfig {
    let mut overrides = cfg.parent.overrides.clone();
    if !overrides.contains_key("bins") {
        let preset = crate::job::preset_settings(&cfg.parent.method, &cfg.parent.preset)
            .ok()
            .and_then(|s| s.get("bins").and_then(|b| b.as_u64()));
        if let Some(b) = preset {
            overrides.insert("bins".into(), b.min(LINKED_BINS).into());
        }
    }
    RunConfig {
        overrides,
        data,
        out,
        epsilon,
        schema: None,
        inline_schema: None,
        opened: None,
        checkpoints: None,
        charge_to: None,
        // The derived child table may pass 1/δ rows where the parents do not: δ is the
        // unit-level run's, checked on the parents.
        force_delta: true,
        // A thresholded count of a child value would count one unit's k children k
        // times: no exact values are looked for in a pair's parts.
        exact_values: false,
        ..cfg.parent.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_s_key_depends_on_both_tables_in_order() {
        let a = content_key("p", "c");
        assert_eq!(a, content_key("p", "c"));
        assert_ne!(a, content_key("c", "p"));
        assert_ne!(a, content_key("p", "d"));
        assert_ne!(content_key("ab", "c"), content_key("a", "bc"));
    }
}
