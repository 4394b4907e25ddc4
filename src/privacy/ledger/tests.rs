//! The ledger's unit tests.

use super::*;
use crate::privacy::compose::Method;
use crate::privacy::mechanism::Mechanism;

#[test]
fn reserve_refuses_past_budget_and_settle_releases() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    l.set_budget(
        "d",
        Budget {
            epsilon: 0.8,
            delta: 1e-5,
        },
    )
    .unwrap();
    let m = Mechanism::SubsampledGaussian {
        q: 0.01,
        sigma: 2.0,
    };
    let plan = [Charge {
        mechanism: m,
        count: 1000,
    }];
    let id = l.reserve("d", &plan, "run 1").unwrap();
    let spent_reserved = l.spent("d").unwrap();
    assert_eq!(spent_reserved.by, Method::Pld);
    assert!(
        spent_reserved.epsilon > 0.3 && spent_reserved.epsilon < 0.8,
        "{spent_reserved:?}"
    );
    // A second identical run would not fit (2000 steps compose to ε > 0.8).
    let e = l.reserve("d", &plan, "run 2").unwrap_err();
    assert!(matches!(e, LedgerError::Insufficient { .. }), "{e}");
    // Settling to half the plan frees budget.
    let half = [Charge {
        mechanism: m,
        count: 500,
    }];
    l.settle(id, &half).unwrap();
    assert!(l.spent("d").unwrap().epsilon < spent_reserved.epsilon);
    assert!(matches!(
        l.settle(id, &half),
        Err(LedgerError::NotReserved(_))
    ));
    let st = l.standing("d").unwrap();
    assert_eq!(st.entries.len(), 1);
    assert_eq!(st.reserved_entries, 0);
    assert_eq!(st.accountant, "pld");
}

#[test]
fn delta_cannot_be_raised_after_spending_and_changes_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    let b = |epsilon, delta| Budget { epsilon, delta };
    l.set_budget("d", b(2.0, 1e-5)).unwrap();
    l.set_budget("d", b(2.0, 1e-4)).unwrap(); // nothing spent yet: allowed
    let plan = [Charge {
        mechanism: Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 2.0,
        },
        count: 100,
    }];
    l.reserve("d", &plan, "run").unwrap();
    let e = l.set_budget("d", b(2.0, 1e-3)).unwrap_err();
    assert!(e.to_string().contains("cannot be raised"), "{e}");
    l.set_budget("d", b(3.0, 1e-6)).unwrap(); // lowering δ is always allowed
    let changes: i64 = l
        .conn
        .query_row("SELECT COUNT(*) FROM budget_change", [], |r| r.get(0))
        .unwrap();
    assert_eq!(changes, 3);
}

#[test]
fn a_book_kept_under_the_byte_hash_moves_to_the_content_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    l.set_budget(
        "bytes",
        Budget {
            epsilon: 2.0,
            delta: 1e-6,
        },
    )
    .unwrap();
    let plan = [Charge {
        mechanism: Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 2.0,
        },
        count: 100,
    }];
    l.reserve("bytes", &plan, "old run").unwrap();
    l.record_exposure("bytes", "gan").unwrap();
    l.adopt_key("bytes", "content").unwrap();
    assert_eq!(l.alias("bytes").unwrap().as_deref(), Some("content"));
    let st = l.standing("content").unwrap();
    assert_eq!((st.entries.len(), st.budget.epsilon), (1, 2.0));
    assert!(!st.budget_is_default);
    assert_eq!(l.exposures("content").unwrap(), vec!["gan".to_string()]);
    assert!(l.standing("bytes").unwrap().budget_is_default);
    // Seen again: nothing moves twice.
    l.adopt_key("bytes", "content").unwrap();
    assert_eq!(l.standing("content").unwrap().entries.len(), 1);
}

#[test]
fn a_new_digest_version_carries_the_file_s_spend_to_its_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    let plan = [Charge {
        mechanism: Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 2.0,
        },
        count: 100,
    }];
    // Spent under the content key of an earlier digest version, at the default budget.
    l.adopt_key("bytes", "content-v1").unwrap();
    l.reserve("content-v1", &plan, "run under v1").unwrap();
    let spent = l.spent("content-v1").unwrap().epsilon;
    assert!(spent > 0.0);
    // The same file, keyed by the new version: the spend follows it.
    l.adopt_key("bytes", "content-v2").unwrap();
    assert_eq!(l.standing("content-v2").unwrap().entries.len(), 1);
    assert!((l.spent("content-v2").unwrap().epsilon - spent).abs() < 1e-12);
    // The old key keeps its book: another file may still hold those rows.
    assert_eq!(l.standing("content-v1").unwrap().entries.len(), 1);
    assert!((l.spent("content-v1").unwrap().epsilon - spent).abs() < 1e-12);
    // Seen again under the new key: nothing is copied twice.
    l.adopt_key("bytes", "content-v2").unwrap();
    assert_eq!(l.standing("content-v2").unwrap().entries.len(), 1);
}

