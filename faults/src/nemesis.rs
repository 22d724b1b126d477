//! Nemeses: the faults, each injected for a while and then healed.
//!
//! - `isolate`: the leader loses every peer link (nft in its namespace drops packets
//!   from and to the peers' addresses); its clients still reach it.
//! - `split`: a majority/minority split. With three servers the minority is one server,
//!   so this is `isolate` of a server chosen at random (usually a follower).
//! - `partial`: one server still sees both others, which no longer see each other.
//! - `oneway`: one server drops everything that comes in from one peer (the leader half
//!   the time); the other direction still flows.
//! - `pause`: `SIGSTOP` on a server (the leader half the time), `SIGCONT` to heal.
//! - `kill`: `kill -9` on a server (the leader half the time), restart to heal.
//! - `wipe-data`, `wipe-log`: `kill -9` on a server (the leader half the time) and the
//!   loss of its dataDir (term, vote, snapshots) or of its dataLogDir (the txn log),
//!   while another server is cut off from its peers; to heal, the cut is lifted and the
//!   wiped server restarts, and must rejoin without a vote until it has caught up.
//!
//! Drops, not rejects: like a pulled cable, a cut makes the peers' TCP retransmit with
//! exponential backoff, which is what a real partition does to a server's peer links.

use crate::cluster::{Cluster, Topology, Wiped};
use crate::error::Error;
use crate::net::{Block, SERVERS};
use crate::rng::Rng;

/// The kinds of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NemesisKind {
    /// Cut the leader off from its peers.
    Isolate,
    /// Cut a random server off from its peers.
    Split,
    /// Two followers stop seeing each other; one server sees both.
    Partial,
    /// One server stops hearing one peer.
    OneWay,
    /// SIGSTOP a server.
    Pause,
    /// kill -9 a server.
    Kill,
    /// kill -9 a server and lose its dataDir, with another server cut off.
    WipeData,
    /// kill -9 a server and lose its dataLogDir, with another server cut off.
    WipeLog,
}

impl NemesisKind {
    /// Every kind, in report order.
    pub const ALL: [NemesisKind; 8] = [
        NemesisKind::Isolate,
        NemesisKind::Split,
        NemesisKind::Partial,
        NemesisKind::OneWay,
        NemesisKind::Pause,
        NemesisKind::Kill,
        NemesisKind::WipeData,
        NemesisKind::WipeLog,
    ];

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            NemesisKind::Isolate => "isolate",
            NemesisKind::Split => "split",
            NemesisKind::Partial => "partial",
            NemesisKind::OneWay => "oneway",
            NemesisKind::Pause => "pause",
            NemesisKind::Kill => "kill",
            NemesisKind::WipeData => "wipe-data",
            NemesisKind::WipeLog => "wipe-log",
        }
    }

    /// The kind called `name`.
    pub fn parse(name: &str) -> Option<NemesisKind> {
        NemesisKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A fault in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Which kind.
    pub kind: NemesisKind,
    /// For people: what exactly was done.
    pub description: String,
    /// The server that can no longer vouch for its clients' sessions to a quorum
    /// (isolated, paused or killed), if any.
    pub cut_off: Option<usize>,
    /// Whether that server was the leader when the fault began.
    pub leader_cut: bool,
    /// The server to resume or restart when healing.
    stopped: Option<usize>,
}

fn others(i: usize) -> Vec<usize> {
    (0..SERVERS).filter(|&j| j != i).collect()
}

