//! The writer-side helper (SEMANTICS 11): what a writer keeps in its own
//! checkpointed state so that the coordinator's guarantees hold, and which
//! event it sends. Every engine gets this half right the same way.
//!
//! State bytes, version 1: `{last, entries: [entry], end: option<entry>}`,
//! with the same bad-input rules as the coordinator state (SEMANTICS 7).

use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::committables::Committables;
use crate::error::{Defect, Error, ErrorReason, Result};
use crate::types::{Entry, END, MAX_CHECKPOINT};
use crate::wire::{self, Seq};

/// The format version of the writer state bytes.
pub const WRITER_STATE_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Buffered {
    committables: Committables,
    watermark: Option<i64>,
    savepoint: bool,
}

/// One writer subtask's side of the protocol (SEMANTICS 11).
#[derive(Clone, Debug, Default)]
pub struct Writer {
    subtask: u32,
    /// Highest ordinary checkpoint reported (or restored from).
    last: Option<u64>,
    /// Buffered ordinary entries, ascending by checkpoint (each `report`
    /// appends a higher one): a `Vec`, not a `BTreeMap`, which would add a
    /// B-tree instantiation (about 3 KB) to the component (issue 10).
    entries: Vec<(u64, Buffered)>,
    end: Option<Buffered>,
    /// Highest committed-up-to seen in this attempt (not part of the state bytes).
    committed: Option<u64>,
    /// Anything happened since construction: `restore` needs a fresh writer.
    used: bool,
}

/// An entry as the state bytes hold it, decoded (committables packed in
/// one buffer each, see `committables`).
#[derive(Deserialize)]
struct EntryIn {
    checkpoint: u64,
    committables: Committables,
    watermark: Option<i64>,
    savepoint: bool,
}

/// As `EntryIn`, encoded from the buffer's own values.
#[derive(Serialize)]
struct EntryOut<'a> {
    checkpoint: u64,
    committables: &'a Committables,
    watermark: Option<i64>,
    savepoint: bool,
}

#[derive(Deserialize)]
struct WriterIn {
    last: Option<u64>,
    entries: Seq<EntryIn>,
    end: Option<EntryIn>,
}

/// As `WriterIn` (same fields, same bytes).
#[derive(Serialize)]
struct WriterOut<'a> {
    last: Option<u64>,
    entries: Seq<EntryOut<'a>>,
    end: Option<EntryOut<'a>>,
}

impl Writer {
    /// A fresh writer for subtask `subtask`.
    pub fn new(subtask: u32) -> Self {
        Writer {
            subtask,
            ..Default::default()
        }
    }

    /// Its subtask.
    pub fn subtask(&self) -> u32 {
        self.subtask
    }

    fn entry(c: u64, b: &Buffered) -> Entry {
        Entry {
            checkpoint: c,
            committables: b.committables.clone(),
            watermark: b.watermark,
            savepoint: b.savepoint,
        }
    }

    /// Buffers the entry for checkpoint `c` (strictly increasing, called for
    /// every checkpoint, empty or not) and returns the event to send.
    pub fn report(
        &mut self,
        c: u64,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        savepoint: bool,
    ) -> Result<Entry> {
        let s = self.subtask;
        if c == END {
            return Err(ErrorReason::WriterReportForEnd { subtask: s }.into());
        }
        if c > MAX_CHECKPOINT {
            return Err(ErrorReason::WriterReportOutOfRange {
                subtask: s,
                checkpoint: c,
            }
            .into());
        }
        if let Some(last) = self.last.filter(|l| c <= *l) {
            return Err(ErrorReason::WriterCheckpointsMustIncrease {
                subtask: s,
                checkpoint: c,
                after: last,
            }
            .into());
        }
        self.used = true;
        let b = Buffered {
            committables: Committables::from(committables),
            watermark,
            savepoint,
        };
        let event = Self::entry(c, &b);
        // c > last >= every buffered checkpoint: the order is kept.
        self.entries.push((c, b));
        self.last = Some(c);
        Ok(event)
    }

