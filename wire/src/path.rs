//! Znode path rules, as ZooKeeper's `PathUtils.validatePath` enforces them, shared by the
//! client (to fail fast) and the server (to answer `BadArguments`).

/// Why a path is not a valid znode path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path must not be empty")]
    Empty,
    #[error("path must start with / character")]
    NotAbsolute,
    #[error("path must not end with / character")]
    TrailingSlash,
    #[error("empty node name specified @{0}")]
    EmptySegment(usize),
    #[error("relative paths not allowed @{0}")]
    Relative(usize),
    #[error("invalid character {ch:?} @{at}")]
    InvalidChar { ch: char, at: usize },
}

/// Validates an absolute znode path. A sequential create's path may end in `/`, since
/// the server appends the sequence number (ZooKeeper checks `path + "1"` for those).
pub fn validate_path(path: &str, sequential: bool) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathError::NotAbsolute);
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return Err(PathError::TrailingSlash);
    }
    for (index, segment) in path[1..].split('/').enumerate() {
        let at = segment_offset(path, index);
        let last = at + segment.len() == path.len();
        if segment.is_empty() && !(last && sequential) {
            return Err(PathError::EmptySegment(at));
        }
        if segment == "." || segment == ".." {
            return Err(PathError::Relative(at));
        }
        for (offset, ch) in segment.char_indices() {
            if is_forbidden(ch) {
                return Err(PathError::InvalidChar {
                    ch,
                    at: at + offset,
                });
            }
        }
    }
    Ok(())
}

/// The byte offset of the `index`-th segment (after the leading slash).
fn segment_offset(path: &str, index: usize) -> usize {
    path.match_indices('/')
        .nth(index)
        .map_or(path.len(), |(i, _)| i + 1)
}

/// The code points ZooKeeper rejects: NUL and the C0/C1 controls, the UTF-16 surrogate
/// and private-use ranges (so anything outside the Basic Multilingual Plane, which Java
/// sees as a surrogate pair), and U+FFF0–U+FFFF.
fn is_forbidden(ch: char) -> bool {
    matches!(ch,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{e000}'..='\u{f8ff}'
        | '\u{fff0}'..='\u{ffff}')
        || u32::from(ch) > 0xffff
}

/// The parent of a valid path; the root has none.
pub fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        None => None,
        Some(_) if path == "/" => None,
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
    }
}

/// The last segment of a valid path; empty for the root.
pub fn basename(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_zookeeper_accepts() {
        for p in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/..a",
            "/a..",
            "/a/.b/c",
            "/zookeeper/quota",
            "/é",
        ] {
            assert_eq!(validate_path(p, false), Ok(()), "{p}");
        }
        assert_eq!(validate_path("/a/", true), Ok(()));
        assert_eq!(validate_path("/", true), Ok(()));
    }

    #[test]
    fn rejects_what_zookeeper_rejects() {
        assert_eq!(validate_path("", false), Err(PathError::Empty));
        assert_eq!(validate_path("a/b", false), Err(PathError::NotAbsolute));
        assert_eq!(validate_path("/a/", false), Err(PathError::TrailingSlash));
        assert_eq!(
            validate_path("/a//b", false),
            Err(PathError::EmptySegment(3))
        );
        assert_eq!(validate_path("/a//", true), Err(PathError::EmptySegment(3)));
        assert_eq!(validate_path("/a/./b", false), Err(PathError::Relative(3)));
        assert_eq!(validate_path("/a/..", false), Err(PathError::Relative(3)));
        assert_eq!(validate_path("/.", false), Err(PathError::Relative(1)));
        for bad in [
            "/a\u{0}b",
            "/a\u{1f}",
            "/\u{7f}",
            "/\u{9f}",
            "/\u{e000}",
            "/\u{fff5}",
            "/\u{1f600}",
        ] {
            assert!(
                matches!(
                    validate_path(bad, false),
                    Err(PathError::InvalidChar { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn parents_and_basenames() {
        assert_eq!(parent("/"), None);
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/a/b/c"), Some("/a/b"));
        assert_eq!(basename("/a/b"), "b");
        assert_eq!(basename("/"), "");
    }
}
