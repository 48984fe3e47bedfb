//! Where the table a replay runs on keeps its snapshots and tags, by format: the
//! replayer diffs those keys around each step (`committed`, `tags_created`,
//! `tags_deleted`).

use sink_coordinator::table::{TableFormatKind, SNAPSHOT_PREFIX, TAG_PREFIX};

use super::ReplayError;
use crate::paimon::keys;

/// The directories listed around each step: the same two in both formats
/// (`snapshot/` also holds Paimon's `LATEST` and `EARLIEST` hints).
pub(super) const SNAPSHOT_DIR: &str = SNAPSHOT_PREFIX;
pub(super) const TAG_DIR: &str = TAG_PREFIX;

/// The snapshot id of `key`, listed under [`SNAPSHOT_DIR`]: `None` for a key of that
/// directory that is no snapshot (Paimon's hints), an error for a key the format
/// never writes there.
pub(super) fn snapshot_id(format: TableFormatKind, key: &str) -> Result<Option<u64>, ReplayError> {
    let unexpected = || ReplayError::Host(format!("the table holds an unexpected key {key:?}"));
    match format {
        TableFormatKind::Native => key
            .strip_prefix(SNAPSHOT_PREFIX)
            .and_then(|digits| digits.parse::<u64>().ok())
            .map(Some)
            .ok_or_else(unexpected),
        TableFormatKind::Paimon => match keys::snapshot_id(key) {
            Some(id) => Ok(Some(id)),
            None if key == "snapshot/LATEST" || key == "snapshot/EARLIEST" => Ok(None),
            None => Err(unexpected()),
        },
    }
}

/// The tag name of `key`, listed under [`TAG_DIR`] (`None`: not a tag of the format).
pub(super) fn tag_name(format: TableFormatKind, key: &str) -> Option<String> {
    match format {
        TableFormatKind::Native => Some(key.strip_prefix(TAG_PREFIX).unwrap_or(key).to_string()),
        TableFormatKind::Paimon => keys::tag_name(key).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_by_format() {
        let (n, p) = (TableFormatKind::Native, TableFormatKind::Paimon);
        assert_eq!(
            snapshot_id(n, "snapshot/00000000000000000003").unwrap(),
            Some(3)
        );
        assert!(snapshot_id(n, "snapshot/LATEST").is_err());
        assert_eq!(snapshot_id(p, "snapshot/snapshot-3").unwrap(), Some(3));
        assert_eq!(snapshot_id(p, "snapshot/EARLIEST").unwrap(), None);
        assert!(snapshot_id(p, "snapshot/00000000000000000003").is_err());
        assert_eq!(tag_name(n, "tag/a").as_deref(), Some("a"));
        assert_eq!(tag_name(p, "tag/tag-a").as_deref(), Some("a"));
        assert_eq!(tag_name(p, "tag/a"), None);
    }
}
