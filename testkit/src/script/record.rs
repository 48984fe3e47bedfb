//! Recording: the native core runs the trace through [`RecordingDriver`],
//! which writes every component call, and every storage and clock import
//! call made inside it, as script lines.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use sink_coordinator::{
    events_one_by_one, ApplyResult, Call as CoordinatorCall, Clock, Config, Entry, HostError,
    Lifecycle, Outcome, Reply, RestorePoint, Snapshot, Storage, StorageError, Tag, WriterCall,
    WriterReply,
};
use sink_coordinator_host::env::Shared;
use sink_coordinator_host::error::HostResult;

use super::calls::{self, Call};
use super::wire::{entry_value, outcome_value, snapshot_value, tag_value, to_hex, u64_arg};
use crate::driver::{CoordinatorApi, Driver, NativeDriver, WriterApi};

/// The script being written, shared by the driver, its instances and the
/// storage and clock wrappers.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Lines>>);

/// The script's lines and the native core's raw results (one per call
/// line, in the form a host prints them).
#[derive(Default)]
struct Lines {
    script: Vec<Value>,
    results: Vec<Value>,
}

impl Log {
    fn with<T>(&self, f: impl FnOnce(&mut Lines) -> T) -> T {
        // A poisoned lock only means another recorder panicked; keep its lines.
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn push(&self, line: Value) {
        self.with(|l| l.script.push(line));
    }

    fn call(&self, call: Call) {
        self.push(call.line());
    }

    /// Records a call's result; returns it.
    fn answer<T>(&self, r: HostResult<T>, encode: impl FnOnce(&T) -> Value) -> HostResult<T> {
        let raw = match &r {
            Ok(v) => json!({ "ok": encode(v) }),
            Err(e) => json!({ "err": { "kind": e.kind.name(), "message": e.message } }),
        };
        self.with(|l| l.results.push(raw));
        r
    }

    /// Records a result that cannot fail.
    fn value<T>(&self, v: T, encode: impl FnOnce(&T) -> Value) -> T {
        self.with(|l| l.results.push(json!({ "ok": encode(&v) })));
        v
    }

    /// The script lines written so far.
    pub fn lines(&self) -> Vec<Value> {
        self.with(|l| l.script.clone())
    }

    /// The native core's raw results so far.
    pub fn results(&self) -> Vec<Value> {
        self.with(|l| l.results.clone())
    }
}

fn null<T>(_: &T) -> Value {
    Value::Null
}

fn outcome(o: &Outcome) -> Value {
    outcome_value(o)
}

fn bytes(b: &[u8]) -> Value {
    Value::String(to_hex(b))
}

fn entry(e: &Entry) -> Value {
    entry_value(e)
}

/// How a storage call ended: `null` for success, else the error the host
/// must return and whether the change is applied first (an "ambiguous"
/// fault of TRACE-FORMAT's `storage_fault`).
pub(super) fn fault<T>(result: &Result<T, StorageError>) -> Value {
    match result {
        Ok(_) => Value::Null,
        Err(StorageError::Io(m)) => json!({
            "kind": "io",
            "message": m,
            // FaultyStorage's only marker of an applied change is its message.
            "applied": m.ends_with("after it was applied"),
        }),
        // Never met in replay (the table is in memory); it crosses the WIT
        // boundary as `io`.
        Err(StorageError::Backend { context, source }) => {
            json!({ "kind": "io", "message": format!("{context}: {source}"), "applied": false })
        }
        Err(StorageError::InvalidKey(m)) => {
            json!({ "kind": "invalid-key", "message": m, "applied": false })
        }
    }
}

/// Records the storage import calls (between the core and the replayer's table).
struct RecordingStorage {
    inner: Shared<dyn Storage + Send>,
    log: Log,
}

impl RecordingStorage {
    fn record<T>(&self, op: &str, key: &str, value: Option<&[u8]>, r: &Result<T, StorageError>) {
        let mut line = json!({ "storage": op, "key": key, "fault": fault(r) });
        if let Some(v) = value {
            line["value"] = Value::String(to_hex(v));
        }
        self.log.push(line);
    }
}

impl Storage for RecordingStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let r = self.inner.get(key);
        self.record("get", key, None, &r);
        r
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        let r = self.inner.put_if_absent(key, value);
        self.record("put-if-absent", key, Some(value), &r);
        r
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let r = self.inner.put(key, value);
        self.record("put", key, Some(value), &r);
        r
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        let r = self.inner.delete(key);
        self.record("delete", key, None, &r);
        r
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let r = self.inner.list(prefix);
        self.record("list", prefix, None, &r);
        r
    }
}

