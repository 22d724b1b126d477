//! One test per nemesis. The runs are serialised: three servers plus their clients are
//! enough load for two cores, and the checks that measure time (lock beliefs, how soon
//! a client is told) must not be skewed by a second cluster competing for the CPU.

use std::sync::Mutex;

use paddock_faults::{rng, run, Error, NemesisKind, Options};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn short(nemesis: NemesisKind) {
    // A test that panicked still released the cluster; the next may go on.
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let seed = std::env::var("PADDOCK_FAULTS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rng::fresh_seed);
    println!("{}: seed {seed}", nemesis.name());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let started = std::time::Instant::now();
    match runtime.block_on(run(&Options::short(nemesis, seed))) {
        Err(Error::Unavailable(why)) => println!("skipped: {why}"),
        Err(err) => panic!(
            "{}: the harness failed (seed {seed}): {err}",
            nemesis.name()
        ),
        Ok(report) => {
            println!("{report}\n({:.0} s)", started.elapsed().as_secs_f64());
            assert!(
                report.passed(),
                "{}: violations of {:?}; replay with PADDOCK_FAULTS_SEED={seed}",
                nemesis.name(),
                report.failed_checks()
            );
        }
    }
}

#[test]
fn isolate() {
    short(NemesisKind::Isolate);
}

#[test]
fn split() {
    short(NemesisKind::Split);
}

#[test]
fn partial() {
    short(NemesisKind::Partial);
}

#[test]
fn oneway() {
    short(NemesisKind::OneWay);
}

#[test]
fn pause() {
    short(NemesisKind::Pause);
}

#[test]
fn kill() {
    short(NemesisKind::Kill);
}

#[test]
fn wipe_data() {
    short(NemesisKind::WipeData);
}

#[test]
fn wipe_log() {
    short(NemesisKind::WipeLog);
}
