//! `paddock-cli`: a ZooKeeper shell in the manner of `zkCli.sh`.
//!
//! ```text
//! paddock-cli -server 127.0.0.1:2181                 # interactive shell
//! paddock-cli -server 127.0.0.1:2181 -c "ls -s /"    # one command
//! paddock-cli --server 127.0.0.1:2181 get /config    # one command, zkCli style
//! ```
//!
//! A failing command exits with status 1 (2 for a usage error).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, Subcommand};
use paddock_client::{
    perms, Acl, AddWatchMode, Client, ConnectOptions, CreateMode, CreateOptions, Error, ErrorCode,
    Id, Stat, WatchFuture, WatchedEvent, WatcherType,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

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
    /// Run one command and exit.
    #[arg(short = 'c', long = "command")]
    command: Option<String>,
    /// A command given as words, zkCli style (`paddock-cli --server h:p ls /`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    words: Vec<String>,
}

/// One shell command. Names and flags follow zkCli.
#[derive(Parser, Debug)]
#[command(
    name = "paddock-cli",
    no_binary_name = true,
    disable_help_subcommand = true
)]
struct Line {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List a node's children.
    Ls {
        /// Also print the node's stat.
        #[arg(short = 's')]
        stat: bool,
        /// List the whole subtree, one path per line.
        #[arg(short = 'R')]
        recursive: bool,
        /// Leave a child watch.
        #[arg(short = 'w')]
        watch: bool,
        path: String,
    },
    /// Print a node's data.
    Get {
        #[arg(short = 's')]
        stat: bool,
        /// Leave a data watch.
        #[arg(short = 'w')]
        watch: bool,
        path: String,
    },
    /// Replace a node's data.
    Set {
        #[arg(short = 's')]
        stat: bool,
        /// Only if the node has this version.
        #[arg(short = 'v')]
        version: Option<i32>,
        path: String,
        data: String,
    },
    /// Create a node.
    Create {
        /// Ephemeral.
        #[arg(short = 'e')]
        ephemeral: bool,
        /// Sequential.
        #[arg(short = 's')]
        sequential: bool,
        /// Container.
        #[arg(short = 'c')]
        container: bool,
        /// TTL in milliseconds (a TTL node).
        #[arg(short = 't')]
        ttl: Option<u64>,
        path: String,
        data: Option<String>,
        /// ACL as scheme:id:perms[,scheme:id:perms...], perms from `cdrwa`.
        acl: Option<String>,
    },
    /// Delete a node.
    Delete {
        #[arg(short = 'v')]
        version: Option<i32>,
        path: String,
    },
    /// Delete a node and everything below it.
    #[command(name = "deleteall", alias = "rmr")]
    DeleteAll { path: String },
    /// Print a node's stat.
    Stat {
        #[arg(short = 'w')]
        watch: bool,
        path: String,
    },
    /// Bring the connected server up to date with the leader.
    Sync { path: String },
    /// Print a node's ACL.
    #[command(name = "getAcl")]
    GetAcl {
        #[arg(short = 's')]
        stat: bool,
        path: String,
    },
    /// Set a node's ACL.
    #[command(name = "setAcl")]
    SetAcl {
        #[arg(short = 's')]
        stat: bool,
        /// Only if the node's ACL version is this.
        #[arg(short = 'v')]
        version: Option<i32>,
        /// Apply to the whole subtree.
        #[arg(short = 'R')]
        recursive: bool,
        path: String,
        acl: String,
    },
    /// Add credentials to the session, e.g. `addauth digest user:password`.
    #[command(name = "addauth")]
    AddAuth { scheme: String, auth: String },
    /// Add a persistent watch; its events are printed as they come.
    #[command(name = "addWatch")]
    AddWatch {
        /// `persistent` or `persistentRecursive`.
        #[arg(short = 'm', default_value = "persistentRecursive")]
        mode: String,
        path: String,
    },
    /// Remove watches from a node.
    #[command(name = "removewatches")]
    RemoveWatches {
        /// Child watches.
        #[arg(short = 'c')]
        children: bool,
        /// Data watches.
        #[arg(short = 'd')]
        data: bool,
        /// Every watch (the default).
        #[arg(short = 'a')]
        any: bool,
        /// Persistent watches.
        #[arg(short = 'p')]
        persistent: bool,
        /// Persistent recursive watches.
        #[arg(short = 'r')]
        recursive: bool,
        path: String,
    },
    /// List this session's ephemeral nodes under a path.
    #[command(name = "getEphemerals")]
    GetEphemerals {
        #[arg(default_value = "/")]
        path: String,
    },
    /// Count the nodes below a path.
    #[command(name = "getAllChildrenNumber")]
    GetAllChildrenNumber { path: String },
    /// Print the identities this session is authenticated as.
    #[command(name = "whoami")]
    WhoAmI,
    /// Print the ensemble's configuration.
    Config {
        #[arg(short = 's')]
        stat: bool,
    },
    /// Print every event under a path until Ctrl-C.
    Watch {
        /// `persistent` or `persistentRecursive`.
        #[arg(short = 'm', default_value = "persistentRecursive")]
        mode: String,
        path: String,
    },
    /// List the commands.
    Help,
    /// Leave the shell.
    #[command(alias = "exit")]
    Quit,
}