/// The same bytes read as other rows (other parse options) move to another content key;
/// a copy of the old rows (the same people in another file) must still find their
/// spending under the old key, never a fresh budget.
#[test]
fn spending_never_leaves_the_rows_it_covers_when_a_file_gets_a_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    let plan = [Charge {
        mechanism: Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 2.0,
        },
        count: 100,
    }];
    l.adopt_key("bytes", "rows-a").unwrap();
    l.set_budget(
        "rows-a",
        crate::privacy::Budget {
            epsilon: 2.0,
            delta: 1e-6,
        },
    )
    .unwrap();
    l.reserve("rows-a", &plan, "run on rows a").unwrap();
    l.record_exposure("rows-a", "gan").unwrap();
    let spent = l.spent("rows-a").unwrap().epsilon;
    l.adopt_key("bytes", "rows-b").unwrap();
    let a = l.standing("rows-a").unwrap();
    assert_eq!(a.entries.len(), 1, "the old rows keep their book");
    assert!(!a.budget_is_default);
    assert!((l.spent("rows-a").unwrap().epsilon - spent).abs() < 1e-12);
    assert_eq!(l.exposures("rows-a").unwrap(), vec!["gan".to_string()]);
    assert!((l.spent("rows-b").unwrap().epsilon - spent).abs() < 1e-12);
    // Read back and forth: the books do not grow.
    l.adopt_key("bytes", "rows-a").unwrap();
    l.adopt_key("bytes", "rows-b").unwrap();
    assert_eq!(l.standing("rows-a").unwrap().entries.len(), 1);
    assert_eq!(l.standing("rows-b").unwrap().entries.len(), 1);
}

#[test]
fn an_entry_without_stored_charges_makes_the_dataset_fall_back_to_rdp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.sqlite3");
    let mut l = Ledger::open(&path).unwrap();
    let plan = [Charge {
        mechanism: Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 2.0,
        },
        count: 1000,
    }];
    l.reserve("d", &plan, "new").unwrap();
    let tight = l.spent("d").unwrap();
    // An entry as an older dpsynth wrote it: an RDP curve and no charges.
    let curve = curve_json(&charges_curve(&plan, l.orders()));
    l.conn
        .execute(
            "INSERT INTO entry(dataset_id, state, planned_rdp, description, created) VALUES ('d', 'reserved', ?1, 'old', '0')",
            params![curve],
        )
        .unwrap();
    let both = l.spent("d").unwrap();
    assert_eq!((both.by, both.pld), (Method::Rdp, None));
    assert!(both.epsilon > tight.epsilon);
    // Reopening migrates nothing away.
    drop(l);
    let l = Ledger::open(&path).unwrap();
    assert_eq!(l.standing("d").unwrap().entries.len(), 2);
}

#[test]
fn a_first_run_opens_the_dataset_at_its_own_delta() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    let plan = [Charge {
        mechanism: Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 2.0,
        },
        count: 10,
    }];
    let first = Budget {
        epsilon: 3.0,
        delta: 1e-7,
    };
    l.reserve_or_open("d", &plan, "run", first).unwrap();
    assert_eq!(l.budget("d").unwrap(), (first, false));
    // Later runs do not change it.
    let other = Budget {
        epsilon: 9.0,
        delta: 1e-3,
    };
    l.reserve_or_open("d", &plan, "run 2", other).unwrap();
    assert_eq!(l.budget("d").unwrap().0, first);
}

#[test]
fn a_killed_runs_reservation_is_released_only_if_it_never_read_the_data() {
    let Some(me) = owner::current() else {
        return; // no /proc: liveness unknown, reservations are never called stale
    };
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    let plan = [Charge {
        mechanism: Mechanism::Gaussian {
            sensitivity: 1.0,
            std: 8.0,
        },
        count: 1,
    }];
    let untouched = l.reserve("d", &plan, "killed early").unwrap();
    let touched = l.reserve("d", &plan, "killed late").unwrap();
    let live = l.reserve("d", &plan, "still running").unwrap();
    l.mark_touched(touched).unwrap();
    l.mark_touched(live).unwrap();
    // The first two belong to a process that no longer exists (same host and boot).
    let mut parts: Vec<&str> = me.split('|').collect();
    parts[2] = "4294967295";
    let dead = parts.join("|");
    l.conn
        .execute(
            "UPDATE entry SET owner = ?1 WHERE id IN (?2, ?3)",
            params![dead, untouched, touched],
        )
        .unwrap();
    let before = l.standing("d").unwrap();
    let flags: Vec<bool> = before.entries.iter().map(|e| e.interrupted).collect();
    assert_eq!(flags, [true, true, false]);
    let done = l.settle_stale("d").unwrap();
    assert_eq!(done, [(untouched, true), (touched, false)]);
    let after = l.standing("d").unwrap();
    assert!(
        after.spent < before.spent,
        "{} {}",
        after.spent,
        before.spent
    );
    assert_eq!(after.reserved_entries, 1);
    assert!(after.entries.iter().all(|e| !e.interrupted));
    assert_eq!(after.entries[0].epsilon, 0.0);
    // What stays spent is exactly the two Gaussian releases still counted.
    let two = Book::of(&[plan[0], plan[0]], l.orders()).compose(l.orders(), 1e-5);
    assert!((after.spent - two.epsilon).abs() < 1e-9, "{}", after.spent);
    // A second settle finds nothing; the live reservation still settles normally.
    assert!(l.settle_stale("d").unwrap().is_empty());
    l.settle(live, &plan).unwrap();
}

