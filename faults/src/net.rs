//! The hosts: one network namespace per server, joined by veth pairs to a bridge in
//! the root namespace, where the test process (the clients) lives.
//!
//! Instance `K` (1..=250) owns subnet `10.77.K.0/24`: the bridge `pdkKbr` is
//! `10.77.K.1`, server `i` (0-based) lives in namespace `pdkKn<i>` as `10.77.K.<11+i>`
//! on its `eth0`. Every name starts with `pdk` and fits IFNAMSIZ.
//!
//! `K` is claimed with an exclusive `flock` on `/run/paddock-faults/K`, held for the
//! life of [`Net`]: parallel test processes never share a subnet, and leftovers whose
//! lock nobody holds (a run that was killed) are removed by whoever finds them.
//!
//! Faults are nft rules in table `inet pdkfault` inside a server's namespace; they
//! match only peer addresses, so a server's clients (coming from the bridge address)
//! still reach it. Removing the namespace removes its rules.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::Error;

/// Servers per cluster.
pub const SERVERS: usize = 3;

/// Where instance claims live (tmpfs: gone at reboot, like the namespaces).
const CLAIMS: &str = "/run/paddock-faults";

/// A packet filter to install: on server `on`, drop what comes in from `from_peers` and
/// what goes out to `to_peers`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// The server whose namespace gets the rules.
    pub on: usize,
    /// Peers whose packets `on` no longer receives.
    pub from_peers: Vec<usize>,
    /// Peers `on` can no longer send to.
    pub to_peers: Vec<usize>,
}

/// The namespaces, veths and bridge of one harness instance; removed on drop.
#[derive(Debug)]
pub struct Net {
    k: u8,
    /// Holding the lock is the claim on `k`.
    _claim: File,
}

impl Net {
    /// Claims a free instance and builds its network, after removing stale leftovers.
    /// [`Error::Unavailable`] where namespaces cannot be made.
    pub fn create() -> Result<Net, Error> {
        preflight()?;
        std::fs::create_dir_all(CLAIMS)?;
        sweep_stale();
        let start = u8::try_from(std::process::id() % 250).unwrap_or(0);
        for offset in 0..250u8 {
            let k = 1 + (start.wrapping_add(offset)) % 250;
            let Some(claim) = try_claim(k)? else { continue };
            // Ours now: anything left under this K is from a dead run.
            teardown(k);
            let net = Net { k, _claim: claim };
            net.build()?;
            return Ok(net);
        }
        Err(Error::Unavailable("all 250 instances are claimed".into()))
    }

    /// This instance's number (the third octet).
    pub fn instance(&self) -> u8 {
        self.k
    }

    /// The namespace of server `i`.
    pub fn namespace(&self, i: usize) -> String {
        format!("pdk{}n{i}", self.k)
    }

    /// The address of server `i`.
    pub fn server_ip(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.k, 11 + u8::try_from(i).unwrap_or(0))
    }

    /// The bridge's address: where the clients' connections come from.
    pub fn host_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.k, 1)
    }

    fn bridge(&self) -> String {
        format!("pdk{}br", self.k)
    }

    fn build(&self) -> Result<(), Error> {
        let br = self.bridge();
        let host = format!("{}/24", self.host_ip());
        ip(&["link", "add", &br, "type", "bridge"]).map_err(unavailable)?;
        ip(&["addr", "add", &host, "dev", &br])?;
        ip(&["link", "set", &br, "up"])?;
        for i in 0..SERVERS {
            let ns = self.namespace(i);
            let veth = format!("pdk{}v{i}", self.k);
            let addr = format!("{}/24", self.server_ip(i));
            ip(&["netns", "add", &ns]).map_err(unavailable)?;
            ip(&[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ])?;
            ip(&["link", "set", &veth, "master", &br, "up"])?;
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    /// Replaces every fault rule with `blocks` (an empty list heals everything).
    pub fn set_blocks(&self, blocks: &[Block]) -> Result<(), Error> {
        for i in 0..SERVERS {
            let mut input = Vec::new();
            let mut output = Vec::new();
            for block in blocks.iter().filter(|b| b.on == i) {
                input.extend(block.from_peers.iter().map(|&p| self.server_ip(p)));
                output.extend(block.to_peers.iter().map(|&p| self.server_ip(p)));
            }
            let mut script = String::from("flush ruleset\n");
            if !input.is_empty() || !output.is_empty() {
                script.push_str("table inet pdkfault {\n");
                for (chain, hook, dir, addrs) in [
                    ("in", "input", "saddr", &input),
                    ("out", "output", "daddr", &output),
                ] {
                    script.push_str(&format!(
                        "  chain {chain} {{ type filter hook {hook} priority 0; policy accept;"
                    ));
                    if !addrs.is_empty() {
                        let set: Vec<String> = addrs.iter().map(ToString::to_string).collect();
                        script.push_str(&format!(" ip {dir} {{ {} }} drop;", set.join(", ")));
                    }
                    script.push_str(" }\n");
                }
                script.push_str("}\n");
            }
            nft(&self.namespace(i), &script)?;
        }
        Ok(())
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        teardown(self.k);
        // The claim's lock goes with the file handle.
    }
}

/// Root, `ip netns` and `nft`, or a one-line reason why not.
fn preflight() -> Result<(), Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        .unwrap_or("");
    if euid != "0" {
        return Err(Error::Unavailable(format!(
            "needs root for network namespaces (euid {euid})"
        )));
    }
    for tool in ["ip", "nft"] {
        let found = Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Err(Error::Unavailable(format!(
                "`{tool}` is not installed (apt-get install -y iproute2 nftables)"
            )));
        }
    }
    Ok(())
}

