//! The shell: one session (or none, after `close`), the commands that act on the shell
//! itself (connect, close, printwatches, history, redo, version, help, quit), and the
//! input loop — line editing and history through rustyline on a terminal, plain lines
//! from a pipe.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use paddock_client::{Client, ConnectOptions, TlsOptions};
use rustyline::error::ReadlineError;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::command::{help_text, is_command, usage_of, Command, Line};
use crate::nodes::execute;
use crate::output::describe;

/// How a command line ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// The command failed (exit status 1).
    Failed,
    /// The line was not a valid command (exit status 2).
    Usage,
    Quit,
}

impl Status {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Status::Ok | Status::Quit => ExitCode::SUCCESS,
            Status::Failed => ExitCode::FAILURE,
            Status::Usage => ExitCode::from(2),
        }
    }
}

pub struct Shell {
    /// The connect string of the current (or last) session.
    server: String,
    /// How every session of the shell connects (timeout, TLS).
    options: ConnectOptions,
    client: Option<Client>,
    /// `printwatches`: whether watch events are printed.
    print_watches: Arc<AtomicBool>,
    /// Every command line run, numbered from 0 for `history` and `redo`.
    history: Vec<String>,
}

/// Options for a session a person waits on: a refused connection fails at once.
pub fn options(timeout: Duration, tls: Option<TlsOptions>) -> ConnectOptions {
    ConnectOptions {
        fail_fast_when_refused: true,
        tls,
        ..ConnectOptions::with_session_timeout(timeout)
    }
}

impl Shell {
    /// Connects to `server`.
    pub async fn connect(server: &str, options: ConnectOptions) -> Result<Shell> {
        let client = Client::connect(server, options.clone())
            .await
            .with_context(|| format!("cannot connect to {server}"))?;
        Ok(Shell {
            server: server.to_owned(),
            options,
            client: Some(client),
            print_watches: Arc::new(AtomicBool::new(true)),
            history: Vec::new(),
        })
    }

    /// Ends the session, if any.
    pub async fn close(&mut self) {
        if let Some(client) = self.client.take() {
            if let Err(err) = client.close().await {
                tracing::debug!("closing the session: {err}");
            }
        }
    }

    fn prompt(&self) -> String {
        let state = match &self.client {
            Some(client) => format!("{:?}", client.state()).to_uppercase(),
            None => "CLOSED".to_owned(),
        };
        format!(
            "[paddock: {}({state}) {}] ",
            self.server,
            self.history.len()
        )
    }

    /// Runs one line as typed: split into words as a shell would, recorded in history.
    pub async fn run_line(&mut self, line: &str) -> Status {
        let Some(words) = shlex::split(line) else {
            eprintln!("unterminated quote or trailing backslash in: {line}");
            return Status::Usage;
        };
        if words.is_empty() {
            return Status::Ok;
        }
        self.history.push(line.trim().to_owned());
        self.run_words(words).await
    }

    /// Runs one command given as words, already recorded in the history.
    async fn run_words(&mut self, mut words: Vec<String>) -> Status {
        if words[0] == "redo" {
            match self.redo_target(&words) {
                Ok(target) => words = target,
                Err(message) => {
                    eprintln!("{message}");
                    return Status::Failed;
                }
            }
        }
        let name = words[0].clone();
        if !is_command(&name) {
            // zkCli: the usage, then the complaint.
            eprint!("{}", help_text());
            eprintln!("Command not found: Command not found {name}");
            return Status::Usage;
        }
        let line = match Line::try_parse_from(&words) {
            Ok(line) => line,
            Err(err) => {
                let rendered = err.to_string();
                let reason = rendered.lines().next().unwrap_or_default();
                eprintln!("{}", reason.trim_start_matches("error: "));
                if let Some(usage) = usage_of(&name) {
                    eprintln!("usage: {usage}");
                }
                return Status::Usage;
            }
        };
        self.run(line.command).await
    }

