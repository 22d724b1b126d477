//! The connect string, `host:port,host:port[/chroot]`, and the chroot it may carry.

use std::sync::Arc;

use paddock_wire::path::validate_path;

use crate::error::Error;

/// ZooKeeper's default client port, used when a host has none.
const DEFAULT_PORT: u16 = 2181;

/// A parsed connect string: the servers in the order given, and the chroot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnectString {
    /// `host:port` strings, resolved at each connection attempt so DNS changes are seen.
    pub servers: Vec<String>,
    pub chroot: Chroot,
}

impl ConnectString {
    pub fn parse(s: &str) -> Result<Self, Error> {
        let bad = || Error::InvalidConnectString(s.to_owned());
        let (hosts, chroot) = match s.find('/') {
            Some(i) => (&s[..i], Chroot::new(&s[i..]).map_err(|_| bad())?),
            None => (s, Chroot::none()),
        };
        let mut servers = Vec::new();
        for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            servers.push(normalize_host(host).ok_or_else(bad)?);
        }
        if servers.is_empty() {
            return Err(bad());
        }
        Ok(ConnectString { servers, chroot })
    }
}

/// `host` → `host:2181`; `host:port` and `[v6]:port` are checked and kept.
fn normalize_host(host: &str) -> Option<String> {
    if let Some(rest) = host.strip_prefix('[') {
        let (addr, tail) = rest.split_once(']')?;
        let port = match tail.strip_prefix(':') {
            Some(port) => port.parse::<u16>().ok()?,
            None if tail.is_empty() => DEFAULT_PORT,
            None => return None,
        };
        return Some(format!("[{addr}]:{port}"));
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && !name.contains(':') => {
            let port = port.parse::<u16>().ok()?;
            Some(format!("{name}:{port}"))
        }
        Some(_) => None,
        None => Some(format!("{host}:{DEFAULT_PORT}")),
    }
}

/// The prefix under which a client sees the tree. Every path sent is prefixed with it and
/// every path received (created paths, watch events, ephemerals) has it stripped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Chroot(Option<Arc<str>>);

impl Chroot {
    pub fn none() -> Self {
        Chroot(None)
    }

    /// `/` means no chroot.
    pub fn new(path: &str) -> Result<Self, Error> {
        validate_path(path, false).map_err(|reason| Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })?;
        Ok(if path == "/" {
            Chroot(None)
        } else {
            Chroot(Some(path.into()))
        })
    }

    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }

    /// The server path of a client path (already validated).
    pub fn apply(&self, path: &str) -> String {
        match &self.0 {
            None => path.to_owned(),
            Some(root) if path == "/" => root.to_string(),
            Some(root) => format!("{root}{path}"),
        }
    }

    /// The client path of a server path. A path outside the chroot (which a correct server
    /// never sends) is returned unchanged.
    pub fn strip(&self, path: &str) -> String {
        self.strip_within(path).unwrap_or_else(|| path.to_owned())
    }

    /// The client path of a server path, or `None` if it lies outside the chroot.
    pub fn strip_within(&self, path: &str) -> Option<String> {
        match &self.0 {
            None => Some(path.to_owned()),
            Some(root) => match path.strip_prefix(&**root) {
                Some("") => Some("/".to_owned()),
                Some(rest) if rest.starts_with('/') => Some(rest.to_owned()),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_ports_and_chroot() {
        let cs = ConnectString::parse("a:1, b ,[::1]:3,[fe80::1]/app/x").unwrap();
        assert_eq!(cs.servers, ["a:1", "b:2181", "[::1]:3", "[fe80::1]:2181"]);
        assert_eq!(cs.chroot.as_str(), "/app/x");
        let cs = ConnectString::parse("127.0.0.1:2181/").unwrap();
        assert_eq!(cs.chroot, Chroot::none());
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", ",", "a:x", "a:1/b/", "::1:2", "a:1/b//c", "[::1"] {
            assert!(ConnectString::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn chroot_applies_and_strips() {
        let c = Chroot::new("/app").unwrap();
        assert_eq!(c.apply("/"), "/app");
        assert_eq!(c.apply("/a/b"), "/app/a/b");
        assert_eq!(c.strip("/app"), "/");
        assert_eq!(c.strip("/app/a"), "/a");
        assert_eq!(c.strip("/apple"), "/apple");
        let none = Chroot::none();
        assert_eq!(none.apply("/a"), "/a");
        assert_eq!(none.strip("/a"), "/a");
    }
}
