//! The simulator on an Apache Paimon table (`SimOptions::table_format`,
//! `sinkcoord simulate --table-format paimon`).
//!
//! The jobs stay as they are: writers name their committables (`a-s3-c17-a2-k0`) and
//! the ledger tracks those names. Between the simulator and every coordinator stands
//! the replayer's committable map ([`MappedCoordinator`]): each name becomes the
//! committable of a real data file on the way in, and the snapshots and state bytes
//! come back in names. The file is written when the name first reaches a coordinator,
//! as a writer would have written it before reporting it: a Parquet file of the
//! records the committable covers, one row `(job, subtask, record)` each, under
//! `bucket-0/` of the table (and of the native twin's), with faults suspended (the
//! writers' files are not under test). So Paimon's own readers read the table the run
//! leaves: `tests/paimon/read_sim_table.py` checks every record once against
//! `expected_rows`.
//!
//! What differs from the native format:
//! - the table is read back through the core's Paimon reader (snapshots, marks, tags),
//!   not by an independent decoder: the independent readers of this format are
//!   Paimon's own (pypaimon, the Java reader, the `paimon` crate), run on tables the
//!   simulator wrote;
//! - storage faults and crashes hit the calls that have a native twin (TRACE-FORMAT's
//!   commit points: snapshot, tag and hint calls; [`FaultScope::PaimonCommitPoints`]),
//!   so that the recorded trace replays with `--table-format paimon`; a manifest put
//!   is never failed on its own;
//! - no guest traps: a trap can stop a call at a manifest put, which no recorded
//!   `storage_fault` can stand for.

use std::collections::BTreeMap;

use sink_coordinator::table::{AnyFormat, TableFormat, TableFormatKind};
use sink_coordinator::{CoordinatorApi, RestorePoint, Shared, Snapshot, Storage};
use sink_coordinator_paimon::schema::{encode_schema, schema_key, CreateTable};
use sink_coordinator_paimon::snapshot::LATEST_KEY;
use sink_coordinator_paimon::{decode_schema, Datum, TableSchema};
use sink_coordinator_paimon_writer::DataFileWriter;
use sink_coordinator_trace::faults::FaultScope;
use sink_coordinator_trace::paimon::{keys, CommittableMap, DataFiles, MappedCoordinator};

use super::backend::{with_table, SharedStorage, Tables};
use super::rawtable::{RawSnapshot, RawTag};

/// The columns of the simulator's Paimon table: a record's id, who wrote it, and
/// which of the writer's records it is. The id ([`record_id`]) is what the readers
/// that read an `id` column compare (tests/paimon: Paimon's Java reader, the
/// `paimon` crate's).
pub const SIM_COLUMNS: [(&str, &str); 4] = [
    ("id", "BIGINT"),
    ("job", "STRING"),
    ("subtask", "INT"),
    ("record", "BIGINT"),
];

/// The id of `job`'s writer `subtask`'s `record`: the job (`a` 0, `b` 1) in the top
/// byte, the subtask (below 4,096) above the low 32 bits, the record in them.
pub fn record_id(job: &str, subtask: u32, record: u64) -> Option<i64> {
    let job = match job {
        "a" => 0i64,
        "b" => 1,
        _ => return None,
    };
    let record = i64::try_from(record).ok().filter(|r| *r < 1 << 32)?;
    Some(job << 56 | i64::from(subtask) << 32 | record)
}

/// The records a committable covers: `[lo, hi)` of `job`'s writer `subtask`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Covered {
    job: &'static str,
    subtask: u32,
    lo: u64,
    hi: u64,
}

/// What a run on Paimon adds to the world: the map every coordinator's calls go
/// through, and what each committable name covers.
pub(crate) struct PaimonSide {
    pub map: Shared<CommittableMap>,
    covered: Shared<BTreeMap<String, Covered>>,
}

/// The simulator's [`DataFiles`]: a Parquet file per committable, written into every
/// table of the run.
struct SimFiles {
    schema: TableSchema,
    tables: Vec<SharedStorage>,
    covered: Shared<BTreeMap<String, Covered>>,
    /// Committables of the files written so far, by name: a component instance and
    /// its native twin send every name, and a retry sends it again.
    written: BTreeMap<String, Vec<u8>>,
}

impl DataFiles for SimFiles {
    fn file(&mut self, subtask: u32, bytes: &[u8]) -> Vec<u8> {
        let name = String::from_utf8_lossy(bytes);
        if let Some(c) = self.written.get(name.as_ref()) {
            return c.clone();
        }
        let covered = self.covered.lock().get(name.as_ref()).cloned();
        // Only the ledger's names reach a coordinator; anything else (none is
        // known) still gets a committable the table takes.
        let Some(c) = covered else {
            return sink_coordinator_trace::paimon::synthetic(subtask, bytes);
        };
        match self.write(&name, &c) {
            Some(committable) => {
                self.written.insert(name.into_owned(), committable.clone());
                committable
            }
            None => sink_coordinator_trace::paimon::synthetic(subtask, bytes),
        }
    }
}

