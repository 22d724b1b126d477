//! The liveness core on a synthetic clock.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::*;
use crate::sim::Rng;

const MS: Duration = Duration::from_millis(1);

fn follower(leader_id: u64) -> View {
    View {
        standalone: false,
        leader: false,
        leader_id,
        applied: 0,
        leader_contact: None,
    }
}

fn leader(contact: Option<Instant>) -> View {
    View {
        standalone: false,
        leader: true,
        leader_id: 1,
        applied: 0,
        leader_contact: contact,
    }
}

fn report_seq(actions: &[Action]) -> Option<u64> {
    actions.iter().find_map(|a| match a {
        Action::Report { report, .. } => Some(report.seq),
        _ => None,
    })
}

#[test]
fn a_follower_serves_only_while_the_leader_acknowledges_its_reports() {
    let t0 = Instant::now();
    let window = 400 * MS;
    let mut core = LivenessCore::new(window, t0);
    let first = core.tick(follower(1), Vec::new(), t0);
    assert!(!core.serving());
    let seq = report_seq(&first).expect("a report to the leader");
    // An acknowledgement from a server that is not our leader counts for nothing.
    core.on_event(
        LivenessEvent::Ack {
            from: 2,
            seq,
            commit: 0,
        },
        follower(1),
        t0 + 10 * MS,
    );
    core.tick(follower(1), Vec::new(), t0 + 50 * MS);
    assert!(!core.serving());
    core.on_event(
        LivenessEvent::Ack {
            from: 1,
            seq,
            commit: 0,
        },
        follower(1),
        t0 + 60 * MS,
    );
    let started = core.tick(follower(1), Vec::new(), t0 + 100 * MS);
    assert!(started.contains(&Action::StartServing));
    // No answer after that: serving ends once the acknowledged report is older than
    // the window.
    let mut t = t0 + 100 * MS;
    while core.serving() {
        t += 50 * MS;
        core.tick(follower(1), Vec::new(), t);
        assert!(t < t0 + 2 * window, "still serving at {:?}", t - t0);
    }
    assert!(t - t0 > window);
}

/// A follower that rejoins (after a partition, a restart, a wiped disk) serves only once
/// it has applied what the leader had applied when it acknowledged: before, a wiped
/// follower answered new sessions from an empty tree while its snapshot was on its way.
#[test]
fn a_rejoining_follower_serves_once_it_caught_up_with_the_leader() {
    let t0 = Instant::now();
    let mut core = LivenessCore::new(400 * MS, t0);
    let behind = View {
        applied: 10,
        ..follower(1)
    };
    let seq = report_seq(&core.tick(behind, Vec::new(), t0)).expect("a report");
    core.on_event(
        LivenessEvent::Ack {
            from: 1,
            seq,
            commit: 5_000,
        },
        behind,
        t0 + 10 * MS,
    );
    core.tick(behind, Vec::new(), t0 + 50 * MS);
    assert!(!core.serving(), "served 4,990 entries behind the leader");
    let caught_up = View {
        applied: 5_000,
        ..follower(1)
    };
    let actions = core.tick(caught_up, Vec::new(), t0 + 100 * MS);
    assert!(actions.contains(&Action::StartServing));
    // Once serving, the usual lag behind the leader does not stop it.
    let seq = report_seq(&actions).expect("a report");
    core.on_event(
        LivenessEvent::Ack {
            from: 1,
            seq,
            commit: 5_200,
        },
        caught_up,
        t0 + 110 * MS,
    );
    core.tick(caught_up, Vec::new(), t0 + 150 * MS);
    assert!(core.serving());
}

#[test]
fn a_lost_report_is_made_good_by_the_next() {
    let t0 = Instant::now();
    let mut core = LivenessCore::new(400 * MS, t0);
    let contact = Some(t0);
    core.on_event(
        LivenessEvent::Opened {
            session: 7,
            timeout: Duration::from_secs(4),
        },
        leader(contact),
        t0,
    );
    // Ticks every 50 ms; a report every second says the client was heard 100 ms
    // before; one in two is lost.
    let mut seq = 0;
    for ms in (50..=20_000u64).step_by(50) {
        let now = t0 + Duration::from_millis(ms);
        let second = ms / 1000;
        if ms % 1000 == 0 && second % 2 == 0 {
            seq += 1;
            let report = LivenessReport {
                seq,
                sessions: vec![(7, 100)],
            };
            let acked = core.on_event(
                LivenessEvent::Report { from: 2, report },
                leader(Some(now)),
                now,
            );
            assert_eq!(acked, vec![Action::Ack { follower: 2, seq }]);
        }
        let actions = core.tick(leader(Some(now)), Vec::new(), now);
        assert!(
            !actions.contains(&Action::Expire(7)),
            "expired a session whose client pings, at {ms} ms"
        );
    }
    // Then silence: it expires a timeout after it was last heard of.
    let mut expired_at = None;
    for ms in (20_000..30_000).step_by(50) {
        let now = t0 + Duration::from_millis(ms);
        if core
            .tick(leader(Some(now)), Vec::new(), now)
            .contains(&Action::Expire(7))
        {
            expired_at = Some(ms);
            break;
        }
    }
    assert_eq!(expired_at, Some(23_900));
}

