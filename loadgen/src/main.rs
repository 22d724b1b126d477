//! `paddock-loadgen`: see `paddock_loadgen` and `--help`; `paddock-loadgen merge
//! LOG...` combines several processes' `--hist-log`s into one report.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use paddock_loadgen::run::Outcome;
use paddock_loadgen::{merge, plot, report, run, Plan};

/// `paddock-loadgen merge`: one report from several processes' interval logs.
#[derive(Debug, Parser)]
#[command(
    name = "paddock-loadgen merge",
    bin_name = "paddock-loadgen merge",
    about = "Combines the --hist-log files of several paddock-loadgen processes (one \
             load, run from several machines) into one report: summed throughput, \
             exact percentiles of the combined samples, the same tables and plot"
)]
struct MergeArgs {
    /// The interval logs (--hist-log) of the processes.
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    /// Print the per-interval rows too, as a single run does live.
    #[arg(long)]
    rows: bool,
    /// Print one machine-readable summary line (JSON) instead of the text summary.
    #[arg(long)]
    json: bool,
    /// Write the merged per-interval series to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw the merged TPS and latency over time into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        // Escape codes would litter output redirected to a file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_default();
    let rest: Vec<_> = args.collect();
    if rest.first().is_some_and(|a| a == "merge") {
        let merge_args =
            MergeArgs::parse_from(std::iter::once(program).chain(rest.into_iter().skip(1)));
        return merge_command(merge_args);
    }
    run_command(Plan::parse_from(std::iter::once(program).chain(rest)))
}

fn run_command(plan: Plan) -> ExitCode {
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
    match outcome {
        Ok(outcome) => finish(&outcome, json, csv, svg),
        Err(e) => {
            eprintln!("paddock-loadgen: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn merge_command(args: MergeArgs) -> ExitCode {
    let outcome = match merge::merge_files(&args.logs) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("paddock-loadgen merge: {e}");
            return ExitCode::from(2);
        }
    };
    if args.rows && !args.json {
        println!("{}", report::HEADER);
        for row in &outcome.rows {
            println!("{}", row.line());
        }
    }
    finish(&outcome, args.json, args.csv, args.plot)
}

/// The summary, the CSV and the plot; exit status 1 if anything failed in the run.
fn finish(outcome: &Outcome, json: bool, csv: Option<PathBuf>, svg: Option<PathBuf>) -> ExitCode {
    let summary = &outcome.summary;
    if json {
        match serde_json::to_string(summary) {
            Ok(line) => println!("{line}"),
            Err(e) => eprintln!("paddock-loadgen: {e}"),
        }
    } else {
        print!("{}", summary.text());
    }
    if let Some(path) = csv {
        if let Err(e) = report::write_csv(&path, &outcome.rows) {
            eprintln!("paddock-loadgen: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = svg {
        let title = format!(
            "{} {}B x{}",
            summary.scenario, summary.data_size, summary.conns
        );
        if let Err(e) = plot::write_svg(
            &path,
            &title,
            summary.scenario,
            &outcome.rows,
            &outcome.totals,
        ) {
            eprintln!("paddock-loadgen: cannot draw {}: {e:#}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if summary.fail_total > 0 {
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