/// A joint reservation charges every book or none: one book without room refuses the
/// whole, names which, and leaves the others as they were.
#[test]
fn a_joint_reservation_fits_every_book_or_charges_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    let b = |epsilon| Budget {
        epsilon,
        delta: 1e-5,
    };
    // The parents' table has the smallest total: the one a pair runs out of first.
    l.set_budget("parents", b(1.0)).unwrap();
    let zcdp = |rho| {
        [Charge {
            mechanism: Mechanism::Zcdp { rho },
            count: 1,
        }]
    };
    // The parents' table alone first.
    let solo = zcdp(0.01);
    let alone = l.reserve("parents", &solo, "parents alone").unwrap();
    l.settle(alone, &solo).unwrap();
    let plan = zcdp(0.001);
    let ids = l
        .reserve_joint(&["pair", "parents", "children"], &plan, "pair", b(3.0))
        .unwrap();
    assert_eq!(ids.len(), 3);
    for book in ["pair", "parents", "children"] {
        assert!(l.spent(book).unwrap().epsilon > 0.0, "{book}");
    }
    let parents_before = l.spent("parents").unwrap().epsilon;
    let children_before = l.spent("children").unwrap().epsilon;
    assert!(
        parents_before > children_before,
        "two releases on the parents"
    );
    // A plan the parents' book has no room for is refused everywhere.
    let big = zcdp(0.03);
    let (at, e) = l
        .reserve_joint(&["pair2", "parents", "children"], &big, "big", b(3.0))
        .unwrap_err();
    assert_eq!(at, 1, "the parents' book is the one without room");
    assert!(matches!(e, LedgerError::Insufficient { .. }), "{e}");
    assert!(
        !l.has_entries("pair2").unwrap(),
        "nothing entered on the pair"
    );
    assert_eq!(l.spent("children").unwrap().epsilon, children_before);
    assert_eq!(l.spent("parents").unwrap().epsilon, parents_before);
}

/// The ledger's boundary, to the last bit: a plan fits a total equal to its own ε and is
/// refused by a total one ulp smaller, for every kind of accounting it holds (zCDP, the
/// discrete Gaussian's RDP and PLD, DP-SGD's subsampled Gaussian, a thresholded estimate
/// whose δ∞ only PLD can hold).
#[test]
fn a_plan_fits_its_own_epsilon_and_not_one_ulp_less() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
    let delta = 1e-6;
    let plans = [
        (Mechanism::Zcdp { rho: 0.05 }, 1),
        (Mechanism::DiscreteGaussian { std: 3.0 }, 10),
        (
            Mechanism::SubsampledGaussian {
                q: 0.01,
                sigma: 1.1,
            },
            500,
        ),
        (
            Mechanism::ThresholdedDiscreteGaussian {
                std: 4.0,
                delta_inf: 1e-9,
            },
            3,
        ),
    ];
    for (i, (mechanism, count)) in plans.into_iter().enumerate() {
        let plan = [Charge { mechanism, count }];
        let probe = format!("probe{i}");
        l.set_budget(
            &probe,
            Budget {
                epsilon: 100.0,
                delta,
            },
        )
        .unwrap();
        let exact = l.epsilon_after(&probe, &plan).unwrap().epsilon;
        assert!(exact.is_finite() && exact > 0.0, "{mechanism:?}: {exact}");
        let at = |key: &str, epsilon: f64, l: &mut Ledger| {
            l.set_budget(key, Budget { epsilon, delta }).unwrap();
            l.reserve(key, &plan, "boundary")
        };
        at(&format!("exact{i}"), exact, &mut l)
            .unwrap_or_else(|e| panic!("{mechanism:?} refused at its own ε = {exact}: {e}"));
        let under = at(&format!("under{i}"), exact.next_down(), &mut l);
        assert!(
            matches!(under, Err(LedgerError::Insufficient { .. })),
            "{mechanism:?} fitted ε one ulp below its own {exact}: {under:?}"
        );
    }
}
