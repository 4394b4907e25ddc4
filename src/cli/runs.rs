//! `dpsynth runs`: the runs the window kept (models and their records in the app's folder),
//! listed or deleted from the command line.

use std::path::PathBuf;

use serde_json::json;

use crate::job::run_store;

#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// Only the runs trained on this data file.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Delete this kept run: its model, its record and its stored scores.
    #[arg(long, value_name = "MODEL")]
    pub delete: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: RunsArgs) -> anyhow::Result<()> {
    let dir = run_store::models_dir();
    if let Some(model) = &a.delete {
        let known = run_store::list(&dir, None)
            .iter()
            .any(|k| run_store::same_file(&k.model, model));
        if !known {
            return Err(crate::job::JobError::Usage(format!(
                "{} is not a run kept in {} (`dpsynth runs` lists them)",
                model.display(),
                dir.display()
            ))
            .into());
        }
        run_store::delete(model).map_err(anyhow::Error::msg)?;
        if a.json {
            super::print_json(&json!({ "deleted": model }))?;
        } else {
            eprintln!("dpsynth: deleted the run {}", model.display());
        }
        return Ok(());
    }
    let kept = run_store::list(&dir, a.data.as_deref());
    let rows: Vec<serde_json::Value> = kept
        .iter()
        .map(|k| {
            let cfg = k.record.config.as_deref();
            json!({
                "title": k.record.title,
                "data": k.record.data,
                "model": k.model,
                "method": cfg.map(|c| c.method.clone()),
                "preset": cfg.map(|c| c.preset.clone()),
                "epsilon": cfg.map(|c| c.epsilon).filter(|e| e.is_finite()),
                "delta": cfg.map(|c| c.delta),
                "modified": k.modified
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            })
        })
        .collect();
    if a.json {
        return super::print_json(&json!({ "folder": dir, "runs": rows }));
    }
    if kept.is_empty() {
        eprintln!("dpsynth: no kept runs in {}", dir.display());
        return Ok(());
    }
    for k in &kept {
        println!(
            "{}\n  data:  {}\n  model: {}",
            k.record.title,
            k.record.data.display(),
            k.model.display()
        );
    }
    Ok(())
}