/// What a command asks of the shell after it ran.
enum Next {
    Continue,
    Quit,
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
    let options = ConnectOptions::with_session_timeout(Duration::from_millis(args.timeout));
    let client = Client::connect(&args.server, options)
        .await
        .with_context(|| format!("cannot connect to {}", args.server))?;
    let one_shot = match (&args.command, args.words.is_empty()) {
        (Some(command), _) => Some(split_words(command)?),
        (None, false) => Some(args.words.clone()),
        (None, true) => None,
    };
    let code = match one_shot {
        Some(words) => run_line(&client, &words).await,
        None => shell(&client, &args.server).await?,
    };
    client.close().await?;
    Ok(code)
}

/// Runs one command line; the exit status it deserves.
async fn run_line(client: &Client, words: &[String]) -> ExitCode {
    if words.is_empty() {
        return ExitCode::SUCCESS;
    }
    let line = match Line::try_parse_from(words) {
        Ok(line) => line,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(2);
        }
    };
    match execute(client, line.command).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}", describe(&err));
            ExitCode::FAILURE
        }
    }
}

/// The interactive loop: a prompt (on a terminal), one command per line.
async fn shell(client: &Client, server: &str) -> Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut count = 0u64;
    let mut status = ExitCode::SUCCESS;
    loop {
        if interactive {
            let state = format!("{:?}", client.state()).to_uppercase();
            stdout
                .write_all(format!("[paddock: {server}({state}) {count}] ").as_bytes())
                .await?;
            stdout.flush().await?;
        }
        let Some(line) = lines.next_line().await? else {
            break;
        };
        count += 1;
        let words = match split_words(&line) {
            Ok(words) if words.is_empty() => continue,
            Ok(words) => words,
            Err(err) => {
                eprintln!("{err}");
                continue;
            }
        };
        let parsed = match Line::try_parse_from(&words) {
            Ok(parsed) => parsed,
            Err(err) => {
                let _ = err.print();
                status = ExitCode::from(2);
                continue;
            }
        };
        match execute(client, parsed.command).await {
            Ok(Next::Quit) => break,
            Ok(Next::Continue) => status = ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("{}", describe(&err));
                status = ExitCode::FAILURE;
            }
        }
    }
    // Without a terminal, the status of the last command is the shell's.
    Ok(if interactive {
        ExitCode::SUCCESS
    } else {
        status
    })
}

