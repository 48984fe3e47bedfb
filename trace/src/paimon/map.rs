//! The map between a trace's opaque committables and the synthetic data files that
//! stand for them on a Paimon table, both ways, and the same map applied to what
//! carries committables across the coordinator's boundary: calls, state bytes and
//! snapshots read back.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use sink_coordinator::state_codec::{self, CoordinatorState};
use sink_coordinator::{Call, Committables, Entry, Snapshot, WriterEvent};
use sink_coordinator_paimon::committable::{self, DataFile};

/// Domain tag of the hash that names a synthetic file: a new mapping gets a new tag.
const NAME_DOMAIN: &[u8] = b"sink-coordinator replay committable v1\0";

/// The synthetic committable of `bytes` reported by `subtask`: one data file named
/// `data-<32 hex>-0.parquet` from a SHA-256 of (subtask, bytes), 1 row, `bytes.len()`
/// bytes, schema 0, sequence 0..0, created at 0, unpartitioned, no stats.
///
/// A pure function of (subtask, bytes), not a counter: the same entry sent twice (a
/// retry after a storage error, a restored writer's replay of an entry the coordinator
/// holds, restored state bytes) must reach the coordinator as the same committable, as
/// it would natively.
pub fn synthetic(subtask: u32, bytes: &[u8]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(NAME_DOMAIN);
    h.update(subtask.to_le_bytes());
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
    let digest = h.finalize();
    let name = format!("data-{}-0.parquet", hex::encode(&digest[..16]));
    committable::encode(&DataFile::single_row(name, bytes.len() as u64))
}

/// What stands on the table for a committable of the trace: the data file that a
/// Paimon table is given in its place.
///
/// The replayer's is [`synthetic`] (no file is written: a replay's table is only
/// read back through the coordinator). The simulator's writes a real Parquet file
/// with the records the committable covers, so that Paimon's own readers can read
/// the table it leaves (`sink_coordinator_testkit::sim`).
pub trait DataFiles: Send {
    /// The committable (PCM v1) of the data file standing for `bytes` from
    /// `subtask`. A pure function of both: the same entry sent twice (a retry, a
    /// writer's replay, restored state bytes) must reach the coordinator as the same
    /// committable.
    fn file(&mut self, subtask: u32, bytes: &[u8]) -> Vec<u8>;
}

/// The replayer's [`DataFiles`]: [`synthetic`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Synthetic;

impl DataFiles for Synthetic {
    fn file(&mut self, subtask: u32, bytes: &[u8]) -> Vec<u8> {
        synthetic(subtask, bytes)
    }
}

/// Every committable of the table made so far, with the bytes it stands for, and the
/// coordinator states handed out in the trace's terms, with the table's bytes they
/// came from.
pub struct CommittableMap {
    /// Table committable -> the trace's bytes.
    back: BTreeMap<Vec<u8>, Vec<u8>>,
    /// State bytes in the trace's terms -> the coordinator's own bytes.
    states: BTreeMap<Vec<u8>, Vec<u8>>,
    /// How a trace's committable becomes the table's.
    files: Box<dyn DataFiles>,
}

impl Default for CommittableMap {
    fn default() -> Self {
        CommittableMap::with_files(Box::new(Synthetic))
    }
}

impl std::fmt::Debug for CommittableMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommittableMap")
            .field("committables", &self.back.len())
            .field("states", &self.states.len())
            .finish_non_exhaustive()
    }
}

impl CommittableMap {
    /// A map whose table committables `files` makes ([`Default`]: [`synthetic`]).
    pub fn with_files(files: Box<dyn DataFiles>) -> Self {
        CommittableMap {
            back: BTreeMap::new(),
            states: BTreeMap::new(),
            files,
        }
    }

    /// The table's committable of `bytes` from `subtask`, remembered for the way back.
    pub fn to_table(&mut self, subtask: u32, bytes: &[u8]) -> Vec<u8> {
        let pcm = self.files.file(subtask, bytes);
        // A second insert of one synthetic committable carries the same bytes (short
        // of a SHA-256 collision): the first stays.
        self.back
            .entry(pcm.clone())
            .or_insert_with(|| bytes.to_vec());
        pcm
    }

    /// The trace's bytes a synthetic committable stands for (`None`: not made here).
    pub fn from_table(&self, pcm: &[u8]) -> Option<&[u8]> {
        self.back.get(pcm).map(Vec::as_slice)
    }

