//! `dpsynth methods [--json]`: the registry, for people and for scripts.

use crate::job;

#[derive(Debug, clap::Args)]
pub struct MethodsArgs {
    /// Print one JSON object: `{"methods": [{"id", "title", "sentence", "pick_when", "paper",
    /// "url", "kinds", "private", "recommended", "recommended_for", "presets": [{"name", "doc",
    /// "recommended"}]}]}`. One method and one of its presets per kind of data carry
    /// `"recommended": true`; `recommended_for` names those kinds.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: MethodsArgs) -> anyhow::Result<()> {
    let methods = job::methods();
    if a.json {
        let listed: Vec<serde_json::Value> =
            methods.iter().map(|m| with_recommendation(m)).collect();
        return super::print_json(&serde_json::json!({ "methods": listed }));
    }
    // One column for every method's presets, as wide as the longest name.
    let width = methods
        .iter()
        .flat_map(|m| m.presets)
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    for m in methods {
        let kinds: Vec<&str> = m.kinds.iter().map(|k| kind_name(*k)).collect();
        println!(
            "{}  —  {}{}{}\n  {}\n  {}\n  data: {} · paper: {} <{}>",
            m.id,
            m.title,
            if m.private { "" } else { " (NOT private)" },
            recommended_for(m)
                .iter()
                .map(|k| format!(" [recommended for {}]", kind_name(*k)))
                .collect::<String>(),
            m.sentence,
            m.pick_when,
            kinds.join(", "),
            m.paper,
            m.url
        );
        let picks: Vec<&str> = recommended_for(m)
            .iter()
            .map(|k| job::recommended(*k).1)
            .collect();
        for (i, p) in m.presets.iter().enumerate() {
            println!(
                "    --preset {:width$} {}{}{}",
                p.name,
                p.doc,
                if i == 0 { " (default)" } else { "" },
                if picks.contains(&p.name) {
                    " (recommended)"
                } else {
                    ""
                }
            );
        }
        println!();
    }
    Ok(())
}

fn kind_name(k: job::DataKind) -> &'static str {
    match k {
        job::DataKind::Table => "tables",
        job::DataKind::Images => "images",
    }
}

/// The kinds of data `m` is the recommended start for (usually none, at most both).
fn recommended_for(m: &job::MethodInfo) -> Vec<job::DataKind> {
    [job::DataKind::Table, job::DataKind::Images]
        .into_iter()
        .filter(|k| job::recommended(*k).0 == m.id)
        .collect()
}

/// `m` as JSON with the recommendation marked on the method and on its recommended presets.
fn with_recommendation(m: &job::MethodInfo) -> serde_json::Value {
    let kinds = recommended_for(m);
    let picks: Vec<&str> = kinds.iter().map(|k| job::recommended(*k).1).collect();
    let mut v = serde_json::to_value(m).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("recommended".into(), (!kinds.is_empty()).into());
        o.insert(
            "recommended_for".into(),
            serde_json::to_value(&kinds).unwrap_or_default(),
        );
        if let Some(presets) = o.get_mut("presets").and_then(|p| p.as_array_mut()) {
            for p in presets {
                let name = p.get("name").and_then(|n| n.as_str()).unwrap_or("");
                let yes = picks.contains(&name);
                if let Some(po) = p.as_object_mut() {
                    po.insert("recommended".into(), yes.into());
                }
            }
        }
    }
    v
}
