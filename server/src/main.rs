//! `paddock zoo.cfg` (or `paddock --config zoo.cfg`): one Paddock server.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use paddock_server::config::Config;
use paddock_server::daemon::Daemon;

/// The default log filter; `RUST_LOG` replaces it.
const DEFAULT_LOG_FILTER: &str = "info,raft=warn";

/// How long a shutdown may take once a signal asked for it. Past this the process exits
/// anyway: every acknowledged write is already fsynced, so an exit here is no worse than
/// a crash, which the store recovers from. The graceful path normally takes well under a
/// second; this bounds the phases that cannot be interrupted cleanly.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(20);

const AFTER_HELP: &str = "\
Configuration:
  ZOO_CFG is a ZooKeeper zoo.cfg; an existing one works unchanged. The keys are
  ZooKeeper 3.8's (Administrator's Guide, \"Configuration Parameters\"). Which of them
  Paddock reads, its defaults and where it departs from ZooKeeper: the \"Configuration\"
  section of README.md and the commented conf/*.cfg files in the source tree.
  Relative paths in ZOO_CFG are resolved against the file's directory.

Logging:
  Logs go to stderr, coloured only when stderr is a terminal. RUST_LOG sets the
  filter (default \"info,raft=warn\"), e.g. RUST_LOG=debug or
  RUST_LOG=info,paddock_server::consensus=debug.

Stopping:
  SIGTERM or Ctrl-C stops the server; during start-up it exits at once, and a
  shutdown that has not finished after 20 s exits anyway (acknowledged writes are on
  disk by then).";

#[derive(Parser)]
#[command(
    name = "paddock",
    version,
    about = "A ZooKeeper-compatible coordination service",
    after_help = AFTER_HELP
)]
struct Args {
    /// A ZooKeeper zoo.cfg file (as zkServer.sh takes it).
    #[arg(value_name = "ZOO_CFG", required_unless_present = "config")]
    config_file: Option<PathBuf>,
    /// The same file, as an option.
    #[arg(long, short, value_name = "ZOO_CFG", conflicts_with = "config_file")]
    config: Option<PathBuf>,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| DEFAULT_LOG_FILTER.into()),
        )
        // Escape codes would litter a log file.
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let Some(path) = args.config.or(args.config_file) else {
        // clap requires one of the two.
        return ExitCode::from(2);
    };
    let config = match Config::load(&path) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("paddock: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    config.log_warnings();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("paddock: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = Arc::new(AtomicBool::new(false));
    let (signalled, on_signal) = tokio::sync::oneshot::channel();
    // Watched from a worker thread before anything slow starts: restoring a large
    // snapshot blocks the main thread, and a signal must still be answered.
    runtime.spawn(watch_signals(started.clone(), signalled));
    runtime.block_on(async {
        let daemon = match Daemon::start(&config).await {
            Ok(daemon) => daemon,
            Err(e) => {
                tracing::error!("{e:#}");
                return ExitCode::FAILURE;
            }
        };
        started.store(true, Ordering::Release);
        let _ = on_signal.await;
        let replay = daemon.replay();
        let (applied, replay_to) = (replay.applied(), replay.target());
        if applied < replay_to {
            tracing::info!(
                "shutting down while replaying the log (applied {applied} of {replay_to})"
            );
        } else {
            tracing::info!("shutting down");
        }
        daemon.shutdown().await;
        let applied = replay.applied();
        if applied < replay_to {
            // The rest is replayed at the next start; nothing is lost.
            tracing::info!("stopped before the replay finished (applied {applied} of {replay_to})");
        } else {
            tracing::info!("stopped");
        }
        ExitCode::SUCCESS
    })
}

/// Waits for SIGTERM or Ctrl-C. During start-up nothing has been acknowledged that is
/// not on disk, so the process exits at once; later it tells `main` to shut down and
/// bounds how long that may take.
async fn watch_signals(started: Arc<AtomicBool>, signalled: tokio::sync::oneshot::Sender<()>) {
    wait_for_signal().await;
    if !started.load(Ordering::Acquire) {
        tracing::info!("shutting down during start-up: exiting now");
        std::process::exit(0);
    }
    let _ = signalled.send(());
    tokio::time::sleep(SHUTDOWN_LIMIT).await;
    tracing::error!("shutdown did not finish within {SHUTDOWN_LIMIT:?}: exiting now");
    std::process::exit(1);
}

/// SIGTERM or Ctrl-C.
async fn wait_for_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
