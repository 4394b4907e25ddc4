//! How the stored entries are read back and added up (RDP curves and charges).

use rusqlite::{Connection, OptionalExtension as _, params};

use super::DEFAULT_BUDGET;
use crate::privacy::accountant::Budget;
use crate::privacy::compose::Composed;
use crate::privacy::convert::to_epsilon;
use crate::privacy::mechanism::{Charge, charges_curve};

/// What a dataset's entries add up to: the summed RDP curve, and every charge when all
/// entries stored theirs.
#[derive(Debug, Clone)]
pub(super) struct Book {
    pub(super) curve: Vec<f64>,
    pub(super) charges: Option<Vec<Charge>>,
}

impl Default for Book {
    fn default() -> Self {
        Self {
            curve: Vec::new(),
            charges: Some(Vec::new()),
        }
    }
}

impl Book {
    pub(super) fn of(plan: &[Charge], orders: &[f64]) -> Self {
        Self {
            curve: charges_curve(plan, orders),
            charges: Some(plan.to_vec()),
        }
    }

    pub(super) fn read(conn: &Connection, dataset: &str, orders: &[f64]) -> rusqlite::Result<Self> {
        let n = orders.len();
        let mut book = Book {
            curve: vec![0.0; n],
            charges: Some(Vec::new()),
        };
        for row in read_entries(conn, dataset, n)? {
            book = book.merge(
                Book {
                    curve: row.curve,
                    charges: row.charges,
                },
                n,
            );
        }
        Ok(book)
    }

    pub(super) fn merge(self, other: Book, n: usize) -> Self {
        let mut curve = if self.curve.is_empty() {
            vec![0.0; n]
        } else {
            self.curve
        };
        for (t, x) in curve.iter_mut().zip(&other.curve) {
            *t += x;
        }
        let charges = match (self.charges, other.charges) {
            (Some(mut a), Some(b)) => {
                a.extend(b);
                Some(a)
            }
            _ => None,
        };
        Self { curve, charges }
    }

    pub(super) fn with(&self, plan: &[Charge], orders: &[f64]) -> Self {
        self.clone().merge(Book::of(plan, orders), orders.len())
    }

    /// The tighter of RDP (the summed curve) and PLD (the charges, when all are known).
    /// Whether the book fits `budget`: RDP first (microseconds), PLD only when RDP alone
    /// does not show it (the reported figure is the smaller, so either suffices).
    pub(super) fn fits(&self, orders: &[f64], budget: Budget) -> bool {
        let curve = if self.curve.is_empty() {
            vec![0.0; orders.len()]
        } else {
            self.curve.clone()
        };
        to_epsilon(orders, &curve, budget.delta).epsilon <= budget.epsilon
            || self.compose(orders, budget.delta).epsilon <= budget.epsilon
    }

    pub(super) fn compose(&self, orders: &[f64], delta: f64) -> Composed {
        let curve = if self.curve.is_empty() {
            vec![0.0; orders.len()]
        } else {
            self.curve.clone()
        };
        let rdp = to_epsilon(orders, &curve, delta).epsilon;
        // With every entry's charges known, the same composition as everywhere else (PLD,
        // or PLD plus RDP for a mixed history); the stored curve's RDP otherwise.
        match &self.charges {
            Some(c) => {
                let full = super::super::compose::compose(c, orders, delta);
                if full.epsilon < rdp {
                    full
                } else {
                    Composed::smaller(rdp, full.pld)
                }
            }
            None => Composed::smaller(rdp, None),
        }
    }
}

/// One stored entry, with what it counts: its plan while reserved, its spend once settled.
pub(super) struct Row {
    pub(super) id: i64,
    pub(super) state: String,
    pub(super) description: String,
    pub(super) created: String,
    pub(super) curve: Vec<f64>,
    pub(super) charges: Option<Vec<Charge>>,
    /// The process that holds the reservation (`None`: older entries, or unreadable).
    pub(super) owner: Option<String>,
}

pub(super) fn read_entries(
    conn: &Connection,
    dataset: &str,
    n: usize,
) -> rusqlite::Result<Vec<Row>> {
    let mut stmt = conn.prepare(
        "SELECT id, state, planned_rdp, spent_rdp, planned_charges, spent_charges, description, created, owner FROM entry WHERE dataset_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map(params![dataset], |r| {
        let state: String = r.get(1)?;
        let planned: String = r.get(2)?;
        let spent: Option<String> = r.get(3)?;
        let planned_ch: Option<String> = r.get(4)?;
        let spent_ch: Option<String> = r.get(5)?;
        let settled = state == "settled";
        let curve = if settled {
            parse_curve(spent.as_deref().unwrap_or(&planned), n)
        } else {
            parse_curve(&planned, n)
        };
        // An unreadable curve counts as infinite spend; its charges must not undo that.
        let unreadable = curve.is_none();
        let curve = curve.unwrap_or_else(|| vec![f64::INFINITY; n]);
        let charges = if unreadable {
            None
        } else if settled {
            spent_ch.as_deref().and_then(parse_charges)
        } else {
            planned_ch.as_deref().and_then(parse_charges)
        };
        Ok(Row {
            id: r.get(0)?,
            state,
            description: r.get(6)?,
            created: r.get(7)?,
            curve,
            charges,
            owner: r.get(8)?,
        })
    })?;
    rows.collect()
}

pub(super) fn budget_of(conn: &Connection, dataset: &str) -> rusqlite::Result<(Budget, bool)> {
    let row: Option<(f64, f64)> = conn
        .query_row(
            "SELECT budget_epsilon, budget_delta FROM dataset WHERE id = ?1",
            params![dataset],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(match row {
        Some((epsilon, delta)) => (Budget { epsilon, delta }, false),
        None => (DEFAULT_BUDGET, true),
    })
}

pub(super) fn curve_json(c: &[f64]) -> String {
    // Infinite values are stored as a large sentinel so JSON stays valid.
    let v: Vec<f64> = c
        .iter()
        .map(|x| if x.is_finite() { *x } else { f64::MAX })
        .collect();
    serde_json::to_string(&v).unwrap_or_default()
}

pub(super) fn charges_json(c: &[Charge]) -> String {
    serde_json::to_string(c).unwrap_or_default()
}

/// Stored charges, or `None` when unreadable (the RDP curve then stands alone).
pub(super) fn parse_charges(s: &str) -> Option<Vec<Charge>> {
    serde_json::from_str(s).ok()
}

/// A stored curve, or `None` when unreadable (it then counts as infinite spend:
/// conservative, never lost).
pub(super) fn parse_curve(s: &str, n: usize) -> Option<Vec<f64>> {
    match serde_json::from_str::<Vec<f64>>(s) {
        Ok(v) if v.len() == n => Some(
            v.into_iter()
                .map(|x| if x >= f64::MAX { f64::INFINITY } else { x })
                .collect(),
        ),
        _ => None,
    }
}
