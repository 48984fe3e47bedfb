//! Replaying a trace on an Apache Paimon table (`docs/paimon.md`), so that every
//! result document can be held against the native format's.
//!
//! A trace's committables are opaque bytes; a Paimon table takes only committables of
//! its encoding (PCM v1: one data file's metadata each). The replayer therefore maps
//! each `(subtask, bytes)` to a synthetic data file ([`synthetic`]) on the way into the
//! coordinator, and back on the way out, so that the replayer itself, its result
//! documents and its kept state bytes stay in the trace's terms:
//!
//! - into the coordinator ([`MappedCoordinator`]): the entries of `event`, `events`
//!   and `restored` calls, and the state bytes of a `failover` (kept ones go back to
//!   the coordinator's own bytes exactly; a trace's `state_hex` is decoded and mapped,
//!   or passed as it is when it does not decode);
//! - out of it: a `checkpoint`'s state bytes (the same state with the trace's
//!   committables, encoded as the coordinator encodes it: the length a result shows is
//!   the native one), and the snapshots read back from the table (the core's
//!   read-only functions re-encode each file of a snapshot's delta manifests, with
//!   its subtask).
//!
//! The writer helpers need no mapping: they buffer opaque bytes whatever the table, and
//! what they produce reaches the coordinator through the mapped `event` and
//! `restored` calls. Their state bytes (kept by `writer_snapshot`, never in a result)
//! are therefore the native run's, byte for byte.
//!
//! The table: [`prepare_table`] puts `schema/schema-0` of [`synthetic_schema`] (one
//! BIGINT column, unpartitioned, bucket -1) before the first instance starts. Storage
//! faults count only the calls with a native twin ([`keys`]).

use sink_coordinator::{
    ApplyResult, Call, CoordinatorApi, HostError, Lifecycle, Reply, RestorePoint, Shared, Snapshot,
    Storage, StorageError,
};
use sink_coordinator_paimon::schema::{encode_schema, schema_key, CreateTable};

pub mod keys;
mod map;

pub use map::{synthetic, CommittableMap, DataFiles, Synthetic};

/// `schema/schema-0` of the table a replay on Paimon writes: one BIGINT column,
/// unpartitioned, unaware buckets (bucket -1), created at time 0.
pub fn synthetic_schema() -> Vec<u8> {
    let t = CreateTable {
        columns: &[("value", "BIGINT")],
        partition_keys: &[],
        options: &[],
    };
    // A constant, valid schema: its encoding cannot fail (the unit test below).
    encode_schema(&t, 0).unwrap_or_default()
}

/// Makes an empty table a Paimon table: puts [`synthetic_schema`] as
/// `schema/schema-0` unless the table has one.
pub fn prepare_table(st: &mut dyn Storage) -> Result<(), StorageError> {
    st.put_if_absent(&schema_key(0), &synthetic_schema())
        .map(|_| ())
}

/// The committable map of a driver on a table in `format` (none on the native log); on
/// Paimon the (empty) table is made a Paimon table first ([`prepare_table`]). Shared by
/// the native driver and the test kit's component driver.
pub fn map_for(
    storage: &mut dyn Storage,
    format: sink_coordinator::TableFormatKind,
) -> Result<Option<Shared<CommittableMap>>, HostError> {
    match format {
        sink_coordinator::TableFormatKind::Native => Ok(None),
        sink_coordinator::TableFormatKind::Paimon => {
            prepare_table(storage).map_err(|e| {
                HostError::core(
                    sink_coordinator::ErrorKind::Storage,
                    format!("cannot create the Paimon table's schema: {e}"),
                )
            })?;
            Ok(Some(Shared::new(CommittableMap::default())))
        }
    }
}

/// A coordinator on a Paimon table, seen in the trace's terms: committables are mapped
/// to synthetic files on the way in, state bytes back on the way out (module doc).
pub struct MappedCoordinator {
    inner: Box<dyn CoordinatorApi>,
    map: Shared<CommittableMap>,
}

impl MappedCoordinator {
    /// `inner`, mapped through `map` (shared with the driver that reads the table).
    pub fn new(inner: Box<dyn CoordinatorApi>, map: Shared<CommittableMap>) -> Self {
        MappedCoordinator { inner, map }
    }
}

