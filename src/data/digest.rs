//! The content digest that keys a dataset's privacy budget.
//!
//! The same people's records must share one budget however the file is laid out, so the
//! digest is taken of the parsed data, not the bytes: cells are normalised (text trimmed,
//! numbers written in one canonical form, missing cells one marker), columns are taken in
//! name order, and rows as a multiset (each row hashed, the row hashes sorted). A trailing
//! newline, CRLF line ends, re-ordered rows or columns, quoting, or an Excel re-save that
//! keeps the values all give the same key. An image set hashes its decoded pixels and
//! labels the same way, so an IDX folder and its images file share a key.

use sha2::{Digest as _, Sha256};

use super::Dataset;
use super::table::{Table, Values};

/// Tag mixed into every digest, so a change of normalisation gives new keys. (A file seen
/// under an earlier version keeps its spend: the ledger moves the book kept under the
/// file's previous content key, `Ledger::adopt_key`.)
///
/// 2: column names are compared by [`canonical_name`], so `education-num` in a CSV and
/// `education_num` in the Stata or SPSS file it was saved as (those formats forbid `-`)
/// are one dataset.
const VERSION: &[u8] = b"dpsynth-content/2";

/// The tag of a table's digest. 3: the row hashes are summed, not sorted
/// ([`TableDigest`]), so a file too large for memory is keyed by a streamed pass. A book
/// kept under a version-2 key moves to the new key when the file is next opened
/// unchanged (its byte key is the alias, `Ledger::adopt_key`).
const TABLE_VERSION: &[u8] = b"dpsynth-content/3";

/// A column name as the digest sees it: lower case, every run of characters other than
/// letters and digits one `_`, none at the ends. Statistics formats rename columns this
/// way (no `-`, spaces or dots in Stata names), and a key shared too widely only charges
/// more, never less.
pub fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for ch in name.trim().chars() {
        if ch.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.extend(ch.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The canonical text of a number: integers without a fraction, others by Rust's shortest
/// round-trip form, and -0 as 0.
fn number(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    format!("{x:?}")
}

/// The content key of a table.
pub fn table_key(t: &Table) -> String {
    let mut d = TableDigest::new(t);
    d.add(t);
    d.finish()
}

/// The content key of a table read in parts (a streamed scan): the rows' hashes are
/// summed as 256-bit numbers (mod 2²⁵⁶), an order-free multiset hash that needs no memory
/// per row and that parts computed apart (chunks, threads, an engine's partitions) combine
/// by addition. A table read whole and the same table read in parts get one key.
///
/// Why not sorted row hashes (version 2): sorting needs 32 bytes per row in memory at
/// once, 3.2 GB for 100 M rows. A sum cannot be fooled by layout (it is order-free and
/// counts duplicates); two different tables with one sum would need a SHA-256 sum
/// collision, and a key shared too widely only charges more, never less.
/// A row hash as a little-endian 256-bit number.
fn limbs(row: &[u8; 32]) -> [u64; 4] {
    let mut out = [0u64; 4];
    for (k, limb) in out.iter_mut().enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&row[8 * k..8 * k + 8]);
        *limb = u64::from_le_bytes(w);
    }
    out
}

/// `a += b` mod 2²⁵⁶.
fn add256(a: &mut [u64; 4], b: &[u64; 4]) {
    let mut carry = false;
    for (x, y) in a.iter_mut().zip(b) {
        let (s, c1) = x.overflowing_add(*y);
        let (s, c2) = s.overflowing_add(u64::from(carry));
        *x = s;
        carry = c1 || c2;
    }
}

#[derive(Debug, Clone)]
pub struct TableDigest {
    names: Vec<String>,
    order: Vec<usize>,
    sum: [u64; 4],
}

impl TableDigest {
    /// A digest of tables with `t`'s columns (its rows are not added).
    pub fn new(t: &Table) -> Self {
        let names: Vec<String> = t.columns.iter().map(|c| canonical_name(&c.name)).collect();
        let mut order: Vec<usize> = (0..t.columns.len()).collect();
        order.sort_by(|a, b| names[*a].cmp(&names[*b]));
        Self {
            names,
            order,
            sum: [0; 4],
        }
    }

    /// Adds `t`'s rows (its columns must be the ones the digest was made for, by name).
    /// Rows are hashed on every core: the sum does not care in what order.
    pub fn add(&mut self, t: &Table) {
        use rayon::prelude::*;
        let part = (0..t.n_rows)
            .into_par_iter()
            .fold(
                || [0u64; 4],
                |mut acc, r| {
                    add256(&mut acc, &limbs(&self.row_hash(t, r)));
                    acc
                },
            )
            .reduce(
                || [0u64; 4],
                |mut a, b| {
                    add256(&mut a, &b);
                    a
                },
            );
        add256(&mut self.sum, &part);
    }

