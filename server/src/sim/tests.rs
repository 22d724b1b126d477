//! Seeded runs of the simulated ensemble. `PADDOCK_SIM_SEEDS=N` runs N seeds instead
//! of the default (`PADDOCK_SIM_FIRST` moves the first), for a longer soak:
//! `PADDOCK_SIM_SEEDS=20000 cargo test -p paddock-server --release --lib sim::`.

use super::*;

fn seeds() -> std::ops::Range<u64> {
    let count = std::env::var("PADDOCK_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let first = std::env::var("PADDOCK_SIM_FIRST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    first..first + count
}

#[test]
fn seeded_runs_keep_every_invariant() {
    let mut totals = SimReport::default();
    for seed in seeds() {
        let report = Cluster::new(seed).run();
        assert!(
            report.violations.is_empty(),
            "seed {seed} (replay: PADDOCK_SIM_FIRST={seed} PADDOCK_SIM_SEEDS=1): {:#?}\nfaults: {:?}",
            report.violations,
            report.faults
        );
        totals.acknowledged += report.acknowledged;
        totals.expired += report.expired;
        totals.elections += report.elections;
        totals.events += report.events;
        totals.faults.extend(report.faults);
    }
    eprintln!(
        "{} runs: {} faults, {} elections, {} acknowledged writes, {} expired sessions, {} \
         watch events",
        seeds().count(),
        totals.faults.len(),
        totals.elections,
        totals.acknowledged,
        totals.expired,
        totals.events
    );
    // The runs must exercise what they check.
    assert!(totals.acknowledged > 0 && totals.elections > 0 && !totals.faults.is_empty());
    assert!(totals.events > 0);
}
