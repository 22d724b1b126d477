//! The ensemble's keys: `server.N` lines, `myid`, and this server's own addresses.

use super::*;

/// This server's client address: its server line's, which must agree with
/// `clientPortAddress:clientPort` when both are given (ZooKeeper's `setupClientPort`).
pub(super) fn own_client_addr(
    me: &ServerSpec,
    configured: Option<SocketAddr>,
) -> Result<Option<SocketAddr>, ConfigError> {
    let Some(listed) = &me.client else {
        return Ok(configured);
    };
    let listed = resolve("server.N", &listed.host, listed.port)?;
    if let Some(configured) = configured {
        let agrees = if configured.ip().is_unspecified() {
            configured.port() == listed.port()
        } else {
            configured == listed
        };
        if !agrees {
            return Err(ConfigError::ClientAddressConflict {
                id: me.id,
                configured,
                listed,
            });
        }
    }
    Ok(Some(listed))
}

pub(super) fn read_server_id(
    data_dir: &Path,
    myid: impl FnOnce(&Path) -> Result<Option<String>, ConfigError>,
) -> Result<u64, ConfigError> {
    let path = data_dir.join("myid");
    let content = myid(&path)?.ok_or_else(|| ConfigError::MyidMissing { path: path.clone() })?;
    match content.trim().parse::<u64>() {
        Ok(id) if (1..=MAX_SERVER_ID).contains(&id) => Ok(id),
        _ => Err(ConfigError::InvalidMyid { path, content }),
    }
}

pub(super) fn read_myid(path: &Path) -> Result<Option<String>, ConfigError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(decode(bytes))),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Resolves a listen address as ZooKeeper's `InetAddress.getByName` would: an IP literal
/// as is, a name through the system resolver (first answer).
pub(super) fn resolve(key: &'static str, host: &str, port: u16) -> Result<SocketAddr, ConfigError> {
    let literal = host
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let unresolvable = |source| ConfigError::Unresolvable {
        key,
        host: host.to_owned(),
        source,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(unresolvable)?
        .next()
        .ok_or_else(|| unresolvable(io::Error::new(io::ErrorKind::NotFound, "no addresses")))
}

pub(super) fn server_id(key: &str, id: &str) -> Result<u64, ConfigError> {
    match id.parse::<u64>() {
        Ok(id) if (1..=MAX_SERVER_ID).contains(&id) => Ok(id),
        _ => Err(ConfigError::InvalidKey {
            key: key.to_owned(),
            expected: "server.N with N a server id from 1 to 255",
        }),
    }
}

/// `host:peerPort:electionPort[:participant|:observer][;[clientHost:]clientPort]`, as
/// ZooKeeper's `QuorumServer` reads it (without the multi-address `|` form).
pub(super) fn parse_server(key: &str, id: u64, value: &str) -> Result<ServerSpec, ConfigError> {
    let malformed = || invalid(key, value, SERVER_FORMAT);
    let mut halves = value.split(';');
    let server_part = halves.next().unwrap_or_default();
    let client_part = halves.next();
    if halves.next().is_some() {
        return Err(malformed());
    }
    if server_part.contains('|') {
        return Err(ConfigError::Unsupported {
            key: key.to_owned(),
            reason: "several addresses per server (multiAddress) are not supported",
        });
    }
    let parts = host_and_ports(server_part).ok_or_else(malformed)?;
    let (host, peer_port, election_port, role) = match parts.as_slice() {
        [host, peer, election] => (*host, *peer, *election, None),
        [host, peer, election, role] => (*host, *peer, *election, Some(*role)),
        _ => return Err(malformed()),
    };
    if host.is_empty() {
        return Err(malformed());
    }
    let peer_port = port(key, peer_port)?;
    let election_port = port(key, election_port)?;
    if peer_port == election_port {
        return Err(ConfigError::SamePeerAndElectionPort { id });
    }
    let role = match role.map(|role| role.trim().to_ascii_lowercase()).as_deref() {
        None | Some("participant") => PeerType::Participant,
        Some("observer") => PeerType::Observer,
        Some(_) => return Err(invalid(key, value, "a role of participant or observer")),
    };
    let client = match client_part {
        None => None,
        Some(client) => {
            let parts = host_and_ports(client.trim()).ok_or_else(malformed)?;
            Some(match parts.as_slice() {
                [client_port] => HostPort {
                    host: Ipv4Addr::UNSPECIFIED.to_string(),
                    port: port(key, client_port)?,
                },
                [host, client_port] if !host.is_empty() => HostPort {
                    host: (*host).to_owned(),
                    port: port(key, client_port)?,
                },
                _ => return Err(malformed()),
            })
        }
    };
    Ok(ServerSpec {
        id,
        host: host.to_owned(),
        peer_port,
        election_port,
        role,
        client,
    })
}

/// Splits `host:port:...` or `[ipv6]:port:...` (ZooKeeper's `ConfigUtils.getHostAndPort`).
pub(super) fn host_and_ports(s: &str) -> Option<Vec<&str>> {
    let Some(rest) = s.strip_prefix('[') else {
        return Some(s.split(':').collect());
    };
    let (host, after) = rest.split_once(']')?;
    if after.is_empty() {
        return Some(vec![host]);
    }
    let ports = after.strip_prefix(':').filter(|ports| !ports.is_empty())?;
    Some(std::iter::once(host).chain(ports.split(':')).collect())
}