    /// The END entry to send. An existing END entry (restored, or from an
    /// earlier call) gets the new committables appended and the new
    /// watermark, and the combined entry is sent: it is authoritative
    /// (SEMANTICS 11).
    pub fn end_input(
        &mut self,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
    ) -> Result<Entry> {
        self.used = true;
        let end = match self.end.take() {
            Some(mut restored) => {
                let mut all = restored.committables.to_vecs();
                all.extend(committables);
                restored.committables = Committables::from(all);
                restored.watermark = watermark;
                restored
            }
            None => Buffered {
                committables: Committables::from(committables),
                watermark,
                savepoint: false,
            },
        };
        let event = Self::entry(END, &end);
        self.end = Some(end);
        Ok(event)
    }

    /// The coordinator's committed-up-to `u`, forwarded by the host
    /// (SEMANTICS 5.5, 11): drops buffered ordinary entries `<= u`, and the
    /// END entry at `u = END`. The only call that drops entries. A `u` below
    /// the highest one seen changes nothing (stale notifications arrive late).
    pub fn committed(&mut self, u: u64) -> Result<()> {
        if u > END {
            return Err(ErrorReason::WriterCommittedNotACheckpoint {
                subtask: self.subtask,
                up_to: u,
            }
            .into());
        }
        self.used = true;
        if self.committed.is_some_and(|h| u < h) {
            return Ok(());
        }
        self.committed = Some(u);
        if u == END {
            self.entries.clear();
            self.end = None;
        } else {
            let covered = self.entries.partition_point(|(c, _)| *c <= u);
            self.entries.drain(..covered);
        }
        Ok(())
    }

    /// Clears the savepoint flag of entry `c`, keeping its committables, so a
    /// later checkpoint never persists a stale savepoint intent.
    pub fn checkpoint_aborted(&mut self, c: u64) -> Result<()> {
        self.used = true;
        if let Ok(at) = self.entries.binary_search_by_key(&c, |(k, _)| *k) {
            if let Some((_, b)) = self.entries.get_mut(at) {
                b.savepoint = false;
            }
        }
        Ok(())
    }

