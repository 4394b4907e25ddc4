//! What the window and the command line ask of a linked model once trained: both tables
//! written with their statements, and the pair judged against the real one.

use std::path::Path;

use super::model::{LinkedModel, LinkedRows, write};
use crate::data::Table;
use crate::data::schema::Schema;
use crate::eval::linked::{LinkedReport, Pair};
use crate::job::JobError;

/// Samples `rows` parents and their children from the model and writes them to `out` and
/// `child_out`, each with its statement beside it (a fixed `seed` reproduces them).
pub fn export_pair(
    model: &Path,
    rows: usize,
    seed: Option<u64>,
    (out, child_out): (&Path, &Path),
) -> Result<(LinkedModel, LinkedRows), JobError> {
    if out.as_os_str().is_empty() || child_out.as_os_str().is_empty() {
        return Err(JobError::Usage("type both files' paths first".into()));
    }
    let m = LinkedModel::load(model)?;
    let drawn = m.sample(rows, seed)?;
    write(&m, &drawn, out, child_out)?;
    Ok((m, drawn))
}

/// The real pair the window judges a model against: the open parent table and its child.
pub struct RealPair<'a> {
    pub parents: &'a Table,
    pub parent_schema: &'a Schema,
    pub children: &'a Table,
    pub child_schema: &'a Schema,
    pub key: &'a str,
}

/// As many parents as the real table has (at most 20,000) drawn from the model, judged
/// across the link against the real pair; a fifth of the real parents, with their
/// children, is held out to score the two-table task (the window has no test file).
pub fn judge_pair(model: &Path, real: &RealPair<'_>) -> Result<LinkedReport, JobError> {
    let m = LinkedModel::load(model)?;
    let s = m.sample(real.parents.n_rows.clamp(1, 20_000), Some(0))?;
    let whole = Pair {
        parents: real.parents,
        children: real.children,
    };
    let ((tp, tc), (hp, hc)) = crate::eval::linked::split_pair(&whole, real.key, 0.2, 0);
    let pair = |parents, children| Pair { parents, children };
    crate::eval::linked::evaluate(
        (
            &pair(&tp, &tc),
            &pair(&hp, &hc),
            &pair(&s.parents, &s.children),
        ),
        (real.parent_schema, real.child_schema),
        real.key,
        None,
        0,
    )
    .map_err(|e| JobError::Training(format!("judging the pair: {e}")))
}