impl CoordinatorApi for MappedCoordinator {
    fn state(&mut self) -> Lifecycle {
        self.inner.state()
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        self.inner.committed_up_to()
    }
    fn apply(&mut self, call: Call) -> ApplyResult {
        let call = self.map.lock().call_to_table(call);
        match self.inner.apply(call) {
            Ok(Reply::State(bytes)) => Ok(Reply::State(self.map.lock().state_from_table(bytes))),
            other => other,
        }
    }
}

/// A snapshot read back from the table in the trace's terms; a file no mapping made is
/// `corrupt-state` (the replay's table holds only what its coordinators committed).
pub fn snapshot_from_table(
    map: &Shared<CommittableMap>,
    s: Snapshot,
) -> Result<Snapshot, HostError> {
    let id = s.id;
    map.lock().snapshot_from_table(s).map_err(|n| {
        HostError::core(
            sink_coordinator::ErrorKind::CorruptState,
            format!(
                "snapshot {id} holds {n} data file(s) that no committable of the trace stands for"
            ),
        )
    })
}

/// A driver's table format and, on Paimon, its committable map: how the native
/// driver and the test kit's component driver create coordinators on the table and
/// read it back in the trace's terms.
pub struct TableMapping {
    format: sink_coordinator::TableFormatKind,
    map: Option<Shared<CommittableMap>>,
}

impl TableMapping {
    /// The native table format: nothing is mapped.
    pub fn native() -> Self {
        TableMapping {
            format: sink_coordinator::TableFormatKind::Native,
            map: None,
        }
    }

    /// The mapping of a driver on a table in `format` ([`map_for`]: on Paimon the
    /// table is made a Paimon table now).
    pub fn new(
        storage: &mut dyn Storage,
        format: sink_coordinator::TableFormatKind,
    ) -> Result<Self, HostError> {
        Ok(TableMapping {
            format,
            map: map_for(storage, format)?,
        })
    }

    /// The table format.
    pub fn format(&self) -> sink_coordinator::TableFormatKind {
        self.format
    }

    /// A coordinator made by `new` from `restore`, in the trace's terms. On Paimon the
    /// restore point's state is mapped to the table's first, the instance is set to the
    /// format with `set_format` (`set-table-format`) and its calls are mapped
    /// ([`MappedCoordinator`]); on the native format it makes no `set-table-format`
    /// call, so components older than 0.2.5 run as before.
    pub fn create<C: CoordinatorApi + 'static>(
        &self,
        restore: Option<RestorePoint>,
        new: impl FnOnce(Option<RestorePoint>) -> Result<C, HostError>,
        set_format: impl FnOnce(&mut C, sink_coordinator::TableFormatKind) -> Result<(), HostError>,
    ) -> Result<Box<dyn CoordinatorApi>, HostError> {
        let Some(map) = &self.map else {
            return Ok(Box::new(new(restore)?));
        };
        let restore = restore.map(|r| RestorePoint {
            state: map.lock().state_to_table(r.state),
            ..r
        });
        let mut c = new(restore)?;
        set_format(&mut c, self.format)?;
        Ok(Box::new(MappedCoordinator::new(Box::new(c), map.clone())))
    }

    /// Snapshots the table's reader gave, in the trace's terms ([`snapshot_from_table`]).
    pub fn snapshots(&self, snapshots: Vec<Snapshot>) -> Result<Vec<Snapshot>, HostError> {
        match &self.map {
            Some(map) => snapshots
                .into_iter()
                .map(|s| snapshot_from_table(map, s))
                .collect(),
            None => Ok(snapshots),
        }
    }

    /// A snapshot the table's reader gave, if any, in the trace's terms.
    pub fn snapshot(&self, s: Option<Snapshot>) -> Result<Option<Snapshot>, HostError> {
        Ok(self.snapshots(s.into_iter().collect())?.pop())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator::MemStorage;

    #[test]
    fn the_synthetic_table() {
        let bytes = synthetic_schema();
        let schema = sink_coordinator_paimon::decode_schema(&bytes).unwrap();
        assert_eq!(schema.id, 0);
        assert!(schema.partition_keys.is_empty());
        assert_eq!(schema.options.get("bucket").map(String::as_str), Some("-1"));
        let mut st = MemStorage::default();
        prepare_table(&mut st).unwrap();
        prepare_table(&mut st).unwrap();
        assert_eq!(st.map.get("schema/schema-0"), Some(&bytes));
    }
}
