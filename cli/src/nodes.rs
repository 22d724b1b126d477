//! The commands that act on znodes and watches through a connected client.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use paddock_client::{
    AddWatchMode, Client, CreateMode, CreateOptions, Error, ErrorCode, WatchFuture, WatcherType,
};

use crate::command::Command;
use crate::output::{parse_acl, perms_string, print_event, print_stat};
use crate::quota;

/// Runs a command that needs a session. The shell's own commands (connect, history,
/// ...) never reach here.
pub async fn execute(
    client: &Client,
    command: Command,
    print_watches: &Arc<AtomicBool>,
) -> Result<()> {
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
            } else {
                let (mut children, stat_of) = if watch {
                    let (children, stat_of, fired) = client.get_children2_w(&path).await?;
                    print_when_fired(fired, print_watches);
                    (children, stat_of)
                } else {
                    client.get_children2(&path).await?
                };
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
                print_when_fired(fired, print_watches);
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
            let stat = if watch {
                let (stat, fired) = client.exists_w(&path).await?;
                print_when_fired(fired, print_watches);
                stat
            } else {
                client.exists(&path).await?
            };
            print_stat(&stat.ok_or(Error::Keeper(ErrorCode::NoNode))?);
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
                    crate::output::jute_csv(&entry.id.scheme),
                    crate::output::jute_csv(&entry.id.id),
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
            let print_watches = print_watches.clone();
            tokio::spawn(async move {
                while let Some(Ok(event)) = watch.next_event().await {
                    if print_watches.load(Ordering::Relaxed) {
                        print_event(&event);
                    }
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
        Command::SetQuota {
            count,
            bytes,
            count_hard,
            bytes_hard,
            path,
        } => {
            if [count, bytes, count_hard, bytes_hard]
                .iter()
                .all(Option::is_none)
            {
                bail!("usage: setquota -n|-b|-N|-B val path");
            }
            let limits = quota::Limits {
                count: count.unwrap_or(-1),
                bytes: bytes.unwrap_or(-1),
                count_hard: count_hard.unwrap_or(-1),
                bytes_hard: bytes_hard.unwrap_or(-1),
            };
            quota::set(client, &path, &limits).await?;
        }
        Command::ListQuota { path } => quota::list(client, &path).await?,
        Command::DelQuota {
            count,
            bytes,
            count_hard,
            bytes_hard,
            path,
        } => {
            let remove = quota::Remove {
                count,
                bytes,
                count_hard,
                bytes_hard,
            };
            quota::delete(client, &path, &remove).await?;
        }
        // The shell handles its own commands before it asks for a session.
        Command::Connect { .. }
        | Command::Close
        | Command::PrintWatches { .. }
        | Command::History
        | Command::Redo { .. }
        | Command::Version
        | Command::Help
        | Command::Quit => {}
    }
    Ok(())
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
        "persistent" | "PERSISTENT" => Ok(AddWatchMode::Persistent),
        "persistentRecursive" | "PERSISTENT_RECURSIVE" => Ok(AddWatchMode::PersistentRecursive),
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

/// Prints a one-shot watch's event whenever it fires, as zkCli's default watcher does
/// (unless `printwatches off`).
fn print_when_fired(fired: WatchFuture, print_watches: &Arc<AtomicBool>) {
    let print_watches = print_watches.clone();
    tokio::spawn(async move {
        if let Ok(event) = fired.await {
            if print_watches.load(Ordering::Relaxed) {
                println!("\nWATCHER::\n");
                print_event(&event);
            }
        }
    });
}
