//! What the shell prints: stats, ACLs, events and failures, in zkCli's words.

use anyhow::{anyhow, bail, Result};
use paddock_client::{perms, Acl, Error, ErrorCode, Id, Stat, WatchedEvent};

pub fn print_stat(stat: &Stat) {
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

pub fn print_event(event: &WatchedEvent) {
    println!(
        "WatchedEvent state:{:?} type:{:?} path:{}",
        event.state, event.event_type, event.path
    );
}

/// Milliseconds since the epoch as an ISO 8601 UTC timestamp.
pub fn format_millis(millis: i64) -> String {
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

/// `scheme:id:perms[,...]`; the id may itself contain colons (`digest:user:hash:cdrwa`,
/// `ip:10.0.0.1:r`), so perms are what follows the last one.
/// A string as zkCli prints an ACL id: jute's CSV escaping (`Utils.toCSVString`), so an
/// x509 subject `CN=a,O=b` shows as `CN=a%2CO=b`.
pub fn jute_csv(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\0' => out.push_str("%00"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            ',' => out.push_str("%2C"),
            '}' => out.push_str("%7D"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    out
}

pub fn parse_acl(text: &str) -> Result<Vec<Acl>> {
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

pub fn perms_string(bits: i32) -> String {
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

/// A failure in zkCli's words (`ZooKeeperMain`'s handling of `KeeperException`), naming
/// the command's node as zkCli does.
pub fn describe(err: &anyhow::Error, path: Option<&str>) -> String {
    let Some(client_error) = err.downcast_ref::<Error>() else {
        return format!("{err:#}");
    };
    let path = path.unwrap_or("");
    let code = match client_error {
        Error::Keeper(code) => *code,
        Error::ConnectionLoss | Error::SessionExpired | Error::Timeout => client_error.code(),
        other => return format!("Error: {other}"),
    };
    match code {
        ErrorCode::NoNode => format!("Node does not exist: {path}"),
        ErrorCode::NodeExists => format!("Node already exists: {path}"),
        ErrorCode::NotEmpty => format!("Node not empty: {path}"),
        ErrorCode::NoChildrenForEphemerals => format!("Ephemerals cannot have children: {path}"),
        ErrorCode::BadVersion => format!("version No is not valid : {path}"),
        ErrorCode::NoAuth => format!("Insufficient permission : {path}"),
        ErrorCode::InvalidAcl => format!("Acl is not valid : {path}"),
        ErrorCode::BadArguments => format!("Arguments are not valid : {path}"),
        ErrorCode::QuotaExceeded => format!("Quota has exceeded : {path}"),
        other => format!("KeeperErrorCode = {other:?} for {path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn acl_ids_print_with_jutes_csv_escapes() {
        assert_eq!(jute_csv("CN=a,O=b"), "CN=a%2CO=b");
        assert_eq!(jute_csv("bob:abc+/="), "bob:abc+/=");
        assert_eq!(jute_csv("50%}"), "50%25%7D");
    }

    #[test]
    fn timestamps_format_as_utc() {
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_millis(1_718_541_296_789), "2024-06-16T12:34:56.789Z");
    }

    #[test]
    fn failures_name_the_path_as_zkcli_does() {
        let err = |code| anyhow::Error::from(Error::Keeper(code));
        assert_eq!(
            describe(&err(ErrorCode::NoNode), Some("/nope")),
            "Node does not exist: /nope"
        );
        assert_eq!(
            describe(&err(ErrorCode::NodeExists), Some("/zz")),
            "Node already exists: /zz"
        );
        assert_eq!(
            describe(&err(ErrorCode::QuotaExceeded), Some("/yy/b")),
            "Quota has exceeded : /yy/b"
        );
    }
}
