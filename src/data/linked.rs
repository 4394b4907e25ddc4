//! Two tables joined by a key: a parent (a household, a patient, a person) and its
//! children (members, visits, years), synthesized together.
//!
//! The privacy unit is a parent with all its children, so one person's eight household
//! members move the release as one record does, not eight. That needs a public bound `K`
//! on the children one parent contributes: a parent with more keeps its first `K` (in file
//! order, so another parent's removal never changes which of a parent's children are
//! kept). The methods then see two derived tables: each parent with its number of children
//! ([`COUNT_COLUMN`], 0–K), and each kept child with its parent's columns beside its own
//! ([`PARENT_PREFIX`]), where one unit is at most `K` rows. Keys are identifiers: they
//! never reach a derived table, and synthetic keys are fresh.

use std::collections::HashMap;

use super::DataError;
use super::schema::{ColumnSpec, Schema};
use super::table::{Column, Table, Values};

/// The derived parent column holding the number of children kept (0–K).
pub const COUNT_COLUMN: &str = "n_children";

/// The derived parent column counting the children whose `column` is `level` (0–K), for
/// a child column the user counts by (a household's women, a person's years in work).
pub fn count_column(column: &str, level: &str) -> String {
    format!("{COUNT_COLUMN}:{column}={level}")
}

/// A child column of categories counted per parent, with its public levels.
pub type CountBy<'a> = Option<(&'a str, &'a [String])>;

/// The prefix of a parent's columns in the derived child table.
pub const PARENT_PREFIX: &str = "parent.";

/// The most children a parent may contribute is a user's choice; beyond this the child
/// measurements' noise (scaled by K) leaves nothing to learn.
pub const MAX_K: usize = 1000;

/// How the tables are linked: the key column (named alike in both) and the bound K.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub key: String,
    pub max_children: usize,
    /// The fewest children a parent has, as a public fact (a person in a panel has at
    /// least one year): the count's domain starts there, so no synthetic parent has
    /// fewer. 0 when parents may have none.
    pub min_children: usize,
}

/// The two derived tables and what truncation did (a local diagnostic: counts read off
/// the rows, shown to the user before a run, never released).
#[derive(Debug, Clone)]
pub struct Joined {
    /// The parents, without the key, with [`COUNT_COLUMN`].
    pub parents: Table,
    /// The kept children, without the key, with their parent's columns (the count
    /// included) under [`PARENT_PREFIX`].
    pub children: Table,
    /// Parents with more than K children.
    pub truncated_parents: usize,
    /// Children left out by the bound.
    pub dropped_children: usize,
    /// Each parent's children in the files, before the bound (for the preview).
    pub sizes: Vec<usize>,
}

/// A key cell as the join compares it: trimmed text, numbers in one form (a key read as
/// `7` in one file and `"7"` or `7.0` in the other is one key).
pub fn key_text(c: &Column, row: usize) -> Option<String> {
    let t = c.text(row)?;
    let t = t.trim();
    if t.is_empty() {
        return None;
    }
    Some(crate::util::fmt::parse_number(t).map_or_else(|| t.to_string(), crate::util::fmt::number))
}

