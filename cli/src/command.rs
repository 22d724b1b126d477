//! The shell's commands: their grammar (zkCli's names and flags, parsed with clap) and
//! the usage lines `help` prints, in one table.

use clap::{Parser, Subcommand};

/// One command line, parsed.
#[derive(Parser, Debug)]
#[command(
    name = "paddock-cli",
    no_binary_name = true,
    disable_help_subcommand = true,
    disable_help_flag = true,
    disable_version_flag = true
)]
pub struct Line {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
        #[arg(short = 'e')]
        ephemeral: bool,
        #[arg(short = 's')]
        sequential: bool,
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
    Delete {
        #[arg(short = 'v')]
        version: Option<i32>,
        path: String,
    },
    #[command(name = "deleteall", alias = "rmr")]
    DeleteAll {
        path: String,
    },
    Stat {
        #[arg(short = 'w')]
        watch: bool,
        path: String,
    },
    Sync {
        path: String,
    },
    #[command(name = "getAcl")]
    GetAcl {
        #[arg(short = 's')]
        stat: bool,
        path: String,
    },
    #[command(name = "setAcl")]
    SetAcl {
        #[arg(short = 's')]
        stat: bool,
        #[arg(short = 'v')]
        version: Option<i32>,
        #[arg(short = 'R')]
        recursive: bool,
        path: String,
        acl: String,
    },
    #[command(name = "addauth")]
    AddAuth {
        scheme: String,
        auth: String,
    },
    #[command(name = "addWatch")]
    AddWatch {
        /// `persistent` or `persistentRecursive`.
        #[arg(short = 'm', default_value = "persistentRecursive")]
        mode: String,
        path: String,
    },
    #[command(name = "removewatches")]
    RemoveWatches {
        #[arg(short = 'c')]
        children: bool,
        #[arg(short = 'd')]
        data: bool,
        #[arg(short = 'a')]
        any: bool,
        #[arg(short = 'p')]
        persistent: bool,
        #[arg(short = 'r')]
        recursive: bool,
        path: String,
    },
    #[command(name = "getEphemerals")]
    GetEphemerals {
        #[arg(default_value = "/")]
        path: String,
    },
    #[command(name = "getAllChildrenNumber")]
    GetAllChildrenNumber {
        path: String,
    },
    #[command(name = "whoami")]
    WhoAmI,
    Config {
        #[arg(short = 's')]
        stat: bool,
    },
    /// Print every event under a path until Ctrl-C (Paddock's own).
    Watch {
        #[arg(short = 'm', default_value = "persistentRecursive")]
        mode: String,
        path: String,
    },
    /// Set a quota: soft (-n nodes, -b bytes, only logged when exceeded) or hard (-N, -B,
    /// refused by a server with enforceQuota=true).
    #[command(name = "setquota")]
    SetQuota {
        #[arg(short = 'n')]
        count: Option<i64>,
        #[arg(short = 'b')]
        bytes: Option<i64>,
        #[arg(short = 'N')]
        count_hard: Option<i64>,
        #[arg(short = 'B')]
        bytes_hard: Option<i64>,
        path: String,
    },
    #[command(name = "listquota")]
    ListQuota {
        path: String,
    },
    /// Remove a quota, or with a flag only that limit.
    #[command(name = "delquota")]
    DelQuota {
        #[arg(short = 'n')]
        count: bool,
        #[arg(short = 'b')]
        bytes: bool,
        #[arg(short = 'N')]
        count_hard: bool,
        #[arg(short = 'B')]
        bytes_hard: bool,
        path: String,
    },
    /// Connect to another server (or the same one again), ending this session.
    Connect {
        server: Option<String>,
    },
    /// End the session; commands then answer "Not connected" until `connect`.
    Close,
    /// Print watch events as they come (on, the default) or not.
    #[command(name = "printwatches")]
    PrintWatches {
        on_off: Option<String>,
    },
    /// The last commands, numbered for `redo`.
    History,
    /// Run command number N of `history` again.
    Redo {
        number: String,
    },
    Version,
    Help,
    #[command(alias = "exit")]
    Quit,
}

