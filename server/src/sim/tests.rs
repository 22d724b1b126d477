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

/// A leader paused (SIGSTOP) while the others elect a new one still believes it leads
/// when it resumes. If the follower that acknowledged the new leader's writes is wiped
/// while that leader is down, the stale leader and the blank follower make a majority
/// of two: the blank follower's acknowledgements must not count until it knows the
/// stale leader's term is current, or the stale leader commits over acknowledged writes.
#[test]
fn a_wiped_follower_lets_no_resumed_stale_leader_commit() {
    for seed in 1..=20 {
        let mut cluster = Cluster::scripted(seed);
        assert!(
            cluster.run_until(10_000, |c| c.leader().is_some() && c.acknowledged() > 0),
            "seed {seed}: no leader, or no write"
        );
        let Some((stale, term)) = cluster.leader() else {
            unreachable!()
        };
        cluster.inject(Fault::Pause(stale));
        let before = cluster.acknowledged();
        assert!(
            cluster.run_until(10_000, |c| {
                c.leader().is_some_and(|(_, t)| t > term) && c.acknowledged() > before + 5
            }),
            "seed {seed}: no new leader, or no write through it"
        );
        let Some((leader, _)) = cluster.leader() else {
            unreachable!()
        };
        let follower = 6 - stale - leader;
        cluster.inject(Fault::Crash(leader));
        cluster.inject(Fault::Wipe(follower));
        cluster.heal(Fault::Wipe(follower));
        cluster.heal(Fault::Pause(stale));
        cluster.run_until(5_000, |_| false);
        cluster.heal(Fault::Crash(leader));
        let report = cluster.finish_script();
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:#?}",
            report.violations
        );
    }
}
