//! One job on a Paimon table through the core's Coordinator: two writers, streaming
//! checkpoints, a savepoint (auto-tagged), storage faults in a commit (a failed manifest
//! put, then a snapshot create that lands although it reports an error), a global
//! failover restored from a checkpoint whose entries were not committed yet, and END.
//!
//! Shared by `guest/tests/paimon_coordinator.rs` (a `MemStorage`) and the directory
//! driver `paimon/examples/coordinator-job.rs` (which pypaimon then reads): both
//! include this file with `#[path]`.

use sink_coordinator::table::TableFormatKind;
use sink_coordinator::{
    Config, Coordinator, Entry, ErrorKind, Lifecycle, OwnedEnv, RecoveryMode, RestorePoint,
    StepClock, Storage, StorageError, END,
};

/// A storage with armed faults and counted calls.
pub struct Faulty<S: Storage> {
    pub inner: S,
    /// Fail the next `put` (nothing written).
    pub fail_put: bool,
    /// Fail the next `put_if_absent` after applying it (an ambiguous create).
    pub land_and_fail_create: bool,
    pub calls: u64,
}

/// The faulty storage beside the job's clock (one second a reading).
pub type Job<S> = OwnedEnv<Faulty<S>, StepClock>;

/// `inner` with no fault armed, and the clock.
pub fn job_env<S: Storage>(inner: S) -> Job<S> {
    OwnedEnv::new(Faulty::new(inner), StepClock::new(1_700_000_001_000, 1000))
}

impl<S: Storage> Faulty<S> {
    pub fn new(inner: S) -> Self {
        Faulty {
            inner,
            fail_put: false,
            land_and_fail_create: false,
            calls: 0,
        }
    }
}

impl<S: Storage> Storage for Faulty<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.calls += 1;
        self.inner.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.calls += 1;
        if std::mem::take(&mut self.land_and_fail_create) {
            self.inner.put_if_absent(key, value)?;
            return Err(StorageError::Io(
                "injected: create landed, reply lost".into(),
            ));
        }
        self.inner.put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.calls += 1;
        if std::mem::take(&mut self.fail_put) {
            return Err(StorageError::Io("injected: put failed".into()));
        }
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.calls += 1;
        self.inner.delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.calls += 1;
        self.inner.list(prefix)
    }
}

/// What the job did.
#[derive(Debug, Default)]
pub struct Report {
    /// Snapshot identifiers committed, in order.
    pub committed: Vec<u64>,
    pub tags: Vec<String>,
    /// Storage calls of each `checkpoint-complete` that committed without faults.
    pub calls_per_commit: Vec<u64>,
    /// Every committable the job reported, by (subtask, checkpoint).
    pub reported: Vec<(u32, u64, Vec<u8>)>,
}

fn entry(c: u64, committable: Vec<u8>, savepoint: bool) -> Entry {
    Entry {
        checkpoint: c,
        committables: vec![committable].into(),
        watermark: Some(c.min(1000) as i64 * 10),
        savepoint,
    }
}

fn config() -> Config {
    let mut c = Config::new(2, "job");
    c.savepoint_auto_tag = true;
    c.recovery = RecoveryMode::Continue;
    c
}

