//! `paddock-loadgen`: see `paddock_loadgen` and `--help`.

use std::process::ExitCode;

use clap::Parser;
use paddock_loadgen::{plot, report, run, Plan};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        // Escape codes would litter output redirected to a file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let plan = Plan::parse();
    if let Err(message) = raise_fd_limit(plan.total_connections()) {
        eprintln!("paddock-loadgen: {message}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("paddock-loadgen: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json = plan.json;
    let csv = plan.csv.clone();
    let svg = plan.plot.clone();
    let title = format!("{} {}B x{}", plan.scenario, plan.data_size, plan.conns);
    // The header comes with the first row, once connected: a run that cannot connect
    // prints only its error.
    let mut header_printed = false;
    let outcome = runtime.block_on(run(
        plan,
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
        |row| {
            if !json {
                if !header_printed {
                    println!("{}", report::HEADER);
                    header_printed = true;
                }
                println!("{}", row.line());
            }
        },
    ));
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("paddock-loadgen: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if json {
        match serde_json::to_string(&outcome.summary) {
            Ok(line) => println!("{line}"),
            Err(e) => eprintln!("paddock-loadgen: {e}"),
        }
    } else {
        print!("{}", outcome.summary.text());
    }
    if let Some(path) = csv {
        if let Err(e) = report::write_csv(&path, &outcome.rows) {
            eprintln!("paddock-loadgen: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = svg {
        if let Err(e) = plot::write_svg(&path, &title, &outcome.rows) {
            eprintln!("paddock-loadgen: cannot draw {}: {e:#}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if outcome.summary.fail_total > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Raises the soft limit on open files toward the hard limit; an error if even that
/// can't hold one descriptor per connection plus slack.
fn raise_fd_limit(connections: usize) -> Result<(), String> {
    let needed = connections as u64 + 64;
    let limit = rlimit::increase_nofile_limit(needed.max(4096))
        .map_err(|e| format!("cannot read or raise the open-file limit: {e}"))?;
    if limit < needed {
        return Err(format!(
            "{connections} connections need about {needed} open files but the limit is {limit}; \
             raise it (ulimit -n) or use fewer --conns"
        ));
    }
    Ok(())
}
