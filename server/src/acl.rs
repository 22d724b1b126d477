//! Access control: who may do what to a znode, as ZooKeeper 3.9 decides it.
//!
//! - [`check`]: `ZooKeeperServer.checkACL` — a `super` caller passes, an empty ACL lets
//!   everyone through, otherwise one entry must grant the permission to one of the
//!   caller's identities.
//! - [`fixup`]: `PrepRequestProcessor.fixupACL` — the ACL a create or setACL stores:
//!   duplicates dropped, `auth` replaced by the caller's authenticated ids, every id
//!   well formed, or `InvalidAcl`.
//! - The two auth providers ZooKeeper registers by default: `ip` (addresses and CIDR
//!   ranges, IPv4 and IPv6) and `digest` (`user:base64(sha1(user:password))`); and
//!   `x509`, a TLS client certificate's subject (`crate::tls`).
//!
//! Caller identities are `paddock_wire::Id`s: `ip:<address>` for every connection,
//! `digest:<user:hash>` after `addauth digest user:password`, `x509:<subject>` for a
//! verified client certificate, and `super:` for the super user. Permission bits are `paddock_wire::perms`.

use base64::Engine as _;
use paddock_wire::{Acl, ErrorCode, Id};
use sha1::{Digest as _, Sha1};

/// The scheme of the identity that bypasses every check (`DigestAuthenticationProvider`
/// grants it when the password matches `superDigest`).
pub const SUPER_SCHEME: &str = "super";

/// Whether `caller` holds `perm` (any of its bits) on a node with `acl`.
pub fn check(acl: &[Acl], perm: i32, caller: &[Id]) -> Result<(), ErrorCode> {
    if is_allowed(acl, perm, caller) {
        Ok(())
    } else {
        Err(ErrorCode::NoAuth)
    }
}

/// [`check`] as a boolean, for callers that branch rather than fail (getACL redaction).
pub fn is_allowed(acl: &[Acl], perm: i32, caller: &[Id]) -> bool {
    // An empty ACL never comes from a client (fixup rejects it) but ZooKeeper lets it
    // through, so a restored tree behaves the same.
    if acl.is_empty() || caller.iter().any(|id| id.scheme == SUPER_SCHEME) {
        return true;
    }
    acl.iter()
        .filter(|entry| entry.perms & perm != 0)
        .any(|entry| grants(&entry.id, caller))
}

/// Whether the ACL entry's id matches one of the caller's identities.
fn grants(acl_id: &Id, caller: &[Id]) -> bool {
    match acl_id.scheme.as_str() {
        "world" => acl_id.id == "anyone",
        "digest" => caller
            .iter()
            .any(|id| id.scheme == "digest" && id.id == acl_id.id),
        "ip" => caller
            .iter()
            .any(|id| id.scheme == "ip" && ip_matches(&id.id, &acl_id.id)),
        "x509" => caller
            .iter()
            .any(|id| id.scheme == "x509" && id.id == acl_id.id),
        // No provider (`auth` never survives fixup; sasl is not enabled).
        _ => false,
    }
}