    fn committables_to_table(&mut self, subtask: u32, c: &Committables) -> Committables {
        c.iter().map(|b| self.to_table(subtask, b)).collect()
    }

    /// Committables of the table as the trace's, each unknown one kept as it is (a
    /// state's or snapshot's caller decides what an unknown one means).
    fn committables_from_table(&self, c: &Committables) -> (Committables, usize) {
        let mut unknown = 0;
        let out = c
            .iter()
            .map(|b| match self.from_table(b) {
                Some(orig) => orig.to_vec(),
                None => {
                    unknown += 1;
                    b.to_vec()
                }
            })
            .collect();
        (out, unknown)
    }

    fn entry_to_table(&mut self, subtask: u32, e: Entry) -> Entry {
        Entry {
            committables: self.committables_to_table(subtask, &e.committables),
            ..e
        }
    }

    /// A call with every committable it delivers mapped to the table's.
    pub fn call_to_table(&mut self, call: Call) -> Call {
        match call {
            Call::Event {
                subtask,
                attempt,
                entry,
            } => Call::Event {
                subtask,
                attempt,
                entry: self.entry_to_table(subtask, entry),
            },
            Call::Events(events) => Call::Events(
                events
                    .into_iter()
                    .map(|e| WriterEvent {
                        entry: self.entry_to_table(e.subtask, e.entry),
                        ..e
                    })
                    .collect(),
            ),
            Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            } => Call::Restored {
                subtask,
                attempt,
                checkpoint,
                entries: entries
                    .into_iter()
                    .map(|e| self.entry_to_table(subtask, e))
                    .collect(),
            },
            other => other,
        }
    }

    /// A snapshot read back from the table in the trace's terms; `Err` with the count of
    /// committables no mapping made (a file the replay did not commit).
    pub fn snapshot_from_table(&self, s: Snapshot) -> Result<Snapshot, usize> {
        let mut unknown = 0;
        let committables = s
            .committables
            .into_iter()
            .map(|(subtask, b)| match self.from_table(&b) {
                Some(orig) => (subtask, orig.to_vec()),
                None => {
                    unknown += 1;
                    (subtask, b)
                }
            })
            .collect();
        if unknown > 0 {
            return Err(unknown);
        }
        Ok(Snapshot { committables, ..s })
    }

    /// The coordinator's state bytes in the trace's terms: the same state with each
    /// committable the trace's, encoded as the coordinator encodes it, so the bytes
    /// (and their length, which a result shows) are those the native format gives.
    /// Bytes that do not decode, or hold a committable no mapping made, are kept as
    /// they are.
    pub fn state_from_table(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        let Ok(mut state) = state_codec::decode(&bytes) else {
            return bytes;
        };
        let mut unknown = 0;
        for_each_committables(&mut state, |_, c| {
            let (mapped, n) = self.committables_from_table(c);
            unknown += n;
            *c = mapped;
        });
        if unknown > 0 {
            return bytes;
        }
        let mapped = state.encode();
        self.states.insert(mapped.clone(), bytes);
        mapped
    }

    /// State bytes in the trace's terms as the coordinator's: the bytes handed out by
    /// [`Self::state_from_table`] go back exactly; others (a trace's `state_hex`) are
    /// decoded, mapped and encoded again, or kept as they are if they do not decode
    /// (the coordinator then refuses them as it refuses them natively).
    pub fn state_to_table(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        if let Some(own) = self.states.get(&bytes) {
            return own.clone();
        }
        let Ok(mut state) = state_codec::decode(&bytes) else {
            return bytes;
        };
        let mut any = false;
        for_each_committables(&mut state, |subtask, c| {
            any |= !c.is_empty();
            *c = self.committables_to_table(subtask, c);
        });
        if !any {
            // Nothing to map: the bytes as they are (encoding again could change their
            // version, not their meaning).
            return bytes;
        }
        state.encode()
    }
}

