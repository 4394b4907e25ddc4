//! `dpsynth inspect DATA [--schema FILE] [--schema-out FILE] [--json]`

use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::json;

use crate::data::schema::Schema;
use crate::data::{self, Table};
use crate::job::workspace::Rows;

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// A CSV file, an MNIST IDX file (raw or .gz), or a folder with MNIST IDX files.
    pub data: PathBuf,
    /// Use this schema (JSON) instead of guessing one from the data.
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Write the schema (guessed or given) to this JSON file, to edit and pass back.
    #[arg(long)]
    pub schema_out: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Comma-separated cell values that mean "missing" (an empty cell always does).
    #[arg(long)]
    pub missing: Option<String>,
    /// Field separator (default: sniffed among , ; tab |).
    #[arg(long)]
    pub delimiter: Option<String>,
}

pub fn run(a: InspectArgs) -> anyhow::Result<()> {
    let opts = data::csv::LoadOptions {
        missing_tokens: super::missing_tokens(&a.missing),
        delimiter: super::delimiter(&a.delimiter)?,
    };
    // Opened the way a run opens it: one parse, and the key its budget is kept under.
    let opened = crate::job::workspace::open_with(&a.data, &opts, &mut |_, _| {})?;
    match &opened.rows {
        Rows::Table(t) => inspect_table(&a, t, &opened.content_key),
        Rows::Images(set) => inspect_images(&a, set, &opened.content_key),
    }
}

fn inspect_table(a: &InspectArgs, t: &Table, key: &str) -> anyhow::Result<()> {
    let file = a.data.display().to_string();
    let (schema, notes) = match &a.schema {
        Some(p) => {
            let s = Schema::load(p)?;
            s.check_table(t)
                .with_context(|| format!("{} does not fit {file}", p.display()))?;
            (s, vec![])
        }
        None => {
            let inf = data::infer::infer_schema(t).with_context(|| file.clone())?;
            (inf.schema, inf.notes)
        }
    };
    if let Some(out) = &a.schema_out {
        schema.save(out)?;
    }
    let rows: Vec<_> = schema
        .columns
        .iter()
        .map(|spec| {
            let col = t.column(&spec.name);
            (
                spec,
                col.map_or(0, |c| c.missing_count()),
                col.map_or(0, |c| c.distinct_count()),
            )
        })
        .collect();
    let non_private = schema.non_private_domains();
    let common = data::domain_check::common_values(&schema, t);
    if a.json {
        return print_table_json(&file, key, t, (&schema, &notes, &common), &rows);
    }
    println!("{file}: {} rows × {} columns", t.n_rows, t.n_cols());
    println!(
        "ledger key: {} (the same rows in any format or order share it)",
        short(key)
    );
    println!();
    let header = [
        "column",
        "kind",
        "domain",
        "provenance",
        "missing",
        "distinct",
    ];
    let body: Vec<[String; 6]> = rows
        .iter()
        .map(|(spec, missing, distinct)| {
            let kind = match &spec.time_format {
                Some(f) => format!("date/time ({f})"),
                None if spec.integer => format!("{} (integer)", spec.kind.label()),
                None => spec.kind.label().to_string(),
            };
            [
                spec.name.clone(),
                kind,
                spec.domain_summary(48),
                if spec.kind == data::schema::Kind::Ignored {
                    "-".into()
                } else {
                    spec.provenance.badge()
                },
                missing.to_string(),
                distinct.to_string(),
            ]
        })
        .collect();
    print_table(&header, &body);
    for (c, n) in &notes {
        println!("note: column '{c}' {n}");
    }
    print_common(&common);
    print_coverage(&non_private, &schema.non_private_kinds());
    Ok(())
}

/// The exact values many rows of a number column hold, and how to keep them exact.
fn print_common(common: &[data::domain_check::CommonValues]) {
    if common.is_empty() {
        return;
    }
    let list: Vec<String> = common
        .iter()
        .map(|(c, v)| {
            let v: Vec<String> = v
                .iter()
                .map(|(x, s)| format!("{} ({:.1} %)", crate::util::fmt::number(*x), 100.0 * s))
                .collect();
            format!("{c} {}", v.join(", "))
        })
        .collect();
    println!();
    println!(
        "note: common exact values (read from the rows, shown only to you): {}.",
        list.join("; ")
    );
    println!(
        "      Synthetic rows keep a value exactly when the schema names it in the column's \"point_masses\" as a public fact (a codebook's 0 = none, a top code), or when train --estimate-domains finds it privately; otherwise it is smeared over its bin."
    );
}