    fn row_hash(&self, t: &Table, r: usize) -> [u8; 32] {
        let mut h = Sha256::new();
        for &c in &self.order {
            let cell = match &t.columns[c].values {
                Values::Number(v) => v[r].map(number),
                Values::Text(v) => v.get(r).map(|s| {
                    let s = s.trim();
                    // A number stored as text (a quoted cell) reads as that number.
                    crate::util::fmt::parse_number(s).map_or_else(|| s.to_string(), number)
                }),
            };
            match cell {
                Some(s) => {
                    h.update([1u8]);
                    h.update((s.len() as u64).to_le_bytes());
                    h.update(s.as_bytes());
                }
                None => h.update([0u8]),
            }
        }
        h.finalize().into()
    }

    /// Combines a digest of other rows of the same columns (another part of the table).
    pub fn merge(&mut self, other: &Self) {
        add256(&mut self.sum, &other.sum);
    }

    /// The key.
    pub fn finish(&self) -> String {
        let mut h = Sha256::new();
        h.update(TABLE_VERSION);
        for &c in &self.order {
            let name = &self.names[c];
            h.update((name.len() as u64).to_le_bytes());
            h.update(name.as_bytes());
        }
        for limb in &self.sum {
            h.update(limb.to_le_bytes());
        }
        hex(&h.finalize())
    }
}

/// The content key of any dataset.
pub fn content_key(d: &Dataset) -> String {
    match d {
        Dataset::Table(t) => table_key(t),
        Dataset::Images(set) => {
            let side = set.width * set.height;
            let mut rows: Vec<[u8; 32]> = (0..set.len())
                .map(|i| {
                    let mut h = Sha256::new();
                    if let Some(l) = &set.labels {
                        h.update([1u8, l[i]]);
                    } else {
                        h.update([0u8]);
                    }
                    h.update(&set.pixels[i * side..(i + 1) * side]);
                    h.finalize().into()
                })
                .collect();
            rows.sort_unstable();
            let mut h = Sha256::new();
            h.update(VERSION);
            h.update(b"images");
            h.update((set.width as u64).to_le_bytes());
            h.update((set.height as u64).to_le_bytes());
            for r in &rows {
                h.update(r);
            }
            hex(&h.finalize())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Table {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(&p, text).unwrap();
        crate::data::csv::load_csv(&p, &Default::default()).unwrap()
    }

    #[test]
    fn layout_does_not_change_the_key_but_values_do() {
        let base = parse("a,b\n1,x\n2.5,y\n,z\n");
        let k = table_key(&base);
        for same in [
            "a,b\n1,x\n2.5,y\n,z",
            "a,b\r\n1,x\r\n2.5,y\r\n,z\r\n",
            "a,b\n2.5,y\n,z\n1,x\n",
            "b,a\nx,1\ny,2.5\nz,\n",
            "a,b\n1.0,\"x\"\n2.50,y\n,z\n",
            "A,B \n1,x\n2.5,y\n,z\n",
        ] {
            assert_eq!(table_key(&parse(same)), k, "{same:?}");
        }
        for other in [
            "a,b\n1,x\n2.5,y\n",
            "a,b\n1,x\n2.5,y\n,z\n,z\n",
            "a,c\n1,x\n2.5,y\n,z\n",
        ] {
            assert_ne!(table_key(&parse(other)), k, "{other:?}");
        }
    }

    /// The sum of the parts' digests is the whole's: a table read in chunks, in any
    /// order, gets the key of the table read at once.
    #[test]
    fn parts_add_up_to_the_whole() {
        let whole = parse("a,b\n1,x\n2.5,y\n,z\n1,x\n7,q\n");
        let k = table_key(&whole);
        let (p1, p2) = (whole.rows(&[3, 0]), whole.rows(&[4, 2, 1]));
        let mut d = TableDigest::new(&p2);
        d.add(&p2);
        let mut e = TableDigest::new(&p1);
        e.add(&p1);
        d.merge(&e);
        assert_eq!(d.finish(), k);
        // Carries across limbs: a sum of many hashes still matches the one-pass digest.
        let mut one = TableDigest::new(&whole);
        for _ in 0..300 {
            one.add(&whole);
        }
        let mut parts = TableDigest::new(&whole);
        for _ in 0..300 {
            let mut p = TableDigest::new(&whole);
            p.add(&whole);
            parts.merge(&p);
        }
        assert_eq!(one.finish(), parts.finish());
        assert_ne!(one.finish(), k);
    }
}
