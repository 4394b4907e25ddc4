//! `dpsynth methods [--json]`: the registry, for people and for scripts.

use crate::job;

#[derive(Debug, clap::Args)]
pub struct MethodsArgs {
    /// Print one JSON object: `{"methods": [{"id", "title", "sentence", "paper", "url",
    /// "kinds", "private", "presets": [{"name", "doc"}]}]}`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: MethodsArgs) -> anyhow::Result<()> {
    let methods = job::methods();
    if a.json {
        return super::print_json(&serde_json::json!({ "methods": methods }));
    }
    // One column for every method's presets, as wide as the longest name.
    let width = methods
        .iter()
        .flat_map(|m| m.presets)
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    for m in methods {
        let kinds: Vec<&str> = m
            .kinds
            .iter()
            .map(|k| match k {
                job::DataKind::Table => "tables",
                job::DataKind::Images => "images",
            })
            .collect();
        println!(
            "{}  —  {}{}\n  {}\n  data: {} · paper: {} <{}>",
            m.id,
            m.title,
            if m.private { "" } else { " (NOT private)" },
            m.sentence,
            kinds.join(", "),
            m.paper,
            m.url
        );
        for (i, p) in m.presets.iter().enumerate() {
            println!(
                "    --preset {:width$} {}{}",
                p.name,
                p.doc,
                if i == 0 { " (default)" } else { "" }
            );
        }
        println!();
    }
    Ok(())
}