/// The columns the guarantee does not cover (domains read off the rows, kinds guessed),
/// and how to cover them.
fn print_coverage(non_private: &[&str], guessed: &[&str]) {
    if !non_private.is_empty() {
        println!();
        println!(
            "warning: the domains of {} column(s) were read from the data and are NOT covered by the privacy guarantee.",
            non_private.len()
        );
        println!(
            "         Save the schema with --schema-out, replace them with public values, set \"provenance\": \"user_provided\","
        );
        println!("         and pass it back with --schema.");
    }
    if !guessed.is_empty() {
        println!();
        println!(
            "note: the kinds of {} column(s) were guessed from the data; one record can change a guess, so a release names them as not covered.",
            guessed.len()
        );
        println!(
            "      If they are public (a codebook's), delete \"kind_from_data\" from the saved schema, or train with --public-kinds."
        );
    }
}

/// `inspect --json` of a table: each column's schema and counts, the notes, and the
/// schema itself.
fn print_table_json(
    file: &str,
    key: &str,
    t: &Table,
    (schema, notes, common): (
        &Schema,
        &[(String, String)],
        &[data::domain_check::CommonValues],
    ),
    rows: &[(&data::schema::ColumnSpec, usize, usize)],
) -> anyhow::Result<()> {
    let cols: Vec<_> = rows
        .iter()
        .map(|(spec, missing, distinct)| {
            let common: Vec<_> = common
                .iter()
                .filter(|(c, _)| *c == spec.name)
                .flat_map(|(_, v)| v.iter().map(|(x, s)| json!({"value": x, "share": s})))
                .collect();
            json!({
                "name": spec.name,
                "kind": spec.kind,
                "integer": spec.integer,
                "missing_allowed": spec.missing,
                "domain": spec.domain,
                "provenance": spec.provenance,
                "private": spec.provenance.is_private(),
                "kind_from_data": spec.kind_from_data,
                "missing": missing,
                "distinct": distinct,
                "common_values": common,
            })
        })
        .collect();
    let notes: Vec<_> = notes
        .iter()
        .map(|(c, n)| json!({"column": c, "note": n}))
        .collect();
    super::print_json(&json!({
        "file": file,
        "dataset_key": key,
        "type": "table",
        "rows": t.n_rows,
        "columns": cols,
        "notes": notes,
        "non_private_domains": schema.non_private_domains(),
        "non_private_kinds": schema.non_private_kinds(),
        "schema": schema,
    }))
}

fn inspect_images(a: &InspectArgs, set: &data::image::ImageSet, key: &str) -> anyhow::Result<()> {
    let file = a.data.display().to_string();
    let counts = set.label_counts();
    if a.json {
        let labels: serde_json::Map<String, serde_json::Value> = counts
            .iter()
            .map(|(l, c)| (l.to_string(), json!(c)))
            .collect();
        return super::print_json(&json!({
            "file": file,
            "dataset_key": key,
            "type": "images",
            "count": set.len(),
            "width": set.width,
            "height": set.height,
            "labelled": set.labels.is_some(),
            "label_counts": labels,
        }));
    }
    println!(
        "{file}: {} grayscale images of {}×{} pixels",
        set.len(),
        set.height,
        set.width
    );
    println!("ledger key: {}", short(key));
    if counts.is_empty() {
        println!("no labels (no matching labels file found)");
    } else {
        let s: Vec<String> = counts.iter().map(|(l, c)| format!("{l}: {c}")).collect();
        println!("labels: {}", s.join(", "));
    }
    println!(
        "pixels: integers 0..255 (public bounds of the format), scaled to [0, 1] for training"
    );
    Ok(())
}

/// Prints aligned columns.
pub(crate) fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    let mut w = [0usize; N];
    for (i, h) in header.iter().enumerate() {
        w[i] = h.chars().count();
    }
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c}{}", " ".repeat(w[i] - c.chars().count())))
            .collect();
        println!("{}", parts.join("  ").trim_end());
    };
    line(header.to_vec());
    line(
        w.iter()
            .map(|n| "-".repeat(*n))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect(),
    );
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

/// The first 16 hex digits of a ledger key (the whole key is in `--json`).
fn short(key: &str) -> &str {
    key.get(..16).unwrap_or(key)
}