/// Calls `f` on every committable list of `state`, with the slot's subtask.
fn for_each_committables(state: &mut CoordinatorState, mut f: impl FnMut(u32, &mut Committables)) {
    for (subtask, slot) in &mut state.slots {
        f(*subtask, &mut slot.end.committables);
        for (_, e) in &mut slot.entries {
            f(*subtask, &mut e.committables);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator_paimon::{decode_schema, TableSchema};

    fn schema() -> TableSchema {
        decode_schema(&super::super::synthetic_schema()).unwrap()
    }

    #[test]
    fn synthetic_committables_fit_the_table_and_are_pure() {
        let a = synthetic(0, b"v1");
        assert_eq!(a, synthetic(0, b"v1"));
        assert_ne!(a, synthetic(1, b"v1"));
        assert_ne!(a, synthetic(0, b"v2"));
        let f = committable::decode(&a, &schema()).unwrap();
        assert!(f.file_name.starts_with("data-") && f.file_name.ends_with("-0.parquet"));
        assert_eq!(f.file_name.len(), "data-".len() + 32 + "-0.parquet".len());
        assert_eq!((f.file_size, f.row_count), (2, 1));
        // Any bytes, even empty ones.
        committable::decode(&synthetic(u32::MAX, b""), &schema()).unwrap();
    }

    #[test]
    fn calls_and_snapshots_map_both_ways() {
        let mut m = CommittableMap::default();
        let entry = |c: &[&[u8]]| Entry {
            checkpoint: 3,
            committables: c.iter().copied().collect(),
            watermark: Some(1),
            savepoint: false,
        };
        let call = m.call_to_table(Call::Restored {
            subtask: 2,
            attempt: 1,
            checkpoint: 2,
            entries: vec![entry(&[b"a", b"b"]), entry(&[])],
        });
        let Call::Restored { entries, .. } = call else {
            panic!("{call:?}")
        };
        let pcm: Vec<Vec<u8>> = entries[0].committables.to_vecs();
        assert_eq!(pcm, vec![synthetic(2, b"a"), synthetic(2, b"b")]);
        let s = Snapshot {
            id: 1,
            commit_user: "u".into(),
            identifier: 3,
            watermark: None,
            time_ms: 0,
            committables: vec![(2, pcm[1].clone()), (2, pcm[0].clone())],
        };
        let back = m.snapshot_from_table(s.clone()).unwrap();
        assert_eq!(
            back.committables,
            vec![(2, b"b".to_vec()), (2, b"a".to_vec())]
        );
        let foreign = Snapshot {
            committables: vec![(0, synthetic(9, b"never sent"))],
            ..s
        };
        assert_eq!(m.snapshot_from_table(foreign), Err(1));
    }

    #[test]
    fn state_bytes_map_both_ways_exactly() {
        use sink_coordinator::slots::{EndEntry, SlotEntry};
        let slot_entry = |c: &[&[u8]]| SlotEntry {
            committables: c.iter().copied().collect(),
            watermark: Some(-4),
            savepoint: true,
        };
        let end = |c: &[&[u8]]| EndEntry {
            committables: c.iter().copied().collect(),
            watermark: None,
            synthesized: false,
            taken: 5,
        };
        let native = CoordinatorState {
            commit_user: "job".into(),
            parallelism: 3,
            slots: vec![
                (
                    0,
                    state_codec::EndedSlot {
                        end: end(&[b"e0"]),
                        entries: vec![(4, slot_entry(&[b"x", b"yy"]))],
                    },
                ),
                (
                    2,
                    state_codec::EndedSlot {
                        end: end(&[]),
                        entries: vec![],
                    },
                ),
            ],
            owed: vec![(4, true)],
            aborted: vec![6],
        };
        let native_bytes = native.encode();
        let mut m = CommittableMap::default();
        let table_bytes = m.state_to_table(native_bytes.clone());
        assert_ne!(table_bytes, native_bytes);
        let table_state = state_codec::decode(&table_bytes).unwrap();
        assert_eq!(
            table_state.slots[0].1.entries[0].1.committables.to_vecs(),
            vec![synthetic(0, b"x"), synthetic(0, b"yy")]
        );
        // Back in the trace's terms: the native bytes exactly, and forward again the
        // coordinator's own bytes exactly.
        assert_eq!(m.state_from_table(table_bytes.clone()), native_bytes);
        assert_eq!(m.state_to_table(native_bytes.clone()), table_bytes);
        // Bytes that do not decode, or hold nothing to map, are kept as they are.
        assert_eq!(m.state_to_table(b"\xde\xad".to_vec()), b"\xde\xad");
        let empty = CoordinatorState {
            slots: vec![],
            ..native
        }
        .encode();
        assert_eq!(m.state_to_table(empty.clone()), empty);
    }
}
