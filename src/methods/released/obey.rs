//! Sampling that keeps the schema's rules and an optional condition (`sample --where`):
//! rows are drawn, every `->` rule's right value is set from its left one, a value a
//! rule's consequence fixes is set where its condition holds (`… => hours = 0`), and rows
//! that still break a rule or miss the condition are dropped until enough are kept. The
//! columns whose shares that moved are counted ([`rules::Tally`]) so a reshaped table is
//! never silent. All of it reads synthetic rows only: post-processing, no charge.
//!
//! The `->` maps are learnt once per sampling from a pilot draw of at least
//! [`PILOT_ROWS`] rows (for each left value, the right value the model itself favours),
//! so every chunk of a long export uses the same map.

use crate::data::Table;
use crate::data::rules::{self, Cond, Repair, Rule, Stated};
use crate::data::schema::Schema;

use super::super::{MethodError, Result};

/// Rows drawn to learn the `->` maps before the first chunk is kept.
const PILOT_ROWS: usize = 20_000;
/// The fewest rows drawn before a sampling that keeps too few is given up.
const MIN_TRIES: usize = 200_000;
/// A sampling is given up past this many rows drawn per row asked for.
const MAX_DRAWS_PER_ROW: usize = 100;

/// How many rows were drawn, how many of them met the rules and the condition, and how
/// many of those were handed out (the last chunk may pass more than are asked for); and
/// every column whose shares keeping them moved by more than [`rules::MOVED`] (drawn rows
/// against kept ones, both synthetic: no charge).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Acceptance {
    pub drawn: usize,
    pub passed: usize,
    pub kept: usize,
    pub moved: Vec<rules::Moved>,
}

impl Acceptance {
    /// The share of drawn rows that met the rules and the condition (1 when nothing was
    /// drawn).
    pub fn rate(&self) -> f64 {
        if self.drawn == 0 {
            1.0
        } else {
            self.passed as f64 / self.drawn as f64
        }
    }
}

/// What sampling keeps rows by: the schema's rules and a condition.
pub(super) struct Keep<'a> {
    schema: &'a Schema,
    rules: Vec<Stated>,
    cond: Option<&'a Cond>,
}

impl<'a> Keep<'a> {
    pub(super) fn new(schema: &'a Schema, cond: Option<&'a Cond>) -> Result<Self> {
        Ok(Self {
            schema,
            rules: rules::of_schema(schema)?,
            cond,
        })
    }

    fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.cond.is_none()
    }

    /// Draws with `draw(m)` (m decoded rows) until `n` rows are kept, handing them to
    /// `sink` in chunks of at most `chunk`.
    pub(super) fn run(
        &self,
        n: usize,
        chunk: usize,
        draw: &mut dyn FnMut(usize) -> Result<Table>,
        sink: &mut dyn FnMut(Table) -> Result<()>,
    ) -> Result<Acceptance> {
        let mut acc = Acceptance::default();
        if self.is_empty() {
            while acc.kept < n {
                let m = chunk.min(n - acc.kept);
                sink(draw(m)?)?;
                acc.kept += m;
            }
            acc.drawn = acc.kept;
            acc.passed = acc.kept;
            return Ok(acc);
        }
        let determines = self
            .rules
            .iter()
            .any(|r| matches!(r.rule, Rule::Determines { .. }));
        let mut repair: Option<Repair> = None;
        let mut tally = rules::Tally::default();
        let limit = n.saturating_mul(MAX_DRAWS_PER_ROW).max(MIN_TRIES);
        while acc.kept < n {
            let need = n - acc.kept;
            let rate = acc.rate().max(1e-4);
            let mut m = ((need as f64 / rate * 1.1).ceil() as usize + 16).min(chunk);
            if repair.is_none() && determines {
                m = m.max(PILOT_ROWS);
            }
            let t = draw(m)?;
            let map = match &repair {
                Some(r) => r,
                None => repair.insert(Repair::learn(&self.rules, self.schema, &t)?),
            };
            let drawn = t.clone();
            let mut t = rules::enforce(&self.rules, self.schema, t, map)?.table;
            if let Some(c) = self.cond {
                t = rules::select(c, self.schema, t)?;
            }
            tally.add(self.schema, &drawn, &t);
            acc.drawn += m;
            acc.passed += t.n_rows;
            let take = t.n_rows.min(need);
            if take > 0 {
                let idx: Vec<usize> = (0..take).collect();
                sink(if take == t.n_rows { t } else { t.rows(&idx) })?;
                acc.kept += take;
            }
            if acc.kept < n && acc.drawn >= limit {
                return Err(self.too_few(n, &acc));
            }
        }
        acc.moved = tally.moved();
        Ok(acc)
    }

    fn too_few(&self, n: usize, acc: &Acceptance) -> MethodError {
        let what = match (self.rules.is_empty(), self.cond) {
            (false, Some(c)) => format!("the schema's rules and the condition '{c}'"),
            (true, Some(c)) => format!("the condition '{c}'"),
            _ => "the schema's rules".to_string(),
        };
        MethodError::Usage(format!(
            "only {} of {} drawn rows ({:.4} %) meet {what}, too few to keep the {n} rows asked for; loosen it, or ask for fewer rows",
            acc.passed,
            acc.drawn,
            100.0 * acc.rate()
        ))
    }
}
