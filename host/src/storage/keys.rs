//! The key rules every backend of this crate applies (WIT `storage`:
//! `invalid-key`): keys are relative, `/`-separated paths of non-empty
//! segments other than `.` and `..`, without backslash or NUL, and no segment
//! starts with the local directory's temporary-file prefix. One set of rules
//! for every backend, so that a table can move between a local directory
//! and an object store without a key becoming unreadable.

use sink_coordinator::StorageError;

use super::local::TMP_PREFIX;

/// At most a few hundred bytes of `s` (on a char boundary), for messages
/// that echo a key.
pub(crate) fn clip(s: &str) -> String {
    const MAX: usize = 200;
    if s.len() <= MAX {
        return s.to_string();
    }
    let end = s.floor_char_boundary(MAX);
    format!("{}... ({} bytes)", &s[..end], s.len())
}

fn check_chars(what: &str, s: &str) -> Result<(), StorageError> {
    let problem = if s.contains('\\') {
        "contains a backslash"
    } else if s.contains('\0') {
        "contains NUL"
    } else if s.starts_with('/') {
        "is absolute"
    } else {
        return Ok(());
    };
    Err(StorageError::InvalidKey(format!(
        "{what} {:?} {problem}",
        clip(s)
    )))
}

fn check_segment(what: &str, s: &str, segment: &str) -> Result<(), StorageError> {
    let problem = if segment.is_empty() {
        "has an empty segment".to_string()
    } else if segment == "." || segment == ".." {
        format!("has a {segment:?} segment")
    } else if segment.starts_with(TMP_PREFIX) {
        format!("uses the reserved name prefix {TMP_PREFIX:?}")
    } else {
        return Ok(());
    };
    Err(StorageError::InvalidKey(format!(
        "{what} {:?} {problem}",
        clip(s)
    )))
}

/// A key: relative, `/`-separated, non-empty segments other than `.` and `..`.
pub fn check_key(key: &str) -> Result<(), StorageError> {
    if key.is_empty() {
        return Err(StorageError::InvalidKey("empty key".into()));
    }
    check_chars("key", key)?;
    key.split('/')
        .try_for_each(|segment| check_segment("key", key, segment))
}

/// A prefix: like a key, except that it may be empty and its last segment
/// (the part after the last `/`) may be empty or partial.
pub fn check_prefix(prefix: &str) -> Result<(), StorageError> {
    check_chars("prefix", prefix)?;
    match prefix.rsplit_once('/') {
        Some((dirs, _)) => dirs
            .split('/')
            .try_for_each(|segment| check_segment("prefix", prefix, segment)),
        None => Ok(()),
    }
}
