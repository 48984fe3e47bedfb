//! A Paimon table's keys as the replayer sees them: which are snapshots and tags (for
//! a step's `committed`, `tags_created`, `tags_deleted`), which storage calls the
//! fault queues count, and the native key that plays the same role (for the text of
//! an injected fault).
//!
//! Why faults count only some calls: TRACE-FORMAT promises that "the first put-class
//! calls of a commit are the atomic creates of its snapshots, in order ... tag and hint
//! puts come after them". A Paimon commit first puts a manifest and two manifest lists,
//! then creates the snapshot. Read as the trace means it, a put fault counts the commit
//! points: the snapshot and tag creates and the `LATEST` hint (the native hint's role).
//! So in Paimon mode the manifest and list puts, `EARLIEST` (which the native layout
//! does not have) and the schema go through without counting toward any fault's
//! `skip`; likewise for the other kinds, only calls with a native twin count: gets of
//! snapshots, `LATEST` and tags (not of the schema or manifests), the listing of
//! `tag/` (not of `snapshot/`, which only Paimon's hint fallback makes), deletes of
//! tags.

use std::borrow::Cow;

use sink_coordinator_paimon::snapshot::{parse_snapshot_file_name, LATEST_KEY};

use crate::faults::CallKind;

/// Where a Paimon table keeps its snapshots.
pub const SNAPSHOT_DIR: &str = "snapshot/";
/// Where a Paimon table keeps its tags (`tag/tag-<name>`).
pub const TAG_DIR: &str = "tag/";
const TAG_FILE_PREFIX: &str = "tag/tag-";

/// The id of a snapshot key `snapshot/snapshot-<id>`; `None` for the hints.
pub fn snapshot_id(key: &str) -> Option<u64> {
    let id = parse_snapshot_file_name(key.strip_prefix(SNAPSHOT_DIR)?)?;
    u64::try_from(id).ok()
}

/// The tag name of a tag key `tag/tag-<name>`.
pub fn tag_name(key: &str) -> Option<&str> {
    key.strip_prefix(TAG_FILE_PREFIX)
}

/// Whether a call of `call` on `key` (a prefix for `list`) is one a fault queue counts
/// (see the module doc).
pub fn counts(call: CallKind, key: &str) -> bool {
    let snapshot_or_hint = snapshot_id(key).is_some() || key == LATEST_KEY;
    match call {
        CallKind::Put | CallKind::Get => snapshot_or_hint || tag_name(key).is_some(),
        CallKind::List => key == TAG_DIR,
        CallKind::Delete => tag_name(key).is_some(),
    }
}

/// The native key that plays `key`'s role (`snapshot/snapshot-7` is
/// `snapshot/00000000000000000007`, `snapshot/LATEST` the native hint, `tag/tag-x`
/// `tag/x`); other keys as they are. Only `EARLIEST` has no twin (and is never
/// faulted).
pub fn native_key(key: &str) -> Cow<'_, str> {
    if let Some(id) = snapshot_id(key) {
        return Cow::Owned(sink_coordinator::table::snapshot_key(id));
    }
    if key == LATEST_KEY {
        return Cow::Borrowed(sink_coordinator::table::LATEST_HINT);
    }
    if let Some(name) = tag_name(key) {
        return Cow::Owned(sink_coordinator::table::tag_key(name));
    }
    Cow::Borrowed(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_their_native_twins() {
        assert_eq!(snapshot_id("snapshot/snapshot-12"), Some(12));
        assert_eq!(snapshot_id("snapshot/LATEST"), None);
        assert_eq!(snapshot_id("snapshot/snapshot-0"), None);
        assert_eq!(tag_name("tag/tag-savepoint-3"), Some("savepoint-3"));
        assert_eq!(tag_name("tag/other"), None);
        assert_eq!(
            native_key("snapshot/snapshot-7"),
            "snapshot/00000000000000000007"
        );
        assert_eq!(native_key("snapshot/LATEST"), "hint/latest-snapshot");
        assert_eq!(native_key("tag/tag-s"), "tag/s");
        assert_eq!(native_key("manifest/m"), "manifest/m");
    }

    #[test]
    fn only_calls_with_a_native_twin_count() {
        for key in ["snapshot/snapshot-1", "snapshot/LATEST", "tag/tag-s"] {
            assert!(counts(CallKind::Put, key), "{key}");
            assert!(counts(CallKind::Get, key), "{key}");
        }
        for key in [
            "manifest/manifest-x-0",
            "manifest/manifest-list-x-1",
            "snapshot/EARLIEST",
            "schema/schema-0",
        ] {
            assert!(!counts(CallKind::Put, key), "{key}");
            assert!(!counts(CallKind::Get, key), "{key}");
        }
        assert!(counts(CallKind::List, "tag/"));
        assert!(!counts(CallKind::List, "snapshot/"));
        assert!(counts(CallKind::Delete, "tag/tag-s"));
        assert!(!counts(CallKind::Delete, "manifest/m"));
    }
}
