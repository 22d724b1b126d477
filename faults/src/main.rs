//! The long soak: `cargo run -p paddock-faults --release -- --cycles 200 --nemesis all
//! --workload all --seed N`. Prints each cycle as it goes, then the report; exits 1 if
//! any check failed, 2 if the harness could not run, 0 if skipped (no namespaces).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use paddock_faults::{rng, run, Error, NemesisKind, Options, WorkloadKind};

/// Drive three Paddock servers in network namespaces through faults and check them.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Fault/heal cycles.
    #[arg(long, default_value_t = 20)]
    cycles: usize,
    /// Comma-separated nemeses (isolate, split, partial, oneway, pause, kill) or `all`;
    /// each cycle draws one.
    #[arg(long, default_value = "all")]
    nemesis: String,
    /// Comma-separated workloads (register, unique, order, lock, ephemeral, watch, cache) or `all`.
    #[arg(long, default_value = "all")]
    workload: String,
    /// Replays a run's random choices (printed by every run).
    #[arg(long)]
    seed: Option<u64>,
    /// Fault duration range in ms, `MIN-MAX`.
    #[arg(long, default_value = "5500-8000")]
    fault_ms: String,
    /// Healed duration range in ms, `MIN-MAX`.
    #[arg(long, default_value = "2000-4000")]
    heal_ms: String,
    /// Client session timeout in ms.
    #[arg(long, default_value_t = 4000)]
    session_timeout_ms: u64,
}

fn list<T: Copy>(text: &str, all: &[T], parse: fn(&str) -> Option<T>) -> anyhow::Result<Vec<T>> {
    if text == "all" {
        return Ok(all.to_vec());
    }
    text.split(',')
        .map(|name| parse(name.trim()).with_context(|| format!("unknown name {name:?}")))
        .collect()
}

fn range(text: &str) -> anyhow::Result<(u64, u64)> {
    let (lo, hi) = text.split_once('-').context("expected MIN-MAX")?;
    let (lo, hi) = (lo.parse()?, hi.parse()?);
    if lo > hi {
        bail!("empty range {text}");
    }
    Ok((lo, hi))
}

fn main() -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let seed = args.seed.unwrap_or_else(rng::fresh_seed);
    let mut options = Options::short(NemesisKind::Isolate, seed);
    options.nemeses = list(&args.nemesis, &NemesisKind::ALL, NemesisKind::parse)?;
    options.workloads = list(&args.workload, &WorkloadKind::ALL, WorkloadKind::parse)?;
    options.cycles = args.cycles;
    options.fault_ms = range(&args.fault_ms)?;
    options.heal_ms = range(&args.heal_ms)?;
    options.session_timeout = Duration::from_millis(args.session_timeout_ms);
    options.keep_logs = Some(std::env::temp_dir().join(format!("paddock-faults-{seed}")));
    println!("paddock-faults: seed {seed} (replay with --seed {seed})");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match runtime.block_on(run(&options)) {
        Ok(report) => {
            println!("\n{report}");
            Ok(if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Err(Error::Unavailable(why)) => {
            println!("skipped: {why}");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("paddock-faults: {err}");
            Ok(ExitCode::from(2))
        }
    }
}