    /// The buffer as versioned bytes.
    pub fn state(&self) -> Vec<u8> {
        fn wire(c: u64, b: &Buffered) -> EntryOut<'_> {
            EntryOut {
                checkpoint: c,
                committables: &b.committables,
                watermark: b.watermark,
                savepoint: b.savepoint,
            }
        }
        let v1 = WriterOut {
            last: self.last,
            entries: Seq(self.entries.iter().map(|(c, b)| wire(*c, b)).collect()),
            end: self.end.as_ref().map(|b| wire(END, b)),
        };
        wire::encode(WRITER_STATE_VERSION, &v1)
    }

    /// Restores a fresh writer from state taken at checkpoint `r`; returns the
    /// entries of the single `restored(s, r, entries)` event to send. Every
    /// restored entry stays buffered until `committed(u)` covers it
    /// (SEMANTICS 11): the coordinator may not have committed them yet, and a
    /// global failover from a later checkpoint must still replay them.
    pub fn restore(&mut self, bytes: &[u8], r: u64) -> Result<Vec<Entry>> {
        let s = self.subtask;
        if self.used {
            return Err(ErrorReason::WriterNotFresh { subtask: s }.into());
        }
        if r > MAX_CHECKPOINT {
            return Err(ErrorReason::WriterRestoreOutOfRange {
                subtask: s,
                checkpoint: r,
            }
            .into());
        }
        let corrupt = |defect: Defect| -> Error {
            ErrorReason::WriterState {
                subtask: s,
                checkpoint: r,
                bytes: bytes.len(),
                defect,
            }
            .into()
        };
        let (version, rest) = wire::version(bytes).map_err(|e| corrupt(e.into()))?;
        if version != WRITER_STATE_VERSION {
            return Err(corrupt(wire::DecodeError::UnknownVersion(version).into()));
        }
        let v1: WriterIn = wire::body(rest).map_err(|e| corrupt(e.into()))?;
        let mut events = Vec::with_capacity(v1.entries.0.len() + 1);
        let mut kept = Vec::with_capacity(v1.entries.0.len());
        let mut prev: Option<u64> = None;
        for e in v1.entries.0 {
            if e.checkpoint > r {
                return Err(corrupt(Defect::EntryAfterRestored {
                    checkpoint: e.checkpoint,
                }));
            }
            if prev.is_some_and(|p| e.checkpoint <= p) {
                return Err(corrupt(Defect::EntriesOutOfOrder {
                    checkpoint: e.checkpoint,
                }));
            }
            prev = Some(e.checkpoint);
            let b = Buffered {
                committables: e.committables,
                watermark: e.watermark,
                savepoint: e.savepoint,
            };
            events.push(Self::entry(e.checkpoint, &b));
            // Ascending: checked above.
            kept.push((e.checkpoint, b));
        }
        if v1.last.is_some_and(|l| l > MAX_CHECKPOINT) || (prev.is_some() && v1.last < prev) {
            return Err(corrupt(Defect::LastOutOfRange));
        }
        let end = match v1.end {
            Some(e) if e.checkpoint != END => return Err(corrupt(Defect::EndWithOrdinaryId)),
            Some(e) => {
                let b = Buffered {
                    committables: e.committables,
                    watermark: e.watermark,
                    savepoint: false,
                };
                events.push(Self::entry(END, &b));
                Some(b)
            }
            None => None,
        };
        self.used = true;
        self.entries = kept;
        self.end = end;
        self.last = Some(r);
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn b(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    /// Byte-identity of the encoder with the 0.1.0 component's: every golden
    /// writer state (committables then encoded as `u8` sequences) decodes and
    /// re-encodes to exactly its bytes.
    #[test]
    fn golden_states_re_encode_identically() {
        let golden = golden_states![
            "writer":
            "after_complete_dropped",
            "complete_all_keeps_end",
            "empty_committables",
            "end_only",
            "end_watermark_max",
            "entries_and_end",
            "entries_plain",
            "entries_savepoints",
            "fresh",
            "highest_checkpoint_ids",
            "large_committable",
            "restored_end_then_more",
            "restored_then_reports",
            "watermark_extremes",
        ];
        for bytes in golden {
            let (version, rest) = wire::version(bytes).unwrap();
            assert_eq!(version, WRITER_STATE_VERSION);
            let v1: WriterIn = wire::body(rest).unwrap();
            fn out(e: &EntryIn) -> EntryOut<'_> {
                EntryOut {
                    checkpoint: e.checkpoint,
                    committables: &e.committables,
                    watermark: e.watermark,
                    savepoint: e.savepoint,
                }
            }
            let again = WriterOut {
                last: v1.last,
                entries: Seq(v1.entries.0.iter().map(out).collect()),
                end: v1.end.as_ref().map(out),
            };
            assert_eq!(wire::encode(version, &again), bytes);
        }
    }

    #[test]
    fn report_must_increase() {
        let mut w = Writer::new(0);
        w.report(1, vec![b("a")], Some(5), false).unwrap();
        assert!(w.report(1, vec![], None, false).is_err());
        assert!(w.report(END, vec![], None, false).is_err());
        assert_eq!(w.report(2, vec![], None, true).unwrap().checkpoint, 2);
    }

    /// Issue 11: the message says what happened, naming the subtask.
    #[test]
    fn report_of_end_or_beyond_says_why() {
        let mut w = Writer::new(4);
        let e = w.report(END, vec![], None, false).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::InvalidEvent);
        assert_eq!(
            e.reason(),
            &crate::ErrorReason::WriterReportForEnd { subtask: 4 }
        );
        assert_eq!(
            e.message(),
            "writer 4: report for checkpoint id 9223372036854775807: that id is reserved for END (end of input), whose entry end-input sends"
        );
        let e = w.report(u64::MAX, vec![], None, false).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::InvalidEvent);
        assert_eq!(
            e.reason(),
            &crate::ErrorReason::WriterReportOutOfRange {
                subtask: 4,
                checkpoint: u64::MAX
            }
        );
        assert_eq!(
            e.message(),
            "writer 4: report for checkpoint id 18446744073709551615: out of range (ordinary checkpoint ids are 0..=9223372036854775806)"
        );
        // Nothing was buffered: the writer still takes checkpoint 1.
        w.report(1, vec![], None, false).unwrap();
    }

    #[test]
    fn committed_drops_up_to_and_keeps_end() {
        let mut w = Writer::new(3);
        w.report(1, vec![b("a")], None, false).unwrap();
        w.report(2, vec![b("b")], None, false).unwrap();
        w.end_input(vec![b("e")], Some(9)).unwrap();
        w.committed(1).unwrap();
        let mut fresh = Writer::new(3);
        let events = fresh.restore(&w.state(), 2).unwrap();
        assert_eq!(
            events.iter().map(|e| e.checkpoint).collect::<Vec<_>>(),
            vec![2, END]
        );
        // A restored writer keeps its replayed entries (SEMANTICS 11, 12.1).
        let again = Writer::new(3).restore(&fresh.state(), 2).unwrap();
        assert_eq!(again, events);
        // Only committed(END) drops the END entry.
        fresh.committed(2).unwrap();
        assert_eq!(Writer::new(3).restore(&fresh.state(), 2).unwrap().len(), 1);
        fresh.committed(END).unwrap();
        assert!(Writer::new(3)
            .restore(&fresh.state(), 2)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn lower_committed_changes_nothing() {
        let mut w = Writer::new(0);
        w.committed(10).unwrap();
        // An entry reported at or below the remembered u stays buffered ...
        w.report(8, vec![], None, true).unwrap();
        w.committed(5).unwrap();
        w.report(12, vec![b("x")], None, false).unwrap();
        assert_eq!(Writer::new(0).restore(&w.state(), 12).unwrap().len(), 2);
        // ... until a later call covers it.
        w.committed(10).unwrap();
        assert_eq!(Writer::new(0).restore(&w.state(), 12).unwrap().len(), 1);
        assert!(w.committed(END + 1).is_err());
    }

    #[test]
    fn end_input_appends_to_restored_end() {
        let mut w = Writer::new(0);
        w.end_input(vec![b("v1")], Some(1)).unwrap();
        let again = w.end_input(vec![b("v0")], None).unwrap();
        assert_eq!(again.committables, vec![b("v1"), b("v0")]);
        w.end_input(vec![], Some(1)).unwrap();
        let mut r = Writer::new(0);
        r.restore(&w.state(), 4).unwrap();
        let e = r.end_input(vec![b("v2")], Some(2)).unwrap();
        assert_eq!(e.committables, vec![b("v1"), b("v0"), b("v2")]);
        assert_eq!(e.watermark, Some(2));
        assert!(!e.savepoint);
    }

    #[test]
    fn abort_clears_flag_keeps_data() {
        let mut w = Writer::new(0);
        w.report(5, vec![b("x")], None, true).unwrap();
        w.checkpoint_aborted(5).unwrap();
        let events = Writer::new(0).restore(&w.state(), 5).unwrap();
        assert_eq!(events[0].committables, vec![b("x")]);
        assert!(!events[0].savepoint);
    }

    #[test]
    fn bad_state_is_typed() {
        let mut w = Writer::new(0);
        w.report(5, vec![b("x")], None, false).unwrap();
        let good = w.state();
        for cut in 0..good.len() {
            let e = Writer::new(0).restore(&good[..cut], 5).unwrap_err();
            assert_eq!(e.kind, crate::ErrorKind::CorruptState);
        }
        let mut trailing = good.clone();
        trailing.push(1);
        assert!(Writer::new(0).restore(&trailing, 5).is_err());
        let mut version = good.clone();
        version[0] = 2;
        assert_eq!(
            Writer::new(0).restore(&version, 5).unwrap_err().reason(),
            &crate::ErrorReason::WriterState {
                subtask: 0,
                checkpoint: 5,
                bytes: version.len(),
                defect: crate::error::Defect::Decode(wire::DecodeError::UnknownVersion(2)),
            }
        );
        // Out of range: an entry newer than the restored checkpoint.
        assert!(matches!(
            Writer::new(0).restore(&good, 4).unwrap_err().reason(),
            crate::ErrorReason::WriterState {
                defect: crate::error::Defect::EntryAfterRestored { checkpoint: 5 },
                ..
            }
        ));
        // Restore needs a fresh writer.
        let e = w.restore(&good, 5).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::IllegalState);
        assert_eq!(
            e.reason(),
            &crate::ErrorReason::WriterNotFresh { subtask: 0 }
        );
    }
}
