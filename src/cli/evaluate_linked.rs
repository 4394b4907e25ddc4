//! `dpsynth evaluate … --real-train-child … --synthetic-child … --key COLUMN`: each table's
//! own report, then the figures across the link.

use std::path::PathBuf;

use anyhow::Context as _;

use super::evaluate::{EvaluateArgs, load_table, print_summary};
use crate::data::Table;
use crate::data::schema::Schema;
use crate::eval::linked::{LinkedReport, Pair};
use crate::eval::report::Options;
use crate::job::evaluation::{EvalSpec, Named, evaluate_tables};

/// One table's three files: real training rows, held-out real rows, synthetic rows.
struct Files {
    paths: [PathBuf; 3],
    tables: [Table; 3],
}

impl Files {
    fn load(paths: [PathBuf; 3], flags: [&str; 3]) -> anyhow::Result<Self> {
        let t = |i: usize| load_table(&paths[i], flags[i]);
        let tables = [t(0)?, t(1)?, t(2)?];
        Ok(Self { paths, tables })
    }

    /// The table's own report, as `evaluate` gives a single table.
    fn report(
        &self,
        a: &EvaluateArgs,
        schema: &Schema,
        label: Option<String>,
        progress: &mut dyn FnMut(&str),
    ) -> anyhow::Result<crate::eval::report::Report> {
        let spec = EvalSpec {
            rows: None,
            label: label.or_else(|| schema.target.clone()),
            options: Options {
                label: None,
                seed: a.seed,
                dimwise_rows: a.dimwise_rows.max(10),
                wasserstein_repeats: a.wasserstein_repeats.max(1),
            },
            draw: None,
        };
        let named = |i: usize| Named {
            table: &self.tables[i],
            name: self.paths[i].display().to_string(),
        };
        Ok(evaluate_tables(
            Some(schema.clone()),
            named(0),
            named(1),
            named(2),
            &spec,
            progress,
        )?
        .report)
    }
}

fn need<T: Clone>(v: &Option<T>, flag: &str) -> anyhow::Result<T> {
    v.clone()
        .ok_or_else(|| anyhow::anyhow!("linked evaluation needs --{flag}"))
}

pub fn run(a: &EvaluateArgs) -> anyhow::Result<()> {
    let key = need(&a.key, "key")?;
    let ps = Schema::load(&need(&a.schema, "schema")?)?;
    let cs = Schema::load(&need(&a.child_schema, "child-schema")?)?;
    let parents = Files::load(
        [
            a.real_train.clone(),
            a.real_test.clone(),
            a.synthetic.clone(),
        ],
        ["real-train", "real-test", "synthetic"],
    )?;
    let children = Files::load(
        [
            need(&a.real_train_child, "real-train-child")?,
            need(&a.real_test_child, "real-test-child")?,
            need(&a.synthetic_child, "synthetic-child")?,
        ],
        ["real-train-child", "real-test-child", "synthetic-child"],
    )?;
    let start = std::time::Instant::now();
    let mut progress = |line: &str| eprintln!("[{:6.1}s] {line}", start.elapsed().as_secs_f64());
    progress("the parent table's own report");
    let mut own_parents = parents.report(a, &ps, a.label.clone(), &mut progress)?;
    progress("the child table's own report");
    let mut own_children = children.report(a, &cs, None, &mut progress)?;
    if !a.with_real_rows {
        own_parents = own_parents.without_real_rows();
        own_children = own_children.without_real_rows();
    }
    progress("the figures across the link");
    let pair = |i: usize| Pair {
        parents: &parents.tables[i],
        children: &children.tables[i],
    };
    let linked = crate::eval::linked::evaluate(
        (&pair(0), &pair(1), &pair(2)),
        (&ps, &cs),
        &key,
        a.parent_label.as_deref(),
        a.seed,
    )
    .map_err(|e| anyhow::anyhow!("evaluate: {e}"))?;
    let json = serde_json::json!({
        "parents": own_parents,
        "children": own_children,
        "linked": linked,
    });
    if let Some(p) = &a.html {
        let inputs = |f: &Files| crate::eval::html::Inputs {
            real_train: f.paths[0].display().to_string(),
            real_test: f.paths[1].display().to_string(),
            synthetic: f.paths[2].display().to_string(),
        };
        let html = crate::eval::html::render_linked(
            (&own_parents, &inputs(&parents)),
            (&own_children, &inputs(&children)),
            &linked,
        );
        crate::util::atomic::write_atomic(p, html.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("wrote {} ({} KiB)", p.display(), html.len() / 1024);
    }
    super::evaluate::report_out(a.json.as_ref(), &json, || {
        println!("== parents ==");
        print_summary(&own_parents);
        println!("== children ==");
        print_summary(&own_children);
        println!("== across the link ==");
        print_linked(&linked);
    })
}

pub(super) fn print_linked(l: &LinkedReport) {
    println!(
        "synthetic children whose key is a synthetic parent's: {:.1} %",
        100.0 * l.keys_found
    );
    let shares = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.1}", 100.0 * x))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "children per parent (% of parents with 0, 1, …): real {} · synthetic {} · TV {:.3}",
        shares(&l.children_real),
        shares(&l.children_synthetic),
        l.children_tv
    );
    println!(
        "parent × child tables on the joined rows: mean TV {:.3} over {} pairs; worst {}",
        l.cross_mean_tv,
        l.cross.len(),
        l.cross
            .iter()
            .take(3)
            .map(|c| format!("{} × {} {:.3}", c.parent, c.child, c.tv))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(t) = &l.task {
        println!(
            "two-table task: predict the parent's {} from its other columns and its children's ({}): trained on synthetic {:.3} · on real {:.3}",
            t.label, t.score, t.synthetic, t.real
        );
    }
}
