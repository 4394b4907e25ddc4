//! The window with image data: open the bundled MNIST sample with Ctrl+O (the dialog
//! answered by the test), train a tiny DP-GAN, and see generated digits beside real ones,
//! with the classifier scores and a verdict; exported digits are jittered by default.

mod common;

use common::wait_for;
use eframe::egui;
use egui_kittest::kittest::{NodeT as _, Queryable as _};

/// Ctrl+O opens the MNIST sample; a tiny DP-GAN run shows generated digits beside real
/// ones in the results.
#[test]
fn open_mnist_with_ctrl_o_train_and_see_the_digit_grids() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = common::isolated_window(dir.path(), false);
    h.run_steps(2);
    h.state_mut().answer_next_dialog(dpsynth::gui::sample_path(
        "mnist/train-images-idx3-ubyte.gz",
    ));
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::O);
    wait_for(&mut h, "images of 28×28 pixels", 60);
    h.get_by_label_contains("The first 100 images");
    h.check_accessibility();

    h.get_by_label("2 · Train and export").click();
    h.run_steps(3);
    h.get_by_label("DP-SGD GAN").click();
    h.run_steps(2);
    h.get_by_role_and_label(egui::accesskit::Role::ComboBox, "Preset:")
        .click();
    h.run_steps(2);
    h.get_by_label("tiny").click();
    h.run_steps(3);
    h.get_by_label("Train (Ctrl+Enter)").scroll_to_me();
    h.run_steps(3);
    h.get_by_label("Train (Ctrl+Enter)").click();
    wait_for(&mut h, "Generated (100 samples", 300);
    h.get_by_label_contains("Real (the first 100 training images)");
    // The papers' scores follow in the same tab: classifiers trained on the generated
    // digits, tested on the real test digits beside the bundled sample.
    wait_for(&mut h, "accuracy on real test digits", 300);
    h.get_by_label_contains("Fréchet distance");
    assert!(
        h.query_all_by_label_contains("seful").next().is_some(),
        "a plain verdict heads the image scores"
    );
    h.check_accessibility();

    // Exported digits are jittered unless the box is unticked (they train a better
    // classifier), and the file's privacy statement says so.
    h.get_by_label("2 · Train and export").click();
    h.run_steps(3);
    h.get_by_label("Export CSV").scroll_to_me();
    h.run_steps(3);
    let jitter = h.get_by_label("Jitter each digit (to train a classifier on)");
    assert_eq!(
        jitter.accesskit_node().toggled(),
        Some(egui::accesskit::Toggled::True)
    );
    h.get_by_label("Export CSV").click();
    wait_for(&mut h, "wrote 1000 jittered digits to", 60);
    let csv = std::fs::read_dir(dir.path().join("dpsynth"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "csv"))
        .expect("the exported CSV");
    let mut statement = csv.clone().into_os_string();
    statement.push(".privacy.json");
    let statement: serde_json::Value =
        serde_json::from_slice(&std::fs::read(statement).unwrap()).unwrap();
    assert_eq!(statement["jittered"]["degrees"], 10.0, "{statement}");
}