/// The ACL a create or setACL stores, or `InvalidAcl`.
///
/// As ZooKeeper 3.9: duplicates are removed first (ZOOKEEPER-1877), then each entry is
/// kept if it is `world:anyone` or a well-formed `ip`/`digest` id; an `auth` entry
/// (whatever its id) becomes one entry per authenticated identity of the caller, with
/// the same perms, and is invalid if the caller has none (`ip` is not an authenticated
/// scheme). Entries are not de-duplicated again after that expansion, and permission
/// bits are not checked: ZooKeeper stores perms 0, 64 or -1 as given (checked against
/// 3.8, see the tests).
pub fn fixup(acl: &[Acl], caller: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<&Acl> = Vec::with_capacity(acl.len());
    for entry in acl {
        if !unique.contains(&entry) {
            unique.push(entry);
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut fixed = Vec::with_capacity(unique.len());
    for entry in unique {
        if entry.id.scheme == "auth" {
            let before = fixed.len();
            fixed.extend(
                caller
                    .iter()
                    .filter(|id| is_authenticated_scheme(&id.scheme))
                    .map(|id| Acl {
                        perms: entry.perms,
                        id: id.clone(),
                    }),
            );
            if fixed.len() == before {
                return Err(ErrorCode::InvalidAcl);
            }
        } else if is_valid_id(&entry.id) {
            fixed.push(entry.clone());
        } else {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    Ok(fixed)
}

/// Schemes whose identities prove who the caller is (`AuthenticationProvider
/// .isAuthenticated`): the ones an `auth` ACL entry expands to.
fn is_authenticated_scheme(scheme: &str) -> bool {
    scheme == "digest" || scheme == "x509"
}

/// Whether an id may be stored in an ACL (`ServerAuthenticationProvider.isValid`).
pub fn is_valid_id(id: &Id) -> bool {
    match id.scheme.as_str() {
        "world" => id.id == "anyone",
        "digest" => is_valid_digest_id(&id.id),
        "ip" => is_valid_ip_expr(&id.id),
        // A certificate subject. ZooKeeper accepts these only once TLS registered its
        // x509 provider; Paddock checks ACLs as each replica applies a txn, from the
        // txn alone, so the scheme is always known.
        "x509" => crate::tls::is_distinguished_name(&id.id),
        _ => false,
    }
}

/// `user:hash`: Java's `id.split(":").length == 2`, which drops trailing empty parts,
/// so `user:` is invalid while `:hash` and `user:hash:` are valid (checked against 3.8).
fn is_valid_digest_id(id: &str) -> bool {
    let mut parts: Vec<&str> = id.split(':').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts.len() == 2
}

/// The digest id ZooKeeper derives from `user:password` (`DigestAuthenticationProvider
/// .generateDigest`): `user:` followed by base64(sha1(`user:password`)). The user is
/// everything before the first colon.
pub fn generate_digest(id_password: &str) -> String {
    let user = id_password.split(':').next().unwrap_or_default();
    let hash = Sha1::digest(id_password.as_bytes());
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// The ACL as a caller without ADMIN sees it: digest ids become `user:x`, so password
/// hashes are not handed to anyone who may only read (ZooKeeper 3.8+ getACL).
pub fn redact(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|entry| {
            if entry.id.scheme != "digest" {
                return entry.clone();
            }
            // Java's `replaceAll(":.*", ":x")`: an id without a colon is left alone.
            match entry.id.id.split_once(':') {
                Some((user, _)) => Acl {
                    perms: entry.perms,
                    id: Id::new("digest", format!("{user}:x")),
                },
                None => entry.clone(),
            }
        })
        .collect()
}

/// An address as `IPAuthenticationProvider` parses it: 4 bytes or 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IpBytes {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl IpBytes {
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            IpBytes::V4(b) => b,
            IpBytes::V6(b) => b,
        }
    }

    fn bit_len(&self) -> u32 {
        match self {
            IpBytes::V4(_) => 32,
            IpBytes::V6(_) => 128,
        }
    }

    /// Keeps the first `bits` bits, zeroes the rest.
    fn masked(mut self, bits: u32) -> Self {
        for (i, byte) in self.bytes_mut().iter_mut().enumerate() {
            let first_bit = u32::try_from(i * 8).unwrap_or(u32::MAX);
            let keep = bits.saturating_sub(first_bit).min(8);
            *byte &= if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
        }
        self
    }
}

/// `addr2Bytes`: a colon means IPv6, else a dot means IPv4, else not an address (host
/// names are never resolved).
fn parse_ip(addr: &str) -> Option<IpBytes> {
    if addr.contains(':') {
        parse_v6(addr).map(IpBytes::V6)
    } else if addr.contains('.') {
        parse_v4(addr).map(IpBytes::V4)
    } else {
        None
    }
}

/// Four decimal parts, each 0–255 as Java's `Integer.parseInt` reads them (so `+1` and
/// `010` are accepted).
fn parse_v4(addr: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = addr.split('.');
    for byte in &mut out {
        let value: i32 = parts.next()?.parse().ok()?;
        *byte = u8::try_from(value).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// ZooKeeper 3.9's `parseV6addr`: eight groups of 1–4 hex digits, or fewer around one
/// `::`. Embedded IPv4 (`::ffff:1.2.3.4`) is not accepted, as in ZooKeeper.
fn parse_v6(addr: &str) -> Option<[u8; 16]> {
    let halves: Vec<&str> = addr.split("::").collect();
    let (head, tail): (Vec<&str>, Vec<&str>) = match halves.as_slice() {
        [all] => {
            let groups: Vec<&str> = all.split(':').collect();
            if groups.len() != 8 {
                return None;
            }
            (groups, Vec::new())
        }
        [head, tail] => {
            let (head, tail) = (v6_groups(head), v6_groups(tail));
            if head.len() + tail.len() >= 8 {
                return None;
            }
            (head, tail)
        }
        _ => return None,
    };
    let mut out = [0u8; 16];
    write_v6_groups(&mut out[..head.len() * 2], &head)?;
    write_v6_groups(&mut out[16 - tail.len() * 2..], &tail)?;
    Some(out)
}

/// The colon-separated groups on one side of `::`; none for an empty side.
fn v6_groups(side: &str) -> Vec<&str> {
    if side.is_empty() {
        Vec::new()
    } else {
        side.split(':').collect()
    }
}

/// Writes each group as two big-endian bytes.
fn write_v6_groups(out: &mut [u8], groups: &[&str]) -> Option<()> {
    for (pair, group) in out.chunks_exact_mut(2).zip(groups) {
        if group.is_empty() || group.len() > 4 {
            return None;
        }
        // Java's parseInt(s, 16) takes a sign, so "-1" is 0xffff; mirror it.
        let value = i32::from_str_radix(group, 16).ok()?;
        pair.copy_from_slice(&value.to_be_bytes()[2..]);
    }
    Some(())
}

/// `address` or `address/bits`, with bits within the address length.
fn parse_ip_expr(expr: &str) -> Option<(IpBytes, u32)> {
    let (addr, bits) = match expr.split_once('/') {
        Some((addr, bits)) => (addr, Some(bits)),
        None => (expr, None),
    };
    let addr = parse_ip(addr)?;
    let bits = match bits {
        None => addr.bit_len(),
        Some(bits) => {
            let bits: i32 = bits.parse().ok()?;
            u32::try_from(bits).ok().filter(|b| *b <= addr.bit_len())?
        }
    };
    Some((addr, bits))
}

fn is_valid_ip_expr(expr: &str) -> bool {
    parse_ip_expr(expr).is_some()
}

/// Whether the caller's address falls in the ACL's address or range; IPv4 never
/// matches IPv6.
fn ip_matches(caller_addr: &str, acl_expr: &str) -> bool {
    let Some((acl_addr, bits)) = parse_ip_expr(acl_expr) else {
        return false;
    };
    let Some(caller) = parse_ip(caller_addr) else {
        return false;
    };
    caller.masked(bits) == acl_addr.masked(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_wire::perms::{ADMIN, ALL, CREATE, READ, WRITE};

    fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
        Acl {
            perms,
            id: Id::new(scheme, id),
        }
    }

    fn ip(addr: &str) -> Id {
        Id::new("ip", addr)
    }

    #[test]
    fn digest_matches_zookeeper() {
        // Both values printed by a real ZooKeeper 3.8 setup (getACL of a node created
        // with `auth` after `addauth digest user:pass`, and `superDigest`).
        assert_eq!(
            generate_digest("user:pass"),
            "user:smGaoVKd/cQkjm7b88GyorAUz20="
        );
        assert_eq!(
            generate_digest("super:secret"),
            "super:lK75jTNcA+U9vtVEw5vB51mj/w4="
        );
        // The user is what precedes the first colon; the hash covers everything.
        assert!(generate_digest("a:b:c").starts_with("a:"));
        assert!(generate_digest("nocolon").starts_with("nocolon:"));
    }

    #[test]
    fn world_digest_and_super() {
        let open = Acl::open_unsafe();
        assert_eq!(check(&open, WRITE, &[]), Ok(()));
        let read_only = Acl::read_unsafe();
        assert_eq!(
            check(&read_only, WRITE, &[ip("127.0.0.1")]),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(
            check(&read_only, READ | ADMIN, &[]),
            Ok(()),
            "any bit of perm"
        );

        let user = generate_digest("user:pass");
        let private = vec![acl(ALL, "digest", &user)];
        let caller = [ip("127.0.0.1"), Id::new("digest", user.clone())];
        assert_eq!(check(&private, READ, &caller), Ok(()));
        assert_eq!(check(&private, READ, &caller[..1]), Err(ErrorCode::NoAuth));
        assert_eq!(
            check(&private, READ, &[Id::new("digest", "user:x")]),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(check(&private, ADMIN, &[Id::new(SUPER_SCHEME, "")]), Ok(()));
        // A world entry with another id, or an unknown scheme, grants nothing.
        assert!(!is_allowed(&[acl(ALL, "world", "someone")], READ, &[]));
        assert!(!is_allowed(
            &[acl(ALL, "sasl", "bob")],
            READ,
            &[Id::new("sasl", "bob")]
        ));
        assert!(
            is_allowed(&[], READ, &[]),
            "an empty ACL lets everyone through"
        );
    }

    #[test]
    fn ip_ranges() {
        // Verified on ZooKeeper 3.8 from 127.0.0.1: 127.0.0.0/8, 127.0.0.1 and
        // 200.1.1.1/0 grant, 127.0.0.2/32, 127.0.0.2/31 and 10.0.0.0/8 do not.
        for (expr, granted) in [
            ("127.0.0.0/8", true),
            ("127.0.0.1", true),
            ("200.1.1.1/0", true),
            ("127.0.0.2/32", false),
            ("127.0.0.2/31", false),
            ("10.0.0.0/8", false),
            ("127.0.0.0/25", true),
            ("127.0.0.128/25", false),
        ] {
            assert_eq!(ip_matches("127.0.0.1", expr), granted, "{expr}");
        }
        assert!(ip_matches("::1", "0:0:0:0:0:0:0:1"));
        assert!(ip_matches("0:0:0:0:0:0:0:1", "::1/128"));
        assert!(ip_matches("2001:db8::7", "2001:db8::/32"));
        assert!(!ip_matches("2001:db9::7", "2001:db8::/32"));
        assert!(!ip_matches("127.0.0.1", "::/0"), "families never match");
        assert!(!ip_matches("not-an-ip", "0.0.0.0/0"));
    }

    #[test]
    fn ip_parsing_follows_zookeeper() {
        for good in [
            "10.0.0.0/8",
            "1.2.3.4",
            "::1",
            "::",
            "1::",
            "fe80::1:2/64",
            "1:2:3:4:5:6:7:8",
            "1.2.3.4/0",
            "::/128",
        ] {
            assert!(is_valid_ip_expr(good), "{good}");
        }
        // 1.2.3 and localhost and 10.0.0.0/33 were rejected by ZooKeeper 3.8 with
        // InvalidACL; the IPv6 cases follow 3.9's parser (3.8 rejected all IPv6).
        for bad in [
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "localhost",
            "10.0.0.0/33",
            "1.2.3.4/",
            "1.2.3.4/-1",
            "1:2:3:4:5:6:7",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            ":::",
            "1::2:3:4:5:6:7:8",
            "12345::",
            "::ffff:1.2.3.4",
            "g::",
            "::/129",
        ] {
            assert!(!is_valid_ip_expr(bad), "{bad}");
        }
        assert_eq!(
            parse_v6("1::2"),
            Some([0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2])
        );
    }

    #[test]
    fn fixup_dedups_expands_and_validates() {
        // ZooKeeper 3.8: [world ALL, world ALL, world READ] is stored as
        // [world ALL, world READ].
        let dup = [
            acl(ALL, "world", "anyone"),
            acl(ALL, "world", "anyone"),
            acl(READ, "world", "anyone"),
        ];
        assert_eq!(fixup(&dup, &[]), Ok(vec![dup[0].clone(), dup[2].clone()]));

        // `auth` (any id) becomes one entry per digest identity, in caller order; an
        // explicit copy of the same digest is kept (no de-dup after expansion: 3.8
        // stored two identical entries).
        let user = generate_digest("user:pass");
        let other = generate_digest("other:pw");
        let caller = [
            ip("127.0.0.1"),
            Id::new("digest", user.clone()),
            Id::new("digest", other.clone()),
        ];
        assert_eq!(
            fixup(&[acl(READ | WRITE | CREATE, "auth", "whatever")], &caller),
            Ok(vec![acl(7, "digest", &user), acl(7, "digest", &other)])
        );
        assert_eq!(
            fixup(
                &[acl(ALL, "auth", ""), acl(ALL, "digest", &user)],
                &caller[..2]
            ),
            Ok(vec![acl(ALL, "digest", &user), acl(ALL, "digest", &user)])
        );
        // ip and super are not authenticated schemes: `auth` has nothing to expand to.
        let no_auth = [ip("127.0.0.1"), Id::new(SUPER_SCHEME, "")];
        assert_eq!(
            fixup(&[acl(ALL, "auth", "")], &no_auth),
            Err(ErrorCode::InvalidAcl)
        );

        // Each was InvalidACL on ZooKeeper 3.8 (the empty list through a raw create2).
        for bad in [
            vec![],
            vec![acl(ALL, "world", "foo")],
            vec![acl(ALL, "super", "")],
            vec![acl(ALL, "foo", "bar")],
            vec![acl(ALL, "digest", "a:b:c")],
            vec![acl(ALL, "digest", "user:")],
            vec![acl(ALL, "ip", "1.2.3")],
            vec![acl(ALL, "ip", "localhost")],
            vec![acl(ALL, "world", "anyone"), acl(ALL, "ip", "10.0.0.0/33")],
        ] {
            assert_eq!(fixup(&bad, &caller), Err(ErrorCode::InvalidAcl), "{bad:?}");
        }
        // ...and these were accepted as given, perms included.
        for good in [
            vec![acl(ALL, "digest", ":hash")],
            vec![acl(ALL, "digest", "u:h:")],
            vec![acl(0, "world", "anyone")],
            vec![acl(64 | READ, "world", "anyone")],
            vec![acl(-1, "world", "anyone")],
            vec![acl(ALL, "ip", "10.0.0.0/8")],
        ] {
            assert_eq!(fixup(&good, &[]), Ok(good.clone()));
        }
    }

    #[test]
    fn redaction_hides_digest_hashes() {
        // What ZooKeeper 3.8 returned to a READ-only caller.
        let stored = [
            acl(READ, "world", "anyone"),
            acl(ALL, "digest", &generate_digest("user:pass")),
        ];
        assert_eq!(
            redact(&stored),
            vec![acl(READ, "world", "anyone"), acl(ALL, "digest", "user:x")]
        );
    }
}
