//! DESIGN.md §1: the privacy core has no candle, polars or GUI code in it.

#[test]
fn privacy_module_imports_no_ml_data_or_gui_crates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/privacy");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for banned in [
            "polars",
            "candle",
            "egui",
            "eframe",
            "wgpu",
            "crate::data",
            "crate::gui",
            "crate::cli",
        ] {
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                assert!(
                    !code.contains(banned),
                    "{}:{}: privacy code uses `{banned}`",
                    path.display(),
                    i + 1
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 5);
}
