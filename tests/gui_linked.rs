//! Linked tables through the real window: the persons-and-years sample opens with its
//! child table, key and K in the Data tab; the Train tab trains the pair, states the unit
//! and K, shows the figures across the link, and writes both tables through typed paths.

mod common;

use eframe::egui;
use egui_kittest::kittest::Queryable as _;

#[test]
fn a_linked_pair_trains_and_exports_in_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = common::isolated_window(dir.path(), false);
    h.run_steps(3);
    common::click(&mut h, "Try it with persons and their years");
    common::wait_for(&mut h, "4902 rows × 4 columns", 60);
    common::wait_for(&mut h, "15687 rows × 9 columns", 10);
    h.get_by_label_contains("no parent has more than K = 5");
    // The child table has the same column editor as any table: a precision stated there
    // is what its saved schema (and the pair's run) gets.
    h.state_mut().use_path_prompt();
    common::click(&mut h, "Columns of the child table");
    h.run_steps(3);
    h.get_by_label("decimals of hhninc").scroll_to_me();
    h.run_steps(2);
    h.get_by_label("decimals of hhninc").click_accesskit();
    h.run_steps(3);
    h.get_by_label("2 decimals").click_accesskit();
    h.run_steps(3);
    let saved = dir.path().join("child-schema.json");
    common::click(&mut h, "Save the child's schema…");
    h.run_steps(3);
    let field = "Save the child table's schema (JSON):";
    h.get_by_label(field).click();
    h.run_steps(1);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label(field)
        .type_text(&saved.display().to_string());
    h.run_steps(2);
    h.get_by_label("OK").click();
    common::wait_for(&mut h, "saved the child table's schema to", 10);
    let schema = dpsynth::data::schema::Schema::load(&saved).unwrap();
    assert_eq!(schema.column("hhninc").unwrap().decimals, Some(2));

    h.get_by_label("2 · Train and export").click();
    h.run_steps(3);
    h.get_by_label_contains("linked by 'id' · K = 5");
    h.get_by_label_contains("charged to the pair's book and to each table's own");
    common::wait_for(
        &mut h,
        "this pair's budget: total ε 3.000 · spent 0.000",
        10,
    );
    common::click(&mut h, "Train the linked pair");
    common::wait_until(
        &mut h,
        "whose key is a synthetic parent's: 100.0 %",
        "The linked run failed",
        300,
    );
    h.get_by_label_contains("The privacy unit is one parent with all its children");
    h.get_by_label_contains("children per parent: total variation");
    // The ledger now holds the run, under the pair's key.
    common::wait_for(
        &mut h,
        "this pair's budget: total ε 3.000 · spent 1.000",
        10,
    );
    // The Results tab shows the pair too.
    h.get_by_label("3 · Results").click();
    common::wait_for(&mut h, "The linked pair", 10);
    h.get_by_label_contains("parent × child tables on the joined rows");
    h.get_by_label("2 · Train and export").click();
    h.run_steps(3);

    let (p, c) = (dir.path().join("out/p.csv"), dir.path().join("out/c.csv"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    for (label, path) in [("parents file", &p), ("children file", &c)] {
        h.get_by_label(label).scroll_to_me();
        h.run_steps(2);
        h.get_by_label(label).click();
        h.run_steps(1);
        h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
        h.get_by_label(label).type_text(&path.display().to_string());
        h.run_steps(2);
    }
    common::click(&mut h, "Export both tables");
    common::wait_for(&mut h, "each with its statement beside it", 60);
    let parents = std::fs::read_to_string(&p).unwrap();
    let children = std::fs::read_to_string(&c).unwrap();
    assert!(parents.starts_with("id,female,edlevel,birth_year"));
    assert_eq!(parents.lines().count(), 4903);
    let keys: std::collections::HashSet<&str> = parents
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert!(
        children
            .lines()
            .skip(1)
            .all(|l| keys.contains(l.split(',').next().unwrap()))
    );
    assert!(std::path::Path::new(&format!("{}.privacy.json", c.display())).exists());

    // After a restart, opening the parents' file brings the link back: the child table
    // with its column settings, the key and K, and the pair's results.
    drop(h);
    let links = dir.path().join("dpsynth/links");
    let t0 = std::time::Instant::now();
    while std::fs::read_dir(&links).map_or(0, |d| d.count()) == 0 {
        assert!(t0.elapsed().as_secs() < 10, "the link was not kept");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let kept = std::fs::read_dir(&links)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kept).unwrap()).unwrap();
    let hhninc = kept["schema"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hhninc")
        .unwrap();
    assert_eq!(hhninc["decimals"], 2, "{hhninc}");
    assert!(
        kept["results"]["report"].is_object(),
        "the pair's results were not kept"
    );
    let mut h = common::isolated_window(dir.path(), false);
    h.run_steps(2);
    h.state_mut()
        .answer_next_dialog(dpsynth::gui::sample_path("gsoep/persons_train.csv"));
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::O);
    common::wait_for(&mut h, "4902 rows × 4 columns", 60);
    common::wait_for(&mut h, "15687 rows × 9 columns", 10);
    h.get_by_label_contains("no parent has more than K = 5");
    h.get_by_label("3 · Results").click();
    common::wait_for(&mut h, "The linked pair", 10);
    h.get_by_label_contains("parent × child tables on the joined rows");
}