/// Records each clock reading.
struct RecordingClock {
    inner: Shared<dyn Clock + Send>,
    log: Log,
}

impl Clock for RecordingClock {
    fn now_ms(&mut self) -> u64 {
        let now = self.inner.now_ms();
        self.log.push(json!({ "clock": u64_arg(now) }));
        now
    }
}

/// The native driver, recording.
pub struct RecordingDriver {
    inner: NativeDriver,
    log: Log,
    next: u32,
}

impl RecordingDriver {
    /// Runs the native core over `storage` and `clock` (the replayer's),
    /// writing to `log`.
    pub fn new(
        storage: Shared<dyn Storage + Send>,
        clock: Shared<dyn Clock + Send>,
        log: Log,
    ) -> Self {
        let storage = Shared::new(RecordingStorage {
            inner: storage,
            log: log.clone(),
        });
        let clock = Shared::new(RecordingClock {
            inner: clock,
            log: log.clone(),
        });
        RecordingDriver {
            inner: NativeDriver::new(storage.as_storage(), clock.as_clock()),
            log,
            next: 0,
        }
    }

    fn handle(&mut self) -> u32 {
        self.next += 1;
        self.next
    }
}

impl Driver for RecordingDriver {
    fn name(&self) -> &'static str {
        "native (recording)"
    }
    fn create(
        &mut self,
        config: Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<Box<dyn CoordinatorApi>> {
        let h = self.handle();
        self.log
            .call(calls::coordinator(h, &config, restore.as_ref()));
        let inner = self.log.answer(self.inner.create(config, restore), null)?;
        Ok(Box::new(Recorded {
            h,
            inner,
            log: self.log.clone(),
        }))
    }
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>> {
        let h = self.handle();
        self.log.call(calls::writer(h, subtask));
        let inner = self.log.answer(self.inner.create_writer(subtask), null)?;
        Ok(Box::new(RecordedWriter {
            h,
            inner,
            log: self.log.clone(),
        }))
    }
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        self.log
            .call(Call::table("snapshot-by-id", vec![u64_arg(id)]));
        let r = self.inner.snapshot_by_id(id);
        self.log
            .answer(r, |s| s.as_ref().map_or(Value::Null, snapshot_value))
    }
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        self.log.call(Call::table("list-snapshots", vec![]));
        let r = self.inner.list_snapshots();
        self.log
            .answer(r, |s| s.iter().map(snapshot_value).collect())
    }
    fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        self.log.call(Call::table("list-tags", vec![]));
        let r = self.inner.list_tags();
        self.log.answer(r, |t| t.iter().map(tag_value).collect())
    }
}

/// A recorded coordinator instance.
struct Recorded {
    h: u32,
    inner: Box<dyn CoordinatorApi>,
    log: Log,
}

impl CoordinatorApi for Recorded {
    fn state(&mut self) -> Lifecycle {
        self.log.call(Call::on(self.h, "state", vec![]));
        let s = self.inner.state();
        self.log.value(s, |s| json!(s.name()))
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        self.log.call(Call::on(self.h, "committed-up-to", vec![]));
        let u = self.inner.committed_up_to();
        self.log.value(u, |u| json!(u))
    }
    fn apply(&mut self, call: CoordinatorCall) -> ApplyResult {
        let Some(line) = calls::of(self.h, &call) else {
            if let CoordinatorCall::Events(events) = call {
                return events_one_by_one(self, events);
            }
            return Err(
                HostError::trap(format!("`{}`: a call with no script line", call.name())).into(),
            );
        };
        self.log.call(line);
        // Not a batch: its only failure is one error.
        let r = self.inner.apply(call).map_err(|e| e.error().clone());
        Ok(self.log.answer(r, |r| match r {
            Reply::Outcome(o) => outcome(o),
            Reply::State(b) => bytes(b),
        })?)
    }
}

/// A recorded writer.
struct RecordedWriter {
    h: u32,
    inner: Box<dyn WriterApi>,
    log: Log,
}

impl WriterApi for RecordedWriter {
    fn apply(&mut self, call: WriterCall<'_>) -> HostResult<WriterReply> {
        self.log.call(calls::of_writer(self.h, &call));
        let r = self.inner.apply(call);
        self.log.answer(r, |r| match r {
            WriterReply::Entry(e) => entry(e),
            WriterReply::Entries(es) => es.iter().map(entry_value).collect(),
            WriterReply::State(b) => bytes(b),
            WriterReply::Done => Value::Null,
        })
    }
}
