//! The read-back of a Paimon snapshot's committables, for the read-only `table`
//! functions (`table::snapshot_by_id`, `list_snapshots`, `latest_snapshot`): what the
//! native log stores in the snapshot itself, a Paimon table keeps in manifests.
//!
//! A snapshot's committables are the ADD entries of its **delta** manifest list (the
//! files its commit added), in entry order, each re-encoded as its committable
//! (`committable::encode` of the file the entry describes: for a file this format
//! committed, exactly the committed bytes), with the subtask from the snapshot's
//! `sinkcoord.subtasks` property (subtask 0 for every file where it is absent: snapshots
//! Paimon or pypaimon wrote).
//!
//! The commit path never comes here: reading manifests would cost a get per manifest of
//! every snapshot the log looks at.

use alloc::string::String;
use alloc::vec::Vec;

use sink_coordinator_paimon::committable;
use sink_coordinator_paimon::manifest::{self, KIND_ADD};
use sink_coordinator_paimon::snapshot as psnap;
use sink_coordinator_paimon::subtasks;

use super::{corrupt, PaimonTable};
use crate::env::Storage;
use crate::error::{Error, ErrorReason, PaimonDefect, Result, StorageOp};
use crate::table::storage_err;
use crate::table::TableFormat;
use crate::types::Snapshot;

impl PaimonTable {
    /// Snapshot `id` as a reader of the table sees it: the log's record with its
    /// committables read back from the delta manifests (see the module doc).
    pub fn read_back(&mut self, st: &mut dyn Storage, id: u64) -> Result<Option<Snapshot>> {
        let Some(stored) = self.read_snapshot(st, id)? else {
            return Ok(None);
        };
        // `read_snapshot` just cached the raw snapshot it read.
        let raw = self
            .last
            .as_ref()
            .filter(|l| l.id == id)
            .map(|l| l.snapshot.clone())
            .ok_or_else(|| Error::from(ErrorReason::PaimonSnapshotUnavailable))?;
        let mut snapshot = stored.snapshot;
        snapshot.committables = self.committables_of(st, &raw)?;
        Ok(Some(snapshot))
    }

    /// `(subtask, committable)` of every file snapshot `s` added, in entry order.
    fn committables_of(
        &mut self,
        st: &mut dyn Storage,
        s: &psnap::Snapshot,
    ) -> Result<Vec<(u32, Vec<u8>)>> {
        let key = psnap::snapshot_key(s.id);
        let schema = self.schema_at(st, s.schema_id)?.clone();
        let mut get = |name: &str| -> Result<(String, Vec<u8>)> {
            let k = psnap::manifest_key(name);
            let bytes = st
                .get(&k)
                .map_err(|e| storage_err(StorageOp::ReadingSnapshotFiles(s.id), e))?
                .ok_or_else(|| corrupt(&key, PaimonDefect::ManifestMissing { key: k.clone() }))?;
            Ok((k, bytes))
        };
        let (list_key, list) = get(&s.delta_manifest_list)?;
        let metas = manifest::decode_manifest_list(&list)
            .map_err(|e| corrupt(&list_key, PaimonDefect::Manifest(e)))?;
        let mut files = Vec::new();
        for m in metas {
            let (k, bytes) = get(&m.file_name)?;
            let entries = manifest::decode_manifest_files(&bytes, &schema)
                .map_err(|e| corrupt(&k, PaimonDefect::Manifest(e)))?;
            files.extend(
                entries
                    .into_iter()
                    .filter(|e| e.kind == KIND_ADD)
                    .map(|e| committable::encode(&e.file)),
            );
        }
        let runs = s
            .properties
            .as_ref()
            .and_then(|p| p.get(subtasks::P_SUBTASKS));
        let subtasks = match runs {
            None => alloc::vec![0; files.len()],
            Some(v) => subtasks::decode_runs(v, files.len())
                .map_err(|e| corrupt(&key, PaimonDefect::from(e)))?,
        };
        Ok(subtasks.into_iter().zip(files).collect())
    }
}