async fn execute(client: &Client, command: Command) -> Result<Next> {
    match command {
        Command::Ls {
            stat,
            recursive,
            watch,
            path,
        } => {
            if recursive {
                for node in subtree(client, &path).await? {
                    println!("{node}");
                }
            } else if watch {
                let (mut children, stat_of, fired) = client.get_children2_w(&path).await?;
                children.sort();
                println!("[{}]", children.join(", "));
                if stat {
                    print_stat(&stat_of);
                }
                print_when_fired(fired);
            } else {
                let (mut children, stat_of) = client.get_children2(&path).await?;
                children.sort();
                println!("[{}]", children.join(", "));
                if stat {
                    print_stat(&stat_of);
                }
            }
        }
        Command::Get { stat, watch, path } => {
            let (data, stat_of) = if watch {
                let (data, stat_of, fired) = client.get_data_w(&path).await?;
                print_when_fired(fired);
                (data, stat_of)
            } else {
                client.get_data(&path).await?
            };
            println!("{}", String::from_utf8_lossy(&data));
            if stat {
                print_stat(&stat_of);
            }
        }
        Command::Set {
            stat,
            version,
            path,
            data,
        } => {
            let stat_of = client.set_data(&path, data.as_bytes(), version).await?;
            if stat {
                print_stat(&stat_of);
            }
        }
        Command::Create {
            ephemeral,
            sequential,
            container,
            ttl,
            path,
            data,
            acl,
        } => {
            let mode = create_mode(ephemeral, sequential, container, ttl.is_some())?;
            let mut options = CreateOptions::new(mode);
            if let Some(ttl) = ttl {
                options = options.ttl(Duration::from_millis(ttl));
            }
            if let Some(acl) = acl {
                options = options.acl(parse_acl(&acl)?);
            }
            let data = data.unwrap_or_default();
            let created = client.create(&path, data.as_bytes(), options).await?;
            println!("Created {created}");
        }
        Command::Delete { version, path } => client.delete(&path, version).await?,
        Command::DeleteAll { path } => {
            let mut nodes = subtree(client, &path).await?;
            // Children before parents.
            nodes.sort_by_key(|node| std::cmp::Reverse(node.matches('/').count()));
            for node in nodes.iter().filter(|node| node.as_str() != "/") {
                match client.delete(node, None).await {
                    Ok(()) | Err(Error::Keeper(ErrorCode::NoNode)) => {}
                    Err(err) => return Err(err.into()),
                }
            }
        }
        Command::Stat { watch, path } => {
            if watch {
                let (stat, fired) = client.exists_w(&path).await?;
                print_when_fired(fired);
                let stat = stat.ok_or(Error::Keeper(ErrorCode::NoNode))?;
                print_stat(&stat);
            } else {
                let stat = client
                    .exists(&path)
                    .await?
                    .ok_or(Error::Keeper(ErrorCode::NoNode))?;
                print_stat(&stat);
            }
        }
        Command::Sync { path } => {
            client.sync(&path).await?;
            println!("Sync is OK");
        }
        Command::GetAcl { stat, path } => {
            let (acl, stat_of) = client.get_acl(&path).await?;
            for entry in &acl {
                println!(
                    "'{},'{}\n: {}",
                    entry.id.scheme,
                    entry.id.id,
                    perms_string(entry.perms)
                );
            }
            if stat {
                print_stat(&stat_of);
            }
        }
        Command::SetAcl {
            stat,
            version,
            recursive,
            path,
            acl,
        } => {
            let acl = parse_acl(&acl)?;
            let targets = if recursive {
                subtree(client, &path).await?
            } else {
                vec![path]
            };
            for target in targets {
                let stat_of = client.set_acl(&target, &acl, version).await?;
                if stat {
                    print_stat(&stat_of);
                }
            }
        }
        Command::AddAuth { scheme, auth } => client.add_auth(&scheme, auth.as_bytes()).await?,
        Command::AddWatch { mode, path } => {
            let mut watch = client.add_watch(&path, watch_mode(&mode)?).await?;
            tokio::spawn(async move {
                while let Some(Ok(event)) = watch.next_event().await {
                    print_event(&event);
                }
            });
        }
        Command::RemoveWatches {
            children,
            data,
            any,
            persistent,
            recursive,
            path,
        } => {
            let watcher_type = match (children, data, persistent, recursive) {
                _ if any => WatcherType::Any,
                (true, false, false, false) => WatcherType::Children,
                (false, true, false, false) => WatcherType::Data,
                (false, false, true, false) => WatcherType::Persistent,
                (false, false, false, true) => WatcherType::PersistentRecursive,
                (false, false, false, false) => WatcherType::Any,
                _ => bail!("give at most one of -c, -d, -a, -p, -r"),
            };
            client.remove_watches(&path, watcher_type).await?;
        }
        Command::GetEphemerals { path } => {
            let mut ephemerals = client.get_ephemerals(&path).await?;
            ephemerals.sort();
            println!("[{}]", ephemerals.join(", "));
        }
        Command::GetAllChildrenNumber { path } => {
            println!("{}", client.get_all_children_number(&path).await?);
        }
        Command::WhoAmI => {
            println!("Auth scheme: User");
            for info in client.who_am_i().await? {
                println!("{}: {}", info.auth_scheme, info.user);
            }
        }
        Command::Config { stat } => {
            let (data, stat_of) = client.get_config().await?;
            println!("{}", String::from_utf8_lossy(&data));
            if stat {
                print_stat(&stat_of);
            }
        }
        Command::Watch { mode, path } => {
            let mut watch = client.add_watch(&path, watch_mode(&mode)?).await?;
            let ctrl_c = tokio::signal::ctrl_c();
            tokio::pin!(ctrl_c);
            loop {
                tokio::select! {
                    event = watch.next_event() => match event {
                        Some(Ok(event)) => print_event(&event),
                        Some(Err(err)) => return Err(err.into()),
                        None => break,
                    },
                    _ = &mut ctrl_c => break,
                }
            }
        }
        Command::Help => print_help(),
        Command::Quit => return Ok(Next::Quit),
    }
    Ok(Next::Continue)
}

