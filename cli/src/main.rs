//! `paddock-cli`: a ZooKeeper shell in the manner of `zkCli.sh`.
//!
//! ```text
//! paddock-cli -server 127.0.0.1:2181                 # interactive shell
//! paddock-cli -server 127.0.0.1:2181 -c "ls -s /"    # one command
//! paddock-cli --server 127.0.0.1:2181 get /config    # one command, zkCli style
//! paddock-cli --server zk1:2281 --tls-ca ca.pem --tls-cert me.pem -c "ls /"   # TLS
//! ```
//!
//! A failing command exits with status 1 (2 for a usage error).
//!
//! # Layout
//! - `command`: the commands' grammar and usage lines.
//! - `shell`: the session, the shell's own commands, history, the input loop.
//! - `nodes`: the commands that act on znodes and watches.
//! - `quota`: setquota, listquota, delquota.
//! - `output`: stats, ACLs, events and failures in zkCli's words.

mod command;
mod nodes;
mod output;
mod quota;
mod shell;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use paddock_client::TlsOptions;

use crate::shell::Shell;

#[derive(Parser, Debug)]
#[command(
    name = "paddock-cli",
    version,
    about = "A shell for ZooKeeper-compatible servers (Paddock, Apache ZooKeeper)",
    after_help = "Run `help` inside the shell for its commands. `-server` is accepted for --server."
)]
struct Args {
    /// The connect string: `host:port[,host:port...][/chroot]`.
    #[arg(long, default_value = "127.0.0.1:2181")]
    server: String,
    /// Session timeout in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    timeout: u64,
    /// Connect with TLS, trusting the CA certificates in this PEM file (the servers'
    /// `secureClientPort`).
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// A client certificate to present over TLS: a PEM file with the certificate chain
    /// (and the private key, unless --tls-key names another file), as ZooKeeper's PEM
    /// key stores hold them.
    #[arg(long, value_name = "PEM", requires = "tls_ca")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert, when it is in a file of its own.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Run one command and exit.
    #[arg(short = 'c', long = "command")]
    command: Option<String>,
    /// A command given as words, zkCli style (`paddock-cli --server h:p ls /`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    words: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        // Escape codes would litter output redirected to a file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    // zkCli spells the option with one dash.
    let argv = std::env::args().map(|arg| match arg.as_str() {
        "-server" => "--server".to_owned(),
        _ => arg,
    });
    let args = Args::parse_from(argv);
    match run(args).await {
        Ok(code) => code,
        Err(err) => {
            eprintln!("Error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<ExitCode> {
    // Words after the options are quoted back into one line, as -c gives it.
    let one_shot = match (&args.command, args.words.is_empty()) {
        (Some(command), _) => Some(command.clone()),
        (None, false) => Some(
            shlex::try_join(args.words.iter().map(String::as_str))
                .map_err(|err| anyhow!("cannot quote the command: {err}"))?,
        ),
        (None, true) => None,
    };
    let tls = match &args.tls_ca {
        None => None,
        Some(ca) => {
            let identity = args.tls_cert.as_ref().map(|cert| {
                let key = args.tls_key.as_ref().unwrap_or(cert);
                (cert, key)
            });
            Some(TlsOptions::from_pem(ca, identity).context("cannot set up TLS")?)
        }
    };
    let options = shell::options(Duration::from_millis(args.timeout), tls);
    let mut shell = Shell::connect(&args.server, options).await?;
    let code = match one_shot {
        Some(line) => shell.run_line(&line).await.exit_code(),
        None => shell.interact().await?,
    };
    shell.close().await;
    Ok(code)
}
