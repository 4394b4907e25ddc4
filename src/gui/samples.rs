//! Where the bundled sample files are, in a checkout and in an installed package, and the
//! public schema a bundled table comes with.

use std::path::{Path, PathBuf};

use crate::data::Table;
use crate::data::schema::Schema;

/// Bundled samples: `assets/` in a checkout (the README's run command starts there), else
/// an installed package's `share/dpsynth/assets` beside the binary's `bin/` (read-only:
/// nothing is ever written beside them), else the source tree the binary was built from.
pub fn sample_path(rel: &str) -> PathBuf {
    let local = PathBuf::from("assets").join(rel);
    if local.exists() {
        return local;
    }
    if let Some(installed) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("share/dpsynth/assets")))
        .filter(|p| p.is_dir())
    {
        return installed.join(rel);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(rel)
}

/// The public schema of a bundled sample table, when it has one: `adult/adult_train.csv`
/// comes with `adult/adult.schema.json` (kinds, bounds and categories from the Adult
/// codebook, not from the rows). Opened from the sample button, the table then starts
/// with every kind and domain covered by the guarantee, as a user's own file does once
/// its codebook is entered; "Guess again" reads them from the rows instead. Only files in
/// the samples folder qualify: a schema lying beside a user's file is never picked up
/// unasked.
pub fn sample_schema(path: &Path, table: &Table) -> Option<(Schema, PathBuf)> {
    let dir = path.parent()?;
    let samples = std::fs::canonicalize(sample_path("")).ok()?;
    if !std::fs::canonicalize(dir).ok()?.starts_with(&samples) {
        return None;
    }
    // `adult/adult.schema.json` for the folder's table; `gsoep/persons.schema.json` for
    // `persons_train.csv` in a folder of several tables.
    let name = dir.file_name()?.to_str()?;
    let stem = path.file_stem()?.to_str()?;
    let table_name = stem.split('_').next().unwrap_or(stem);
    let file = [name, table_name]
        .iter()
        .map(|n| dir.join(format!("{n}.schema.json")))
        .find(|f| f.exists())?;
    let schema = Schema::load(&file).ok()?;
    (schema.validate().is_ok() && schema.check_table(table).is_ok()).then_some((schema, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::Provenance;

    #[test]
    fn the_adult_sample_comes_with_its_public_schema_and_a_users_file_does_not() {
        let path = sample_path("adult/adult_train.csv");
        let table = crate::data::csv::load_csv(&path, &Default::default()).unwrap();
        let (schema, file) = sample_schema(&path, &table).expect("the bundled schema");
        assert!(file.ends_with("adult/adult.schema.json"));
        assert!(
            schema.non_private_kinds().is_empty(),
            "no kind from the rows"
        );
        for c in &schema.columns {
            assert_eq!(c.provenance, Provenance::UserProvided, "{}", c.name);
        }
        // The same file copied elsewhere, with the schema beside it, is a user's file.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("adult")).unwrap();
        let copy = dir.path().join("adult/adult_train.csv");
        std::fs::copy(&path, &copy).unwrap();
        std::fs::copy(&file, dir.path().join("adult/adult.schema.json")).unwrap();
        assert!(sample_schema(&copy, &table).is_none());
        // A bundled file without one (the digits) has none.
        assert!(sample_schema(&sample_path("mnist/train-images-idx3-ubyte.gz"), &table).is_none());
    }
}