fn create_mode(
    ephemeral: bool,
    sequential: bool,
    container: bool,
    ttl: bool,
) -> Result<CreateMode> {
    Ok(match (ephemeral, sequential, container, ttl) {
        (false, false, false, false) => CreateMode::Persistent,
        (false, true, false, false) => CreateMode::PersistentSequential,
        (true, false, false, false) => CreateMode::Ephemeral,
        (true, true, false, false) => CreateMode::EphemeralSequential,
        (false, false, true, false) => CreateMode::Container,
        (false, false, false, true) => CreateMode::PersistentWithTtl,
        (false, true, false, true) => CreateMode::PersistentSequentialWithTtl,
        _ => bail!("-e, -c and -t do not combine"),
    })
}

fn watch_mode(mode: &str) -> Result<AddWatchMode> {
    match mode {
        "persistent" => Ok(AddWatchMode::Persistent),
        "persistentRecursive" => Ok(AddWatchMode::PersistentRecursive),
        other => bail!("unknown watch mode {other:?}: persistent or persistentRecursive"),
    }
}

/// `path` and every node below it, parents first.
async fn subtree(client: &Client, path: &str) -> Result<Vec<String>> {
    let mut nodes = vec![path.to_owned()];
    let mut next = 0;
    while next < nodes.len() {
        let node = nodes[next].clone();
        next += 1;
        let mut children = match client.get_children(&node).await {
            Ok(children) => children,
            // Deleted meanwhile: nothing below it either.
            Err(Error::Keeper(ErrorCode::NoNode)) if node != path => continue,
            Err(err) => return Err(err.into()),
        };
        children.sort();
        for child in children {
            nodes.push(if node == "/" {
                format!("/{child}")
            } else {
                format!("{node}/{child}")
            });
        }
    }
    Ok(nodes)
}

/// `scheme:id:perms[,...]`; the id may itself contain colons (`digest:user:hash:cdrwa`,
/// `ip:10.0.0.1:r`), so perms are what follows the last one.
fn parse_acl(text: &str) -> Result<Vec<Acl>> {
    text.split(',')
        .map(|entry| {
            let (scheme_id, letters) = entry
                .rsplit_once(':')
                .ok_or_else(|| anyhow!("bad ACL entry {entry:?}: want scheme:id:perms"))?;
            let (scheme, id) = scheme_id
                .split_once(':')
                .ok_or_else(|| anyhow!("bad ACL entry {entry:?}: want scheme:id:perms"))?;
            let mut bits = 0;
            for letter in letters.chars() {
                bits |= match letter {
                    'r' => perms::READ,
                    'w' => perms::WRITE,
                    'c' => perms::CREATE,
                    'd' => perms::DELETE,
                    'a' => perms::ADMIN,
                    other => bail!("bad permission {other:?}: use c, d, r, w, a"),
                };
            }
            Ok(Acl {
                perms: bits,
                id: Id::new(scheme, id),
            })
        })
        .collect()
}

fn perms_string(bits: i32) -> String {
    [
        (perms::CREATE, 'c'),
        (perms::DELETE, 'd'),
        (perms::READ, 'r'),
        (perms::WRITE, 'w'),
        (perms::ADMIN, 'a'),
    ]
    .iter()
    .filter(|(bit, _)| bits & bit != 0)
    .map(|(_, letter)| *letter)
    .collect()
}

fn print_stat(stat: &Stat) {
    println!("cZxid = {:#x}", stat.czxid);
    println!("ctime = {}", format_millis(stat.ctime));
    println!("mZxid = {:#x}", stat.mzxid);
    println!("mtime = {}", format_millis(stat.mtime));
    println!("pZxid = {:#x}", stat.pzxid);
    println!("cversion = {}", stat.cversion);
    println!("dataVersion = {}", stat.version);
    println!("aclVersion = {}", stat.aversion);
    println!("ephemeralOwner = {:#x}", stat.ephemeral_owner);
    println!("dataLength = {}", stat.data_length);
    println!("numChildren = {}", stat.num_children);
}

