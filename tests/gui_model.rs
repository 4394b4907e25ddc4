//! A released model opened in the window on its own: its statement shows, and rows are
//! sampled and exported from it with no private data (here through the typed path, with
//! the question before replacing a file; a non-private model asks for a confirmation).

mod common;

use common::{click, wait_for};

use eframe::egui;
use egui_kittest::kittest::Queryable as _;

/// Trains MST (`tiny`, about a second) on the bundled Adult sample into `dir`.
fn train(dir: &std::path::Path, epsilon: f64) -> std::path::PathBuf {
    let mut cfg = common::adult_run(
        "mst",
        "tiny",
        epsilon,
        dir.join(format!("adult-mst-{epsilon}.dpsynth")),
    );
    cfg.seed = None;
    common::run_job(cfg, &dir.join("train-ledger.sqlite3"), None)
        .expect("training succeeds")
        .model
}

fn type_into(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>, label: &str, text: &str) {
    click(h, label);
    h.run_steps(1);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label(label).type_text(text);
    h.run_steps(2);
}

#[test]
fn a_model_file_opens_and_exports_any_number_of_rows() {
    let dir = tempfile::tempdir().unwrap();
    let model = train(dir.path(), 1.0);
    let reference = train(dir.path(), f64::INFINITY);
    let mut h = common::isolated_window(dir.path(), false);
    h.run_steps(3);
    type_into(&mut h, "or type a path:", &model.display().to_string());
    h.get_by_label("Open").click();
    h.run_steps(3);
    h.get_by_label_contains("Released model: adult-mst-1.dpsynth");
    // The model is read on a worker: the window draws meanwhile.
    wait_for(&mut h, "differential privacy, by the", 30);
    h.get_by_label_contains("method: mst · preset: tiny");
    // 2,500 rows to a typed path.
    let out = dir.path().join("more.csv");
    type_into(&mut h, "Rows:", "2500");
    type_into(&mut h, "or to the CSV file:", &out.display().to_string());
    click(&mut h, "Export CSV");
    wait_for(&mut h, "wrote 2500 rows to", 60);
    let t = dpsynth::data::csv::load_csv(&out, &Default::default()).unwrap();
    assert_eq!((t.n_rows, t.n_cols()), (2500, 15));
    assert!(out.with_extension("csv.privacy.json").exists());
    // Again to the same file: asked first.
    click(&mut h, "Export CSV");
    h.run_steps(2);
    h.get_by_label_contains("already exists: press Export CSV again");

    // The non-private reference: nothing exports until the user confirms.
    type_into(&mut h, "or type a path:", &reference.display().to_string());
    h.get_by_label("Open").click();
    h.run_steps(3);
    h.get_by_label_contains("Released model: adult-mst-inf.dpsynth");
    wait_for(&mut h, "Not private (ε = ∞)", 30);
    h.get_by_label_contains("trained without privacy");
    let out2 = dir.path().join("reference.csv");
    type_into(&mut h, "or to the CSV file:", &out2.display().to_string());
    click(&mut h, "Export CSV");
    h.run_steps(5);
    assert!(!out2.exists(), "exported without the confirmation");
    click(&mut h, "I understand: export these non-private rows anyway");
    h.run_steps(2);
    click(&mut h, "Export CSV");
    wait_for(&mut h, "wrote 1000 rows to", 60);
    assert!(out2.exists());

    a_rule_that_reshapes_is_named(&mut h, dir.path(), &model);
    an_engine_table(&mut h);
    a_streamed_file(&mut h);
    workbooks_survey_files_and_the_guide(&mut h);
}