fn key_column<'a>(t: &'a Table, key: &str, which: &str) -> Result<&'a Column, DataError> {
    t.column(key).ok_or_else(|| {
        DataError::Schema(format!(
            "the {which} table has no column '{key}' (its columns: {}); name the key column both tables share with --key",
            t.columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// Checks the link and builds the derived tables. Every error here comes before anything
/// is reserved: a key missing in either table, a blank or repeated parent key, a child
/// whose key has no parent, K < 1, and column names the derived tables would repeat.
pub fn join(parent: &Table, child: &Table, link: &Link) -> Result<Joined, DataError> {
    join_counting(parent, child, link, None)
}

/// [`join`], the parents also counting their kept children by each level of `count_by`.
pub fn join_counting(
    parent: &Table,
    child: &Table,
    link: &Link,
    count_by: CountBy<'_>,
) -> Result<Joined, DataError> {
    let k = link.max_children;
    if k < 1 || k > MAX_K {
        return Err(DataError::Schema(format!(
            "the most children one parent may contribute (--max-children) must be 1 to {MAX_K}, not {k}"
        )));
    }
    let pk = key_column(parent, &link.key, "parent")?;
    let ck = key_column(child, &link.key, "child")?;
    let mut index: HashMap<String, usize> = HashMap::with_capacity(parent.n_rows);
    for r in 0..parent.n_rows {
        let key = key_text(pk, r).ok_or_else(|| {
            DataError::Schema(format!(
                "row {} of the parent table has no '{}': every parent needs a key",
                r + 1,
                link.key
            ))
        })?;
        if let Some(first) = index.insert(key.clone(), r) {
            return Err(DataError::Schema(format!(
                "the parent key '{key}' is on rows {} and {} of the parent table: each parent must appear once",
                first + 1,
                r + 1
            )));
        }
    }
    let mut sizes = vec![0usize; parent.n_rows];
    let mut kept_children = Vec::with_capacity(child.n_rows);
    let mut owner = Vec::with_capacity(child.n_rows);
    for r in 0..child.n_rows {
        let key = key_text(ck, r).ok_or_else(|| {
            DataError::Schema(format!(
                "row {} of the child table has no '{}': every child needs its parent's key",
                r + 1,
                link.key
            ))
        })?;
        let p = *index.get(&key).ok_or_else(|| {
            DataError::Schema(format!(
                "row {} of the child table has the key '{key}', which no parent has",
                r + 1
            ))
        })?;
        sizes[p] += 1;
        if sizes[p] <= k {
            kept_children.push(r);
            owner.push(p);
        }
    }
    if let Some(r) = sizes.iter().position(|s| *s < link.min_children) {
        return Err(DataError::Schema(format!(
            "row {} of the parent table has {} children, fewer than the {} every parent has (--min-children)",
            r + 1,
            sizes[r],
            link.min_children
        )));
    }
    let mut parents = with_count(parent, &link.key, &sizes, k)?;
    if let Some(by) = count_by {
        counts_by(&mut parents, child, by, (&kept_children, &owner))?;
    }
    let children = with_parent(child, &link.key, &parents, (&kept_children, &owner))?;
    Ok(Joined {
        truncated_parents: sizes.iter().filter(|s| **s > k).count(),
        dropped_children: child.n_rows - kept_children.len(),
        parents,
        children,
        sizes,
    })
}

/// Adds to the parents, per level of the counted child column, how many of their kept
/// children have it.
fn counts_by(
    parents: &mut Table,
    child: &Table,
    (column, levels): (&str, &[String]),
    (kept, owner): (&[usize], &[usize]),
) -> Result<(), DataError> {
    let c = child.column(column).ok_or_else(|| {
        DataError::Schema(format!(
            "the child table has no column '{column}' to count by"
        ))
    })?;
    for level in levels {
        let mut n = vec![0f64; parents.n_rows];
        for (&r, &p) in kept.iter().zip(owner) {
            if c.text(r).is_some_and(|t| t.trim() == level) {
                n[p] += 1.0;
            }
        }
        parents.columns.push(Column {
            name: count_column(column, level),
            values: Values::Number(n.into_iter().map(Some).collect()),
        });
    }
    Ok(())
}

/// The parents without the key, with their kept children's number.
fn with_count(parent: &Table, key: &str, sizes: &[usize], k: usize) -> Result<Table, DataError> {
    let mut t = parent.keep_columns(|n| n != key);
    if t.column(COUNT_COLUMN).is_some() {
        return Err(DataError::Schema(format!(
            "the parent table has a column named '{COUNT_COLUMN}', the name the link gives each parent's number of children; rename it"
        )));
    }
    t.columns.push(Column {
        name: COUNT_COLUMN.to_string(),
        values: Values::Number(sizes.iter().map(|s| Some((*s).min(k) as f64)).collect()),
    });
    Ok(t)
}

/// The kept children without the key, each with its parent's columns.
fn with_parent(
    child: &Table,
    key: &str,
    parents: &Table,
    (rows, owner): (&[usize], &[usize]),
) -> Result<Table, DataError> {
    let mut t = child.keep_columns(|n| n != key).rows(rows);
    for c in &parents.columns {
        let name = format!("{PARENT_PREFIX}{}", c.name);
        if t.column(&name).is_some() {
            return Err(DataError::Schema(format!(
                "the child table has a column named '{name}', the name its parent's '{}' takes in the linked model; rename it",
                c.name
            )));
        }
        let one = Table {
            columns: vec![c.clone()],
            n_rows: parents.n_rows,
        }
        .rows(owner);
        let mut col = one.columns.into_iter().next().ok_or_else(|| {
            DataError::Schema("a parent column vanished while joining".to_string())
        })?;
        col.name = name;
        t.columns.push(col);
    }
    Ok(t)
}

/// The derived parent table's schema: the parent's columns without the key, and the count
/// of children as a category of 0–K (public: K is).
pub fn parent_schema(
    parent: &Schema,
    link: &Link,
    count_by: CountBy<'_>,
) -> Result<Schema, DataError> {
    let mut s = parent.clone();
    s.columns.retain(|c| c.name != link.key);
    if s.column(COUNT_COLUMN).is_some() {
        return Err(DataError::Schema(format!(
            "the parent schema has a column named '{COUNT_COLUMN}', the name the link gives each parent's number of children; rename it"
        )));
    }
    if link.min_children > link.max_children {
        return Err(DataError::Schema(format!(
            "the fewest children a parent has ({}) is more than K ({})",
            link.min_children, link.max_children
        )));
    }
    let count = |name: &str, low: usize| -> Result<ColumnSpec, DataError> {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "kind": "categorical",
            "domain": {"categories": (low..=link.max_children).map(|k| k.to_string()).collect::<Vec<_>>()},
            "provenance": "user_provided"
        }))
        .map_err(|e| DataError::Schema(format!("the count column's schema: {e}")))
    };
    s.columns.push(count(COUNT_COLUMN, link.min_children)?);
    if let Some((column, levels)) = count_by {
        for level in levels {
            s.columns.push(count(&count_column(column, level), 0)?);
        }
    }
    s.target = None;
    s.validate()?;
    Ok(s)
}

/// The derived child table's schema: the child's columns without the key, then the
/// derived parent's under [`PARENT_PREFIX`] (the parent's rules stay with the parent
/// model; the child's own rules are kept).
pub fn child_schema(child: &Schema, parent: &Schema, link: &Link) -> Result<Schema, DataError> {
    let mut s = child.clone();
    s.columns.retain(|c| c.name != link.key);
    for c in &parent.columns {
        let mut c = c.clone();
        c.name = format!("{PARENT_PREFIX}{}", c.name);
        if s.column(&c.name).is_some() {
            return Err(DataError::Schema(format!(
                "the child schema has a column named '{}', the name a parent column takes in the linked model; rename it",
                c.name
            )));
        }
        s.columns.push(c);
    }
    s.target = None;
    s.validate()?;
    Ok(s)
}

/// The share of parents with each number of children 0..=k (sizes above k count as k).
pub fn size_shares(sizes: impl IntoIterator<Item = usize>, k: usize) -> Vec<f64> {
    let mut counts = vec![0f64; k + 1];
    let mut n = 0f64;
    for s in sizes {
        counts[s.min(k)] += 1.0;
        n += 1.0;
    }
    if n > 0.0 {
        for c in &mut counts {
            *c /= n;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::table::TextColumn;

    fn num(name: &str, v: &[f64]) -> Column {
        Column {
            name: name.into(),
            values: Values::Number(v.iter().map(|x| Some(*x)).collect()),
        }
    }

    fn text(name: &str, v: &[&str]) -> Column {
        Column {
            name: name.into(),
            values: Values::Text(TextColumn::from_cells(v.iter().map(|s| Some(*s)))),
        }
    }

    fn tables() -> (Table, Table) {
        let parent = Table {
            columns: vec![
                num("hh", &[1.0, 2.0, 3.0]),
                text("tenure", &["own", "rent", "own"]),
            ],
            n_rows: 3,
        };
        let child = Table {
            columns: vec![
                text("hh", &["2", "1", "2", "2", "1"]),
                num("age", &[30.0, 40.0, 5.0, 7.0, 41.0]),
            ],
            n_rows: 5,
        };
        (parent, child)
    }

    fn link(k: usize) -> Link {
        Link {
            key: "hh".into(),
            max_children: k,
            min_children: 0,
        }
    }

    #[test]
    fn children_carry_their_parent_and_parents_their_count() {
        let (p, c) = tables();
        let j = join(&p, &c, &link(8)).unwrap();
        assert_eq!(j.parents.column("hh"), None);
        assert_eq!(j.children.column("hh"), None);
        let count: Vec<String> = (0..3)
            .map(|r| j.parents.column(COUNT_COLUMN).unwrap().text(r).unwrap())
            .collect();
        assert_eq!(count, ["2", "3", "0"]);
        let tenure: Vec<String> = (0..5)
            .map(|r| j.children.column("parent.tenure").unwrap().text(r).unwrap())
            .collect();
        assert_eq!(tenure, ["rent", "own", "rent", "rent", "own"]);
        assert_eq!((j.truncated_parents, j.dropped_children), (0, 0));
    }

    #[test]
    fn a_parent_past_k_keeps_its_first_children() {
        let (p, c) = tables();
        let j = join(&p, &c, &link(2)).unwrap();
        assert_eq!((j.truncated_parents, j.dropped_children), (1, 1));
        let ages: Vec<String> = (0..4)
            .map(|r| j.children.column("age").unwrap().text(r).unwrap())
            .collect();
        // Household 2's third member (age 7) is the one left out.
        assert_eq!(ages, ["30", "40", "5", "41"]);
        assert_eq!(
            j.parents.column(COUNT_COLUMN).unwrap().text(1).unwrap(),
            "2"
        );
        assert_eq!(j.sizes, [2, 3, 0]);
    }

    #[test]
    fn bad_links_say_what_is_wrong() {
        let (p, c) = tables();
        let e = |r: Result<Joined, DataError>| r.unwrap_err().to_string();
        assert!(e(join(&p, &c, &link(0))).contains("1 to"));
        let mut other = link(3);
        other.key = "id".into();
        assert!(e(join(&p, &c, &other)).contains("parent table has no column 'id'"));
        let mut dup = p.clone();
        dup.columns[0] = num("hh", &[1.0, 2.0, 1.0]);
        assert!(e(join(&dup, &c, &link(3))).contains("rows 1 and 3"));
        let mut orphan = c.clone();
        orphan.columns[0] = text("hh", &["2", "1", "9", "2", "1"]);
        assert!(e(join(&p, &orphan, &link(3))).contains("'9', which no parent has"));
        let mut clash = p.clone();
        clash.columns.push(num(COUNT_COLUMN, &[1.0, 1.0, 1.0]));
        assert!(e(join(&clash, &c, &link(3))).contains("rename it"));
        let mut blank = c.clone();
        blank.columns[0] = Column {
            name: "hh".into(),
            values: Values::Text(TextColumn::from_cells([
                Some("1"),
                None,
                Some("2"),
                Some("2"),
                Some("1"),
            ])),
        };
        assert!(e(join(&p, &blank, &link(3))).contains("row 2 of the child table"));
    }

    #[test]
    fn shares_sum_to_one() {
        let s = size_shares([0, 1, 1, 5, 9], 4);
        assert_eq!(s, [0.2, 0.4, 0.0, 0.0, 0.4]);
    }
}