    /// `redo N`: the words of history entry N, which replaces `redo N` in the history.
    fn redo_target(&mut self, words: &[String]) -> Result<Vec<String>, String> {
        let current = self.history.len().saturating_sub(1);
        let index: usize = words
            .get(1)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("usage: {}", usage_of("redo").unwrap_or_default()))?;
        if index >= current {
            return Err("Command index out of range".to_owned());
        }
        let line = self.history[index].clone();
        let target = shlex::split(&line).unwrap_or_default();
        if target.first().map(String::as_str) == Some("redo") {
            return Err("No redoing redos".to_owned());
        }
        self.history[current] = line;
        Ok(target)
    }

    async fn run(&mut self, command: Command) -> Status {
        match command {
            Command::Connect { server } => {
                self.close().await;
                if let Some(server) = server {
                    self.server = server;
                }
                match Client::connect(&self.server, self.options.clone()).await {
                    Ok(client) => {
                        self.client = Some(client);
                        Status::Ok
                    }
                    Err(err) => {
                        eprintln!("cannot connect to {}: {err}", self.server);
                        Status::Failed
                    }
                }
            }
            Command::Close => {
                self.close().await;
                Status::Ok
            }
            Command::PrintWatches { on_off } => match on_off.as_deref() {
                Some("on") => {
                    self.print_watches.store(true, Ordering::Relaxed);
                    Status::Ok
                }
                Some("off") => {
                    self.print_watches.store(false, Ordering::Relaxed);
                    Status::Ok
                }
                None => {
                    let on = self.print_watches.load(Ordering::Relaxed);
                    println!("printwatches is {}", if on { "on" } else { "off" });
                    Status::Ok
                }
                Some(_) => {
                    eprintln!("usage: {}", usage_of("printwatches").unwrap_or_default());
                    Status::Usage
                }
            },
            Command::History => {
                let current = self.history.len().saturating_sub(1);
                for (i, line) in self
                    .history
                    .iter()
                    .enumerate()
                    .skip(current.saturating_sub(10))
                {
                    println!("{i} - {line}");
                }
                Status::Ok
            }
            Command::Version => {
                println!(
                    "paddock-cli version {} (ZooKeeper 3.8 CLI compatible)",
                    env!("CARGO_PKG_VERSION")
                );
                Status::Ok
            }
            Command::Help => {
                print!("{}", help_text());
                Status::Ok
            }
            Command::Quit => Status::Quit,
            // Parsed as a command, but resolved before: `redo` never reaches here.
            Command::Redo { .. } => Status::Usage,
            command => {
                let Some(client) = &self.client else {
                    eprintln!("Not connected");
                    return Status::Failed;
                };
                let path = command.path().map(str::to_owned);
                match execute(client, command, &self.print_watches).await {
                    Ok(()) => Status::Ok,
                    Err(err) => {
                        eprintln!("{}", describe(&err, path.as_deref()));
                        Status::Failed
                    }
                }
            }
        }
    }

    /// The interactive loop until `quit` or end of input. On a terminal: a prompt,
    /// line editing and history (rustyline); otherwise one command per line, and the
    /// status of the last command is the shell's.
    pub async fn interact(&mut self) -> Result<ExitCode> {
        if std::io::stdin().is_terminal() {
            self.read_terminal().await?;
            return Ok(ExitCode::SUCCESS);
        }
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        let mut status = Status::Ok;
        while let Some(line) = lines.next_line().await? {
            match self.run_line(&line).await {
                Status::Quit => break,
                other => status = other,
            }
        }
        Ok(status.exit_code())
    }

    async fn read_terminal(&mut self) -> Result<()> {
        let mut editor = rustyline::DefaultEditor::new()?;
        loop {
            let prompt = self.prompt();
            // rustyline blocks; the runtime's other threads keep the session alive.
            let read = tokio::task::block_in_place(|| editor.readline(&prompt));
            match read {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        editor.add_history_entry(line.as_str())?;
                    }
                    if self.run_line(&line).await == Status::Quit {
                        return Ok(());
                    }
                }
                // Ctrl-C drops the line being typed, as a shell does.
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => return Ok(()),
                Err(err) => return Err(err.into()),
            }
        }
    }
}