/// (The same window.) A model with a rule its rows do not keep by themselves: the export
/// keeps the rows that obey it and names every column whose share that moved by more than
/// 0.05, with the figures, instead of reshaping the table in silence.
fn a_rule_that_reshapes_is_named(
    h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>,
    dir: &std::path::Path,
    model: &std::path::Path,
) {
    let mut m =
        dpsynth::methods::released::ReleasedModel::load(model, &candle_core::Device::Cpu).unwrap();
    m.header
        .schema
        .rules
        .push(r#"sex = "Male" => hours-per-week > 45"#.into());
    let ruled = dir.join("ruled.dpsynth");
    m.save(&ruled).unwrap();
    type_into(h, "or type a path:", &ruled.display().to_string());
    h.get_by_label("Open").click();
    h.run_steps(3);
    wait_for(h, "Released model: ruled.dpsynth", 30);
    wait_for(h, "differential privacy, by the", 30);
    let out = dir.join("ruled.csv");
    type_into(h, "or to the CSV file:", &out.display().to_string());
    click(h, "Export CSV");
    wait_for(h, "Keeping rows by the rules moved", 120);
    h.get_by_label_contains("sex Female:");
    let t = dpsynth::data::csv::load_csv(&out, &Default::default()).unwrap();
    let (sex, hours) = (
        t.column("sex").unwrap(),
        t.column("hours-per-week").unwrap(),
    );
    for r in 0..t.n_rows {
        if sex.text(r).as_deref() == Some("Male") {
            let h: f64 = hours.text(r).unwrap().parse().unwrap();
            assert!(h > 45.0, "row {r}: a man working {h} hours was kept");
        }
    }
}

/// (The same window.) A table a query engine holds opens as a connection with its public
/// schema: typed as a `ballista://` address, the connect dialog asks for the schema. A
/// build without the engine says how to get one; with it (`--features ballista`), the
/// engine counts the records, AIM trains there, and the released model opens beside,
/// its statement saying where the rows were counted.
fn an_engine_table(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = repo.join("tests/data/formats/adult_1k.parquet");
    let url = format!("ballista://local{}", table.display());
    // The last model's window would sit over the method cards.
    click(h, "Close window");
    h.run_steps(3);
    type_into(h, "or type a path:", &url);
    h.get_by_label("Open").click();
    h.run_steps(3);
    wait_for(h, "Connect to a table that stays where it is", 5);
    type_into(
        h,
        "Public schema:",
        &repo
            .join("assets/adult/adult.schema.json")
            .display()
            .to_string(),
    );
    click(h, "Connect");
    if !dpsynth::data::engine::AVAILABLE {
        wait_for(h, "build dpsynth with `--features ballista`", 30);
        return;
    }
    wait_for(h, "1000 records, counted by the query engine", 120);
    h.get_by_label_contains("Its rows stay in the engine");
    h.get_by_label("2 · Train and export").click();
    wait_for(h, "this dataset's budget: total ε", 20);
    // A method that needs the rows in memory is refused before anything is spent.
    click(h, "DP-MERF");
    h.run_steps(5);
    wait_for(h, "a table in a query engine is counted where it lies", 10);
    click(h, "AIM");
    h.get_by_role_and_label(egui::accesskit::Role::ComboBox, "Preset:")
        .click();
    h.run_steps(2);
    h.get_by_label("tiny").click();
    h.run_steps(3);
    click(h, "Train (Ctrl+Enter)");
    wait_for(
        h,
        "counted where they lie, by a query engine (engine table",
        300,
    );
    h.get_by_label_contains("method: aim · preset: tiny");
}

/// A CSV file connected to through the same dialog, as a file too large to open: the
/// survey counts its records part by part and shows the schema's columns, AIM trains on it
/// in parts (`RunConfig::stream`), and the released model opens beside.
fn a_streamed_file(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if dpsynth::data::engine::AVAILABLE {
        click(h, "Close window");
        h.run_steps(3);
    }
    click(h, "Connect…");
    h.run_steps(3);
    wait_for(h, "Connect to a table that stays where it is", 5);
    let file = repo.join("tests/data/formats/adult_1k.csv");
    type_into(h, "Table:", &file.display().to_string());
    type_into(
        h,
        "Public schema:",
        &repo
            .join("assets/adult/adult.schema.json")
            .display()
            .to_string(),
    );
    click(h, "Connect");
    wait_for(h, "1000 records, read in parts", 60);
    h.get_by_label_contains("never held in memory at once");
    h.get_by_label("2 · Train and export").click();
    wait_for(h, "this dataset's budget: total ε", 20);
    click(h, "AIM");
    h.get_by_role_and_label(egui::accesskit::Role::ComboBox, "Preset:")
        .click();
    h.run_steps(2);
    h.get_by_label("tiny").click();
    h.run_steps(3);
    click(h, "Train (Ctrl+Enter)");
    wait_for(h, "method: aim · preset: tiny", 300);
    click(h, "Close window");
    h.run_steps(3);
}

/// (The same window, so this binary keeps one test.) A workbook offers its sheets, a
/// survey file's value labels wait for the user to call them public, and Help opens the
/// guide.
fn workbooks_survey_files_and_the_guide(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>) {
    let formats = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/formats");
    type_into(
        h,
        "or type a path:",
        &formats.join("adult_1k.xlsx").display().to_string(),
    );
    h.get_by_label("Open").click();
    wait_for(h, "1000 rows × 15 columns", 60);
    h.get_by_role_and_label(egui::accesskit::Role::ComboBox, "sheet")
        .click();
    h.run_steps(2);
    h.get_by_label("titled").click();
    // The title line above the header is skipped: that sheet's 50 rows. (The new path
    // shows in more than one place, so any match will do.)
    let t0 = std::time::Instant::now();
    while h
        .query_all_by_label_contains("adult_1k.xlsx#titled")
        .next()
        .is_none()
    {
        assert!(
            t0.elapsed().as_secs() < 60,
            "the sheet 'titled' did not open"
        );
        h.run_steps(2);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    wait_for(h, "50 rows × 15 columns", 60);
    a_hopeless_run_asks_first(h);

    type_into(
        h,
        "or type a path:",
        &formats.join("survey.sav").display().to_string(),
    );
    h.get_by_label("Open").click();
    wait_for(h, "take their categories from the file's codebook", 60);
    h.get_by_label("The file's codebook is public").click();
    h.run_steps(3);
    h.get_by_label_contains("now use the public codebook");
    assert!(
        h.query_by_label_contains("take their categories from the file's codebook")
            .is_none()
    );

    h.get_by_label("Help").click();
    h.run_steps(2);
    h.get_by_label("Guide").click();
    h.run_steps(3);
    // The user's guide: its first page's tab and heading.
    assert_eq!(h.query_all_by_label("Start here").count(), 2);
    h.get_by_label_contains("dpsynth makes a synthetic copy");
    h.get_by_label("Command line").click();
    h.run_steps(3);
    h.get_by_label_contains("dpsynth train --data");
}

/// (The open 50-row sheet.) Estimating every domain privately on 50 rows drops nearly
/// every column: the preview says so, and Train asks before spending anything; "Not now"
/// starts nothing.
fn a_hopeless_run_asks_first(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>) {
    click(h, "Estimate all privately");
    h.run_steps(3);
    h.get_by_label("2 · Train and export").click();
    wait_for(h, "will be dropped", 30);
    click(h, "Train (Ctrl+Enter)");
    wait_for(h, "The private domain estimate will drop", 30);
    click(h, "Not now");
    h.run_steps(5);
    assert!(h.query_by_label("Train anyway").is_none());
    assert!(
        h.query_by_label_contains("Cancel…").is_none(),
        "no run started"
    );
    h.get_by_label("1 · Data").click();
    h.run_steps(3);
}