/// Milliseconds since the epoch as an ISO 8601 UTC timestamp.
fn format_millis(millis: i64) -> String {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn print_event(event: &WatchedEvent) {
    println!(
        "WatchedEvent state:{:?} type:{:?} path:{}",
        event.state, event.event_type, event.path
    );
}

/// Prints a one-shot watch's event whenever it fires, as zkCli's default watcher does.
fn print_when_fired(fired: WatchFuture) {
    tokio::spawn(async move {
        if let Ok(event) = fired.await {
            println!("\nWATCHER::\n");
            print_event(&event);
        }
    });
}

/// zkCli's wording for the common failures.
fn describe(err: &anyhow::Error) -> String {
    match err.downcast_ref::<Error>() {
        Some(Error::Keeper(ErrorCode::NoNode)) => "Node does not exist".to_owned(),
        Some(Error::Keeper(ErrorCode::NodeExists)) => "Node already exists".to_owned(),
        Some(Error::Keeper(ErrorCode::NotEmpty)) => "Node not empty".to_owned(),
        Some(Error::Keeper(ErrorCode::BadVersion)) => "version No is not valid".to_owned(),
        Some(Error::Keeper(ErrorCode::NoAuth)) => "Insufficient permission".to_owned(),
        Some(other) => format!("Error: {other}"),
        None => format!("Error: {err:#}"),
    }
}

fn print_help() {
    println!(
        "ZooKeeper -server host:port -c cmd args
\taddauth scheme auth
\taddWatch [-m mode] path  # mode: persistent, persistentRecursive (default)
\tconfig [-s]
\tcreate [-s] [-e] [-c] [-t ttl] path [data] [acl]
\tdelete [-v version] path
\tdeleteall path
\tget [-s] [-w] path
\tgetAcl [-s] path
\tgetAllChildrenNumber path
\tgetEphemerals path
\thelp
\tls [-s] [-w] [-R] path
\tquit
\tremovewatches path [-c|-d|-a|-p|-r]
\tset [-s] [-v version] path data
\tsetAcl [-s] [-v version] [-R] path acl
\tstat [-w] path
\tsync path
\twatch [-m mode] path  # print events until Ctrl-C
\twhoami"
    );
}

/// Splits a command line into words, honouring single and double quotes and
/// backslash escapes, so data with spaces can be given: `set /a "hello world"`.
fn split_words(line: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(ch) = chars.next() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                let escaped = chars.next().ok_or_else(|| anyhow!("trailing backslash"))?;
                current.push(escaped);
                in_word = true;
            }
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        bail!("unterminated quote");
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            split_words(r#"set /a "hello world" 'x y' a\ b"#).unwrap(),
            ["set", "/a", "hello world", "x y", "a b"]
        );
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
        assert_eq!(
            split_words(r#"create /e """#).unwrap(),
            ["create", "/e", ""]
        );
        assert!(split_words("get \"/a").is_err());
    }

    #[test]
    fn acls_parse_and_print() {
        let acl = parse_acl("world:anyone:cdrwa,digest:bob:abc=:r,ip:10.0.0.1:rw").unwrap();
        assert_eq!(acl[0].perms, perms::ALL);
        assert_eq!(acl[1].id, Id::new("digest", "bob:abc="));
        assert_eq!(acl[2].id, Id::new("ip", "10.0.0.1"));
        assert_eq!(perms_string(acl[2].perms), "rw");
        assert!(parse_acl("world:anyone:x").is_err());
        assert!(parse_acl("nonsense").is_err());
    }

    #[test]
    fn timestamps_format_as_utc() {
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_millis(1_718_541_296_789), "2024-06-16T12:34:56.789Z");
    }

    #[test]
    fn command_lines_parse_with_zkcli_flags() {
        let line = Line::try_parse_from(["create", "-e", "-s", "/a", "data"]).unwrap();
        assert!(matches!(
            line.command,
            Command::Create {
                ephemeral: true,
                sequential: true,
                ..
            }
        ));
        let line = Line::try_parse_from(["getAcl", "/a"]).unwrap();
        assert!(matches!(line.command, Command::GetAcl { .. }));
        assert!(Line::try_parse_from(["nope"]).is_err());
    }
}
