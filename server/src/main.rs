//! `paddock --config zoo.cfg`: one Paddock server.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use paddock_server::config::Config;
use paddock_server::daemon::Daemon;

#[derive(Parser)]
#[command(
    name = "paddock",
    version,
    about = "A ZooKeeper-compatible coordination service"
)]
struct Args {
    /// A ZooKeeper zoo.cfg file.
    #[arg(long, short)]
    config: PathBuf,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,raft=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = match Config::load(&args.config) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("paddock: {}: {e}", args.config.display());
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
    runtime.block_on(async {
        let daemon = match Daemon::start(&config).await {
            Ok(daemon) => daemon,
            Err(e) => {
                tracing::error!("{e:#}");
                return ExitCode::FAILURE;
            }
        };
        wait_for_signal().await;
        tracing::info!("shutting down");
        daemon.shutdown().await;
        ExitCode::SUCCESS
    })
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