/// Runs the job on `st`, whose table exists (`schema/schema-0`); `file(s, c)` is
/// subtask `s`'s committable for checkpoint `c` (END for its last one).
pub fn run<S: Storage>(st: &mut Job<S>, file: &mut dyn FnMut(u32, u64) -> Vec<u8>) -> Report {
    let mut r = Report::default();
    let mut c = Coordinator::new(config(), None);
    c.set_table_format(TableFormatKind::Paimon).unwrap();
    c.start(st).unwrap();
    let mut report = |c: &mut Coordinator, st: &mut Job<S>, r: &mut Report, s, cp, sp| {
        let f = file(s, cp);
        r.reported.push((s, cp, f.clone()));
        c.event(st, s, 0, entry(cp, f, sp)).unwrap();
    };
    // Checkpoints 1 and 2 (a savepoint): one commit each, the savepoint tagged.
    for cp in 1..=2u64 {
        for s in 0..2 {
            report(&mut c, st, &mut r, s, cp, cp == 2);
        }
        let before = st.storage.calls;
        let out = c.checkpoint_complete(st, cp).unwrap();
        r.calls_per_commit.push(st.storage.calls - before);
        assert_eq!(out.committed, vec![cp]);
        r.committed.extend(out.committed);
        r.tags.extend(out.tags_created);
    }
    // Checkpoint 3: the manifest put fails, then the snapshot create lands but
    // reports an error; the third try finds it landed.
    for s in 0..2 {
        report(&mut c, st, &mut r, s, 3, false);
    }
    st.storage.fail_put = true;
    let e = c.checkpoint_complete(st, 3).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Storage, "{e}");
    st.storage.land_and_fail_create = true;
    let e = c.checkpoint_complete(st, 3).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Storage, "{e}");
    let out = c.checkpoint_complete(st, 3).unwrap();
    assert_eq!(out.committed, vec![3], "the landed create is ours");
    r.committed.extend(out.committed);
    // Checkpoint 4 is taken but the job fails before it completes.
    for s in 0..2 {
        report(&mut c, st, &mut r, s, 4, false);
    }
    let state = c.checkpoint(st, 4).unwrap();
    drop(c);
    // The failover: restored from checkpoint 4, the writers replay its entries.
    let rp = RestorePoint {
        checkpoint: 4,
        state,
        finished_subtasks: vec![],
    };
    let mut c = Coordinator::new(config(), Some(rp));
    c.set_table_format(TableFormatKind::Paimon).unwrap();
    assert_eq!(c.start(st).unwrap().state, Lifecycle::Restoring);
    for s in 0..2u32 {
        let replay = r
            .reported
            .iter()
            .filter(|(t, cp, _)| *t == s && *cp == 4)
            .map(|(_, cp, f)| entry(*cp, f.clone(), false))
            .collect();
        let out = c.restored(st, s, 1, 4, replay).unwrap();
        r.committed.extend(out.committed);
    }
    assert_eq!(c.state(), Lifecycle::Running);
    // END: both writers end their input; the next completion commits it.
    for s in 0..2 {
        report(&mut c, st, &mut r, s, END, false);
    }
    let out = c.checkpoint_complete(st, 5).unwrap();
    r.committed.extend(out.committed);
    assert!(c.final_committed());
    r
}

/// A table in a local directory: a key is a path under it; `put_if_absent` is an
/// exclusive create, `put` a write then rename (readers never see half a file).
pub struct DirStorage {
    pub root: std::path::PathBuf,
}

fn io(e: std::io::Error) -> StorageError {
    StorageError::Io(e.to_string())
}

impl DirStorage {
    fn path(&self, key: &str) -> std::path::PathBuf {
        self.root.join(key)
    }

    fn parent_dirs(&self, key: &str) -> Result<std::path::PathBuf, StorageError> {
        let p = self.path(key);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(io)?;
        }
        Ok(p)
    }
}

impl Storage for DirStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match std::fs::read(self.path(key)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        }
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        use std::io::Write;
        let p = self.parent_dirs(key)?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(mut f) => {
                f.write_all(value).map_err(io)?;
                f.sync_all().map_err(io)?;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io(e)),
        }
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let p = self.parent_dirs(key)?;
        let tmp = p.with_file_name(format!(
            ".{}.tmp",
            p.file_name().and_then(|n| n.to_str()).unwrap_or("put")
        ));
        std::fs::write(&tmp, value).map_err(io)?;
        std::fs::rename(&tmp, &p).map_err(io)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        match std::fs::remove_file(self.path(key)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        }
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let (dir, start) = match prefix.rfind('/') {
            Some(i) => (&prefix[..i + 1], &prefix[i + 1..]),
            None => ("", prefix),
        };
        let rd = match std::fs::read_dir(self.path(dir)) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        let mut keys = Vec::new();
        for e in rd {
            let e = e.map_err(io)?;
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            if name.starts_with(start) && !name.starts_with('.') && e.path().is_file() {
                keys.push(format!("{dir}{name}"));
            }
        }
        keys.sort();
        Ok(keys)
    }
}