/// Injects a fault of `kind`, choosing its victims with `rng`.
pub async fn inject(
    kind: NemesisKind,
    cluster: &mut Cluster,
    topology: &Topology,
    rng: &mut Rng,
) -> Result<Fault, Error> {
    let leader = topology.leader().await;
    let leader_or_random = |rng: &mut Rng| match leader {
        Some(l) if rng.below(2) == 0 => l,
        _ => rng.index(SERVERS),
    };
    let name = |i: usize| {
        format!(
            "s{} ({})",
            i + 1,
            if Some(i) == leader {
                "leader"
            } else {
                "follower"
            }
        )
    };
    let mut fault = Fault {
        kind,
        description: String::new(),
        cut_off: None,
        leader_cut: false,
        stopped: None,
    };
    match kind {
        NemesisKind::Isolate | NemesisKind::Split => {
            let victim = match (kind, leader) {
                (NemesisKind::Isolate, Some(l)) => l,
                _ => rng.index(SERVERS),
            };
            let blocks = [Block {
                on: victim,
                from_peers: others(victim),
                to_peers: others(victim),
            }];
            tokio::task::block_in_place(|| cluster.net().set_blocks(&blocks))?;
            fault.description = format!("cut {} off from its peers", name(victim));
            fault.cut_off = Some(victim);
            fault.leader_cut = Some(victim) == leader;
        }
        NemesisKind::Partial => {
            let bridge = rng.index(SERVERS);
            let (b, c) = (others(bridge)[0], others(bridge)[1]);
            let blocks = [
                Block {
                    on: b,
                    from_peers: vec![c],
                    to_peers: vec![c],
                },
                Block {
                    on: c,
                    from_peers: vec![b],
                    to_peers: vec![b],
                },
            ];
            tokio::task::block_in_place(|| cluster.net().set_blocks(&blocks))?;
            fault.description = format!(
                "{} and {} cannot see each other; {} sees both",
                name(b),
                name(c),
                name(bridge)
            );
        }
        NemesisKind::OneWay => {
            let from = leader_or_random(rng);
            let peers = others(from);
            let on = peers[rng.index(peers.len())];
            let blocks = [Block {
                on,
                from_peers: vec![from],
                to_peers: Vec::new(),
            }];
            tokio::task::block_in_place(|| cluster.net().set_blocks(&blocks))?;
            fault.description = format!("{} no longer hears {}", name(on), name(from));
        }
        NemesisKind::Pause => {
            let victim = leader_or_random(rng);
            cluster.pause(victim);
            fault.description = format!("SIGSTOP {}", name(victim));
            fault.cut_off = Some(victim);
            fault.leader_cut = Some(victim) == leader;
            fault.stopped = Some(victim);
        }
        NemesisKind::Kill => {
            let victim = leader_or_random(rng);
            tokio::task::block_in_place(|| cluster.kill(victim));
            fault.description = format!("kill -9 {}", name(victim));
            fault.cut_off = Some(victim);
            fault.leader_cut = Some(victim) == leader;
            fault.stopped = Some(victim);
        }
        NemesisKind::WipeData | NemesisKind::WipeLog => {
            let victim = leader_or_random(rng);
            let what = if kind == NemesisKind::WipeData {
                Wiped::DataDir
            } else {
                Wiped::DataLogDir
            };
            tokio::task::block_in_place(|| cluster.kill(victim));
            tokio::task::block_in_place(|| cluster.wipe(victim, what))?;
            let candidates = others(victim);
            let cut = candidates[rng.index(candidates.len())];
            let blocks = [Block {
                on: cut,
                from_peers: others(cut),
                to_peers: others(cut),
            }];
            tokio::task::block_in_place(|| cluster.net().set_blocks(&blocks))?;
            fault.description = format!(
                "kill -9 {} and lose its {}; {} cut off from its peers",
                name(victim),
                if what == Wiped::DataDir {
                    "dataDir"
                } else {
                    "dataLogDir"
                },
                name(cut)
            );
            fault.cut_off = Some(victim);
            fault.leader_cut = Some(victim) == leader;
            fault.stopped = Some(victim);
        }
    }
    Ok(fault)
}

/// Undoes `fault`: removes every packet filter, continues or restarts the server.
pub async fn heal(fault: &Fault, cluster: &mut Cluster) -> Result<(), Error> {
    tokio::task::block_in_place(|| cluster.net().set_blocks(&[]))?;
    match (fault.kind, fault.stopped) {
        (NemesisKind::Pause, Some(victim)) => cluster.resume(victim),
        (NemesisKind::Kill | NemesisKind::WipeData | NemesisKind::WipeLog, Some(victim)) => {
            cluster.restart(victim).await?
        }
        _ => {}
    }
    Ok(())
}