fn unavailable(err: Error) -> Error {
    Error::Unavailable(err.to_string())
}

/// Locks claim file `k`; `None` if another live run holds it.
fn try_claim(k: u8) -> Result<Option<File>, Error> {
    let path = claim_path(k);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    match file.try_lock() {
        Ok(()) => {
            let mut f = &file;
            // For people looking: who holds it. The lock is what counts.
            let _ = f.write_all(format!("{}\n", std::process::id()).as_bytes());
            Ok(Some(file))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(err)) => Err(err.into()),
    }
}

fn claim_path(k: u8) -> PathBuf {
    Path::new(CLAIMS).join(k.to_string())
}

/// Removes the leftovers of every instance that no live run holds.
fn sweep_stale() {
    let mut found: Vec<u8> = Vec::new();
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        found.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .filter_map(instance_of),
        );
    }
    if let Ok(out) = Command::new("ip").args(["-o", "link", "show"]).output() {
        found.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split(": ").nth(1))
                .filter_map(|name| instance_of(name.split('@').next().unwrap_or(name))),
        );
    }
    found.sort_unstable();
    found.dedup();
    for k in found {
        if let Ok(Some(_claim)) = try_claim(k) {
            teardown(k);
        }
    }
}

/// `K` from a name of ours (`pdk<K>n<i>`, `pdk<K>br`, `pdk<K>v<i>`).
fn instance_of(name: &str) -> Option<u8> {
    let rest = name.strip_prefix("pdk")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let tail = &rest[digits.len()..];
    let ours = tail == "br"
        || (tail.len() == 2 && (tail.starts_with('n') || tail.starts_with('v')))
            && tail[1..].chars().all(|c| c.is_ascii_digit());
    if !ours {
        return None;
    }
    digits.parse().ok().filter(|k| (1..=250).contains(k))
}

/// Kills whatever runs in instance `k`'s namespaces and removes them and its bridge.
/// Best effort: every step is tried whatever failed before.
fn teardown(k: u8) {
    for i in 0..SERVERS {
        let ns = format!("pdk{k}n{i}");
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &ns]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                // A stopped process dies of SIGKILL anyway.
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
        }
        let _ = quiet(Command::new("ip").args(["netns", "del", &ns]));
        // A namespace whose last process is still dying outlives `netns del` for a
        // while, and its veth with it: deleting our end removes the pair now.
        let _ = quiet(Command::new("ip").args(["link", "del", &format!("pdk{k}v{i}")]));
    }
    let _ = quiet(Command::new("ip").args(["link", "del", &format!("pdk{k}br")]));
}

fn quiet(command: &mut Command) -> std::io::Result<std::process::ExitStatus> {
    command.stdout(Stdio::null()).stderr(Stdio::null()).status()
}

/// Runs `ip ARGS`, failing with its stderr.
fn ip(args: &[&str]) -> Result<(), Error> {
    let out = Command::new("ip").args(args).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Command {
            command: format!("ip {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// Loads an nft script inside namespace `ns`.
fn nft(ns: &str, script: &str) -> Result<(), Error> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Command {
            command: format!("ip netns exec {ns} nft -f - <<< {script:?}"),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_names_are_taken_for_leftovers() {
        assert_eq!(instance_of("pdk7n0"), Some(7));
        assert_eq!(instance_of("pdk250br"), Some(250));
        assert_eq!(instance_of("pdk12v2"), Some(12));
        assert_eq!(instance_of("pdk12x2"), None);
        assert_eq!(instance_of("pdkbr"), None);
        assert_eq!(instance_of("pdk0n1"), None);
        assert_eq!(instance_of("pdk7n0extra"), None);
        assert_eq!(instance_of("eth0"), None);
    }
}
