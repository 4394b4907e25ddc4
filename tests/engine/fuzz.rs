//! A short fuzz run of every reader of untrusted files (CSV, IDX, schema JSON, model
//! files): no input may panic. The long run is `dpsynth fuzz --executions 300000`.

#[test]
fn no_mutated_input_panics_any_reader() {
    for target in dpsynth::fuzz::Target::ALL {
        let r = dpsynth::fuzz::run(target, 3_000, 7, None);
        assert_eq!(r.panics, 0, "{target:?}: {:?}", r.panic_messages);
        // The mutations reach past the first check: several distinct outcomes, and some
        // inputs still accepted.
        assert!(r.outcomes >= 5, "{target:?}: {:?}", r.outcome_list);
        assert!(r.accepted > 0, "{target:?} accepted nothing");
        assert!(r.executions >= 1_000, "{target:?}: {}", r.executions);
    }
}