#[test]
fn a_leader_whose_clock_stood_still_expires_nobody_at_once() {
    let t0 = Instant::now();
    let mut core = LivenessCore::new(400 * MS, t0);
    core.on_event(
        LivenessEvent::Opened {
            session: 7,
            timeout: Duration::from_secs(4),
        },
        leader(Some(t0)),
        t0,
    );
    core.tick(leader(Some(t0)), Vec::new(), t0);
    // Paused for 10 s (SIGSTOP): on resuming, every session gets a full timeout.
    let resumed = t0 + Duration::from_secs(10);
    assert!(!core
        .tick(leader(Some(resumed)), Vec::new(), resumed)
        .contains(&Action::Expire(7)));
    let later = resumed + Duration::from_millis(3900);
    let mut t = resumed;
    while t < later {
        t += 50 * MS;
        assert!(!core
            .tick(leader(Some(t)), Vec::new(), t)
            .contains(&Action::Expire(7)));
    }
    let due = resumed + Duration::from_millis(4050);
    assert!(core
        .tick(leader(Some(due)), Vec::new(), due)
        .contains(&Action::Expire(7)));
}

#[test]
fn a_leader_out_of_touch_with_a_quorum_stops_serving_and_expires_nobody() {
    let t0 = Instant::now();
    let mut core = LivenessCore::new(400 * MS, t0);
    core.on_event(
        LivenessEvent::Opened {
            session: 7,
            timeout: Duration::from_secs(1),
        },
        leader(Some(t0)),
        t0,
    );
    let mut t = t0;
    let mut stopped = false;
    while t < t0 + Duration::from_secs(5) {
        t += 50 * MS;
        // The majority last answered at t0.
        let actions = core.tick(leader(Some(t0)), Vec::new(), t);
        stopped |= actions
            .iter()
            .any(|a| matches!(a, Action::StopServing { .. }));
        assert!(!actions.contains(&Action::Expire(7)));
    }
    assert!(stopped && !core.serving());
}

/// The lock-safety claim of the module docs, on 1,000 seeded schedules: a follower
/// and a leader (tickTime 500 ms, so a 400 ms window and 50 ms ticks at their own
/// phases), a session with the minimum timeout (2 tickTimes) whose client pings the
/// follower every third of it (less a random jitter), reports and acks delayed up to
/// 30 ms and lost one time in five, and the link cut at a random moment. The follower
/// must stop serving (its client is told) before the leader proposes the expiry (the
/// lock goes to another client).
#[test]
fn a_cut_off_follower_stops_serving_before_the_leader_expires_its_session() {
    let tick = 50u64;
    let window = 400 * MS;
    let timeout = 1000u64;
    for seed in 1..=1000u64 {
        let mut rng = Rng::new(seed);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut l = LivenessCore::new(window, t0);
        let mut f = LivenessCore::new(window, t0);
        let opened = LivenessEvent::Opened {
            session: 9,
            timeout: Duration::from_millis(timeout),
        };
        l.on_event(opened, leader(Some(t0)), t0);
        let cut = 2_000 + rng.below(3_000);
        let (l_phase, f_phase) = (rng.below(tick), rng.below(tick));
        let mut next_ping = rng.below(timeout / 3);
        let mut heard = 0u64;
        // Messages in flight: delivery time -> (to leader?, event).
        let mut wire: BTreeMap<(u64, u64), (bool, LivenessEvent)> = BTreeMap::new();
        let mut counter = 0u64;
        let mut stopped_at = None;
        let mut expired_at = None;
        for now_ms in 0..cut + 5 * timeout {
            let now = at(now_ms);
            if f.serving() && now_ms >= next_ping {
                heard = now_ms;
                next_ping = now_ms + timeout / 3 - rng.below(timeout / 10);
            }
            while let Some((&key, _)) = wire.iter().next() {
                if key.0 > now_ms {
                    break;
                }
                let Some((to_leader, event)) = wire.remove(&key) else {
                    break;
                };
                if to_leader {
                    for action in l.on_event(event, leader(Some(now)), now) {
                        if let Action::Ack { seq, .. } = action {
                            if now_ms < cut && rng.below(5) != 0 {
                                counter += 1;
                                let key = (now_ms + 1 + rng.below(30), counter);
                                wire.insert(
                                    key,
                                    (
                                        false,
                                        LivenessEvent::Ack {
                                            from: 1,
                                            seq,
                                            commit: 0,
                                        },
                                    ),
                                );
                            }
                        }
                    }
                } else {
                    f.on_event(event, follower(1), now);
                }
            }
            if now_ms % tick == f_phase {
                let held = if f.serving() || now_ms < 100 {
                    vec![(9, at(heard))]
                } else {
                    Vec::new()
                };
                for action in f.tick(follower(1), held, now) {
                    match action {
                        Action::Report { report, .. } if now_ms < cut && rng.below(5) != 0 => {
                            counter += 1;
                            let key = (now_ms + 1 + rng.below(30), counter);
                            wire.insert(key, (true, LivenessEvent::Report { from: 2, report }));
                        }
                        Action::StopServing { .. } if now_ms >= cut && stopped_at.is_none() => {
                            stopped_at = Some(now_ms)
                        }
                        _ => {}
                    }
                }
            }
            if now_ms % tick == l_phase
                && l.tick(leader(Some(now)), Vec::new(), now)
                    .contains(&Action::Expire(9))
            {
                expired_at = Some(now_ms);
                break;
            }
        }
        let expired = expired_at.unwrap_or_else(|| panic!("seed {seed}: never expired"));
        let stopped = stopped_at.unwrap_or(u64::MAX);
        assert!(
            stopped < expired,
            "seed {seed}: cut at {cut} ms, follower stopped serving at {stopped} ms (MAX: not \
             yet), but the leader expired the session at {expired} ms"
        );
    }
}
