//! The Java-properties reader (what ZooKeeper's `QuorumPeerConfig` uses): lines,
//! continuations, escapes, comments, and the last of a repeated key.

use super::*;

/// UTF-8, or Latin-1 (what Java's `Properties.load` assumes) when the bytes are not UTF-8.
pub(super) fn decode(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| error.into_bytes().into_iter().map(char::from).collect())
}

/// The last value of each key, in order of first appearance, warning once per repeated key.
pub(super) fn last_values(
    properties: Vec<(String, String)>,
    warnings: &mut Vec<ConfigWarning>,
) -> Vec<(String, String)> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut repeated: BTreeSet<String> = BTreeSet::new();
    let mut unique: Vec<(String, String)> = Vec::with_capacity(properties.len());
    for (key, value) in properties {
        if let Some(&at) = index.get(&key) {
            unique[at].1 = value;
            if repeated.insert(key.clone()) {
                warnings.push(ConfigWarning::DuplicateKey { key });
            }
        } else {
            index.insert(key.clone(), unique.len());
            unique.push((key, value));
        }
    }
    unique
}

/// Java's properties whitespace.
pub(super) fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

/// The `(key, value)` pairs of a properties text, unescaped as `Properties.load` does and
/// trimmed as ZooKeeper does.
pub(super) fn read_properties(text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut properties = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        let mut piece = line.trim_start_matches(is_blank);
        // Only a line that starts a logical line can be a comment.
        if piece.is_empty() || piece.starts_with(['#', '!']) {
            continue;
        }
        let mut logical = String::new();
        loop {
            let trailing = piece.len() - piece.trim_end_matches('\\').len();
            if trailing % 2 == 0 {
                logical.push_str(piece);
                break;
            }
            logical.push_str(&piece[..piece.len() - 1]);
            match lines.next() {
                Some((_, next)) => piece = next.trim_start_matches(is_blank),
                None => break,
            }
        }
        let (key, value) = split_key_value(&logical);
        let syntax = |reason| ConfigError::Syntax {
            line: number,
            reason,
        };
        let key = unescape(key).map_err(syntax)?;
        let value = unescape(value).map_err(syntax)?;
        // ZooKeeper trims with Java's String.trim: every char up to U+0020.
        let trim = |s: &str| s.trim_matches(|c| c <= ' ').to_owned();
        properties.push((trim(&key), trim(&value)));
    }
    Ok(properties)
}

/// Splits a logical line at the first unescaped `=`, `:` or whitespace; whitespace may be
/// followed by one `=` or `:`.
pub(super) fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => {
                return (&line[..at], line[at + 1..].trim_start_matches(is_blank));
            }
            c if is_blank(c) => {
                let rest = line[at..].trim_start_matches(is_blank);
                let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest);
                return (&line[..at], rest.trim_start_matches(is_blank));
            }
            _ => {}
        }
    }
    (line, "")
}

/// Java properties escapes: `\t \n \r \f`, `\uXXXX` (surrogate pairs joined), and `\c`
/// for any other `c`.
pub(super) fn unescape(s: &str) -> Result<String, &'static str> {
    const MALFORMED: &str = "malformed \\uXXXX escape";
    fn read_u(chars: &mut std::str::Chars<'_>) -> Result<u32, &'static str> {
        let hex: String = chars.by_ref().take(4).collect();
        if hex.chars().count() != 4 {
            return Err(MALFORMED);
        }
        u32::from_str_radix(&hex, 16).map_err(|_| MALFORMED)
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let unit = read_u(&mut chars)?;
                let code = if (0xd800..0xdc00).contains(&unit) {
                    if chars.next() != Some('\\') || chars.next() != Some('u') {
                        return Err("unpaired surrogate in \\u escapes");
                    }
                    let low = read_u(&mut chars)?;
                    if !(0xdc00..0xe000).contains(&low) {
                        return Err("unpaired surrogate in \\u escapes");
                    }
                    0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)
                } else {
                    unit
                };
                out.push(char::from_u32(code).ok_or("unpaired surrogate in \\u escapes")?);
            }
            Some(other) => out.push(other),
            // A lone trailing backslash (a continuation at the end of the file) vanishes.
            None => {}
        }
    }
    Ok(out)
}
