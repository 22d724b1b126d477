//! Value parsers: each names the key and what was expected when a value is wrong.

use super::*;

pub(super) fn invalid(key: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

/// A Java `int`, as `Integer.parseInt` reads it.
pub(super) fn java_int(key: &str, value: &str) -> Result<i32, ConfigError> {
    value.parse().map_err(|_| invalid(key, value, "an integer"))
}

/// A Java `int` of at least `min`.
pub(super) fn int(key: &str, value: &str, min: u32) -> Result<u32, ConfigError> {
    let n = java_int(key, value)?;
    match u32::try_from(n) {
        Ok(n) if n >= min => Ok(n),
        _ => Err(invalid(
            key,
            value,
            &format!("an integer from {min} to {}", i32::MAX),
        )),
    }
}

/// A positive Java `int` as `Integer.decode` reads it (`jute.maxbuffer` is a system
/// property there, usually written in hex): `0x`/`#` hex, leading-`0` octal, decimal.
pub(super) fn java_decode(key: &str, value: &str) -> Result<u32, ConfigError> {
    let (radix, digits) = if let Some(hex) = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
        .or_else(|| value.strip_prefix('#'))
    {
        (16, hex)
    } else if value.len() > 1 && value.starts_with('0') {
        (8, &value[1..])
    } else {
        (10, value)
    };
    let well_formed = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
    let max = i32::MAX.unsigned_abs();
    match u32::from_str_radix(digits, radix) {
        Ok(n) if well_formed && (1..=max).contains(&n) => Ok(n),
        _ => Err(invalid(
            key,
            value,
            "a size in bytes from 1 to 2147483647 (decimal, 0x hex or 0 octal)",
        )),
    }
}

pub(super) fn port(key: &str, value: &str) -> Result<u16, ConfigError> {
    match value.trim().parse::<u16>() {
        Ok(port) if port != 0 => Ok(port),
        _ => Err(invalid(key, value, PORT_RANGE)),
    }
}

/// `true`/`false` in any case, as `QuorumPeerConfig.parseBoolean` reads them.
pub(super) fn boolean(key: &str, value: &str) -> Result<bool, ConfigError> {
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid(key, value, "true or false"))
    }
}

/// `forceSync`'s `yes`/`no`. ZooKeeper treats anything but `yes` as `no`, so a `true`
/// there silently turns fsync off; here it is an error instead.
pub(super) fn yes_no(key: &str, value: &str) -> Result<bool, ConfigError> {
    if value.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err(invalid(key, value, "yes or no"))
    }
}

pub(super) fn hours(n: u64) -> Duration {
    Duration::from_secs(n.saturating_mul(3600))
}