impl Command {
    /// The node the command is about, for messages that name it as zkCli's do.
    pub fn path(&self) -> Option<&str> {
        match self {
            Command::Ls { path, .. }
            | Command::Get { path, .. }
            | Command::Set { path, .. }
            | Command::Create { path, .. }
            | Command::Delete { path, .. }
            | Command::DeleteAll { path }
            | Command::Stat { path, .. }
            | Command::Sync { path }
            | Command::GetAcl { path, .. }
            | Command::SetAcl { path, .. }
            | Command::AddWatch { path, .. }
            | Command::RemoveWatches { path, .. }
            | Command::GetEphemerals { path }
            | Command::GetAllChildrenNumber { path }
            | Command::Watch { path, .. }
            | Command::SetQuota { path, .. }
            | Command::ListQuota { path }
            | Command::DelQuota { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// Every command and its usage, as zkCli's `help` lists them.
pub const USAGE: &[(&str, &str)] = &[
    (
        "addWatch",
        "[-m mode] path # optional mode is one of [persistent, persistentRecursive] - default is persistentRecursive",
    ),
    ("addauth", "scheme auth"),
    ("close", ""),
    ("config", "[-s]"),
    ("connect", "host:port"),
    ("create", "[-s] [-e] [-c] [-t ttl] path [data] [acl]"),
    ("delete", "[-v version] path"),
    ("deleteall", "path"),
    ("delquota", "[-n|-b|-N|-B] path"),
    ("get", "[-s] [-w] path"),
    ("getAcl", "[-s] path"),
    ("getAllChildrenNumber", "path"),
    ("getEphemerals", "path"),
    ("help", ""),
    ("history", ""),
    ("listquota", "path"),
    ("ls", "[-s] [-w] [-R] path"),
    ("printwatches", "on|off"),
    ("quit", ""),
    ("redo", "cmdno"),
    ("removewatches", "path [-c|-d|-a|-p|-r]"),
    ("set", "[-s] [-v version] path data"),
    ("setAcl", "[-s] [-v version] [-R] path acl"),
    ("setquota", "-n|-b|-N|-B val path"),
    ("stat", "[-w] path"),
    ("sync", "path"),
    ("version", ""),
    ("watch", "[-m mode] path # print events until Ctrl-C"),
    ("whoami", ""),
];

/// The names a command line may start with (aliases included).
pub fn is_command(name: &str) -> bool {
    USAGE.iter().any(|(command, _)| *command == name) || matches!(name, "rmr" | "exit")
}

/// `help`'s text, zkCli's layout.
pub fn help_text() -> String {
    let mut text = String::from("ZooKeeper -server host:port -c cmd args\n");
    for (command, args) in USAGE {
        text.push_str(&format!("\t{command} {args}\n"));
    }
    text
}

/// One command's usage line.
pub fn usage_of(name: &str) -> Option<String> {
    let name = match name {
        "rmr" => "deleteall",
        "exit" => "quit",
        other => other,
    };
    USAGE
        .iter()
        .find(|(command, _)| *command == name)
        .map(|(command, args)| format!("{command} {args}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let line = Line::try_parse_from(["setquota", "-n", "2", "/zz"]).unwrap();
        assert!(matches!(
            line.command,
            Command::SetQuota { count: Some(2), .. }
        ));
        assert_eq!(line.command.path(), Some("/zz"));
        let line = Line::try_parse_from(["getAcl", "/a"]).unwrap();
        assert!(matches!(line.command, Command::GetAcl { .. }));
        assert!(Line::try_parse_from(["nope"]).is_err());
    }

    #[test]
    fn every_command_has_a_usage_line() {
        for name in [
            "ls",
            "get",
            "set",
            "create",
            "delete",
            "deleteall",
            "stat",
            "sync",
            "getAcl",
            "setAcl",
            "addauth",
            "addWatch",
            "removewatches",
            "getEphemerals",
            "getAllChildrenNumber",
            "whoami",
            "config",
            "watch",
            "setquota",
            "listquota",
            "delquota",
            "connect",
            "close",
            "printwatches",
            "history",
            "redo",
            "version",
            "help",
            "quit",
        ] {
            assert!(is_command(name), "{name}");
            assert!(usage_of(name).is_some(), "{name}");
        }
        assert!(!is_command("frobnicate"));
    }
}