impl SimFiles {
    /// Writes the file of `name` into every table; its committable. `None` only if
    /// the writer refuses a row, which the fixed schema rules out.
    fn write(&self, name: &str, c: &Covered) -> Option<Vec<u8>> {
        let file_name = format!("data-{name}.parquet");
        let first = i64::try_from(c.lo).ok()?;
        let mut w = DataFileWriter::new(&self.schema, &file_name, Vec::new(), first, 0).ok()?;
        for r in c.lo..c.hi {
            let row = [
                Datum::Long(record_id(c.job, c.subtask, r)?),
                Datum::Str(c.job.to_string()),
                Datum::Int(i32::try_from(c.subtask).ok()?),
                Datum::Long(i64::try_from(r).ok()?),
            ];
            w.write_row(&row).ok()?;
        }
        let f = w.finish().ok()?;
        for t in &self.tables {
            // A failure of the storage itself is noted by `Watched` and ends the run
            // as a storage failure.
            let _ = with_table(t, |st| st.put(&f.key, &f.bytes));
        }
        Some(f.committable())
    }
}

/// `schema/schema-0` of the simulator's table: [`SIM_COLUMNS`], unpartitioned,
/// unaware buckets.
pub fn sim_schema() -> Vec<u8> {
    let t = CreateTable {
        columns: &SIM_COLUMNS,
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    // A constant, valid schema: its encoding cannot fail (the unit test below).
    encode_schema(&t, 0).unwrap_or_default()
}

impl PaimonSide {
    /// Makes the run's tables Paimon tables (the schema, and the fault scope of the
    /// commit points).
    pub(crate) fn open(tables: &Tables) -> Result<Self, String> {
        let bytes = sim_schema();
        let schema = decode_schema(&bytes).map_err(|e| format!("the simulator's schema: {e:?}"))?;
        let mut all = vec![tables.real.inner.clone()];
        all.extend(tables.twin.iter().map(|t| t.inner.clone()));
        for t in &all {
            with_table(t, |st| st.put_if_absent(&schema_key(0), &bytes))
                .map_err(|e| format!("cannot create the Paimon table's schema: {e}"))?;
            t.lock().set_scope(FaultScope::PaimonCommitPoints);
        }
        for probe in std::iter::once(&tables.real.probe).chain(tables.twin.iter().map(|t| &t.probe))
        {
            probe.lock().scope = FaultScope::PaimonCommitPoints;
        }
        let covered = Shared::new(BTreeMap::new());
        let files = SimFiles {
            schema,
            tables: all,
            covered: covered.clone(),
            written: BTreeMap::new(),
        };
        Ok(PaimonSide {
            map: Shared::new(CommittableMap::with_files(Box::new(files))),
            covered,
        })
    }

    /// Says which records the committable `name` covers (before any coordinator
    /// sees it).
    pub(crate) fn register(&self, name: &str, job: &'static str, subtask: u32, lo: u64, hi: u64) {
        self.covered.lock().insert(
            name.to_string(),
            Covered {
                job,
                subtask,
                lo,
                hi,
            },
        );
    }

    /// A restore point in the table's terms.
    pub(crate) fn restore_to_table(&self, restore: Option<RestorePoint>) -> Option<RestorePoint> {
        restore.map(|r| RestorePoint {
            state: self.map.lock().state_to_table(r.state),
            ..r
        })
    }

    /// `inner`'s calls through the map.
    pub(crate) fn mapped(&self, inner: Box<dyn CoordinatorApi>) -> MappedCoordinator {
        MappedCoordinator::new(inner, self.map.clone())
    }

    /// The snapshot ids the table lists, checked dense from 1 (the hints aside).
    pub(crate) fn list_snapshot_ids(st: &mut dyn Storage) -> Result<Vec<u64>, String> {
        let listed = st
            .list(keys::SNAPSHOT_DIR)
            .map_err(|e| format!("cannot list {}: {e}", keys::SNAPSHOT_DIR))?;
        let mut ids = Vec::with_capacity(listed.len());
        for key in &listed {
            match keys::snapshot_id(key) {
                Some(id) => ids.push(id),
                None if key == LATEST_KEY
                    || key == sink_coordinator_paimon::snapshot::EARLIEST_KEY => {}
                None => return Err(format!("the table holds {key:?}, which is no snapshot key")),
            }
        }
        ids.sort_unstable();
        for (i, id) in ids.iter().enumerate() {
            if *id != i as u64 + 1 {
                return Err(format!(
                    "snapshot ids are not dense: snapshot {} is missing, snapshot {id} exists",
                    i + 1
                ));
            }
        }
        Ok(ids)
    }

    /// Snapshot `id` as the core's Paimon reader reads it, in committable names.
    pub(crate) fn read_snapshot(
        &self,
        st: &mut dyn Storage,
        id: u64,
    ) -> Result<RawSnapshot, String> {
        let mut f = AnyFormat::of(TableFormatKind::Paimon).map_err(|e| e.to_string())?;
        let stored = f
            .read_snapshot(st, id)
            .map_err(|e| format!("cannot read snapshot {id}: {e}"))?
            .ok_or_else(|| format!("snapshot {id} is listed but cannot be read"))?;
        let full = f
            .read_back(st, id)
            .map_err(|e| format!("cannot read snapshot {id}'s files: {e}"))?
            .ok_or_else(|| format!("snapshot {id} is listed but cannot be read back"))?;
        let Snapshot { committables, .. } = self
            .map
            .lock()
            .snapshot_from_table(full)
            .map_err(|n| format!("snapshot {id} holds {n} data file(s) no writer reported"))?;
        let key = sink_coordinator_paimon::snapshot::snapshot_key(id as i64);
        let bytes = st
            .get(&key)
            .map_err(|e| format!("cannot read {key}: {e}"))?
            .unwrap_or_default();
        let mark = |m: sink_coordinator::table::UserMark| (m.identifier, m.snapshot_id);
        let s = stored.snapshot;
        Ok(RawSnapshot {
            id: s.id,
            commit_user: s.commit_user,
            identifier: s.identifier,
            watermark: s.watermark,
            time_ms: s.time_ms,
            committables,
            previous_of_user: stored.previous_of_user.map(mark),
            users: stored
                .users
                .into_iter()
                .map(|(u, m)| (u, mark(m)))
                .collect(),
            bytes,
        })
    }

    /// Every tag, by name in byte order, as the core's Paimon reader reads it.
    pub(crate) fn read_tags(st: &mut dyn Storage) -> Result<Vec<RawTag>, String> {
        let mut f = AnyFormat::of(TableFormatKind::Paimon).map_err(|e| e.to_string())?;
        let tags = f
            .list_tags(st)
            .map_err(|e| format!("cannot list the tags: {e}"))?;
        let mut out = Vec::with_capacity(tags.len());
        for t in tags {
            let stored = f
                .read_tag(st, &t.name)
                .map_err(|e| format!("cannot read tag {}: {e}", t.name))?
                .ok_or_else(|| format!("tag {} is listed but cannot be read", t.name))?;
            out.push(RawTag {
                name: t.name,
                snapshot_id: t.snapshot_id,
                identifier: t.identifier,
                commit_user: stored.commit_user,
                create_time_ms: t.create_time_ms,
                expire_time_ms: t.expire_time_ms,
            });
        }
        out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(out)
    }

    /// The records of the table as of snapshot `upto` (every snapshot up to it), per
    /// `job:subtask`: what a reader of the table must find, each record once.
    pub(crate) fn rows_as_of(
        &self,
        log: &[RawSnapshot],
        upto: u64,
    ) -> BTreeMap<String, Vec<(u64, u64)>> {
        let covered = self.covered.lock();
        let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
        for s in log.iter().filter(|s| s.id <= upto) {
            for (_, name) in &s.committables {
                if let Some(c) = covered.get(String::from_utf8_lossy(name).as_ref()) {
                    if c.lo < c.hi {
                        out.entry(format!("{}:{}", c.job, c.subtask))
                            .or_default()
                            .push((c.lo, c.hi));
                    }
                }
            }
        }
        for ranges in out.values_mut() {
            ranges.sort_unstable();
        }
        out
    }
}

/// What readers of a simulated Paimon table must find (`--paimon-expect FILE`,
/// read by `tests/paimon/read_sim_table.py`): the records of the latest snapshot and
/// of each tag, per `job:subtask` as sorted `[lo, hi)` ranges, every record once.
pub(crate) fn expected_rows(
    side: &PaimonSide,
    log: &[RawSnapshot],
    tags: &[RawTag],
) -> serde_json::Value {
    let latest = log.last().map_or(0, |s| s.id);
    let rows: serde_json::Map<String, serde_json::Value> = tags
        .iter()
        .map(|t| {
            let rows = side.rows_as_of(log, t.snapshot_id);
            (t.name.clone(), serde_json::json!(rows))
        })
        .collect();
    // Paimon's own tag times (`tagCreateTime`, `tagTimeRetained`), which its tag
    // expiration reads.
    let times: serde_json::Map<String, serde_json::Value> = tags
        .iter()
        .map(|t| {
            let retained = t.expire_time_ms.map(|x| x.saturating_sub(t.create_time_ms));
            let times =
                serde_json::json!({ "created_ms": t.create_time_ms, "retained_ms": retained });
            (t.name.clone(), times)
        })
        .collect();
    serde_json::json!({
        "latest_snapshot": latest,
        "rows": side.rows_as_of(log, latest),
        "tags": rows,
        "tag_times": times,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_are_distinct_per_job_subtask_and_record() {
        assert_eq!(record_id("a", 0, 0), Some(0));
        assert_eq!(record_id("a", 3, 7), Some(3 << 32 | 7));
        assert_eq!(record_id("b", 0, 1), Some(1 << 56 | 1));
        assert_eq!(record_id("c", 0, 0), None);
        assert_eq!(record_id("a", 0, 1 << 32), None);
    }

    #[test]
    fn the_schema_decodes() {
        let s = decode_schema(&sim_schema()).unwrap();
        assert_eq!(s.id, 0);
        assert_eq!(s.fields.len(), 4);
        assert_eq!(s.options.get("bucket").map(String::as_str), Some("-1"));
    }
}
