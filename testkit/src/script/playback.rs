//! Playback: the replayer runs the trace again through [`PlaybackDriver`],
//! whose instances answer every call with the raw result another host
//! printed for it. Each call must be the next call line of the script (same
//! handle, name and arguments), so a host result that changes what the
//! replayer does next (an entry a writer produced, a committed-up-to it
//! forwards) stops the playback; the storage lines after each call are
//! applied to the replayer's table, so the table differences of the result
//! document are those of the script the host checked its imports against.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;
use sink_coordinator::{
    events_one_by_one, ApplyResult, Call as CoordinatorCall, Config, Lifecycle, Reply,
    RestorePoint, Snapshot, Storage, StorageError, Tag, WriterCall, WriterReply,
};
use sink_coordinator_host::env::Shared;
use sink_coordinator_host::error::{HostError, HostResult};

use super::calls::{self, Call};
use super::record::fault;
use super::wire::{self, WireResult};
use crate::driver::{CoordinatorApi, Driver, WriterApi};

/// The script, the host's raw results and how far both are consumed.
pub struct Tape {
    script: Vec<Value>,
    pos: usize,
    raw: Vec<Value>,
    raw_pos: usize,
    storage: Shared<dyn Storage + Send>,
    diverged: Option<String>,
}

/// The tape, shared by the driver and its instances.
pub type SharedTape = Rc<RefCell<Tape>>;

impl Tape {
    /// A tape over the replayer's `storage`.
    pub fn new(script: Vec<Value>, raw: Vec<Value>, storage: Shared<dyn Storage + Send>) -> Self {
        Tape {
            script,
            pos: 0,
            raw,
            raw_pos: 0,
            storage,
            diverged: None,
        }
    }

    /// Why the playback stopped, or what was left unconsumed at the end.
    pub fn verdict(&self) -> Result<(), String> {
        if let Some(d) = &self.diverged {
            return Err(d.clone());
        }
        if self.pos != self.script.len() {
            return Err(format!(
                "the replay ended at script line {} of {}",
                self.pos + 1,
                self.script.len()
            ));
        }
        if self.raw_pos != self.raw.len() {
            return Err(format!(
                "{} raw results for {} calls",
                self.raw.len(),
                self.raw_pos
            ));
        }
        Ok(())
    }

    fn diverge<T>(&mut self, message: String) -> HostResult<T> {
        self.diverged.get_or_insert(message);
        Err(HostError::trap("the playback diverged from the script"))
    }

    /// Plays one call: checks it against the script, applies its storage
    /// lines, and decodes the host's raw result with `decode`.
    fn play<T>(
        &mut self,
        call: Call,
        decode: impl FnOnce(&Value) -> WireResult<T>,
    ) -> HostResult<T> {
        if self.diverged.is_some() {
            return Err(HostError::trap("the playback diverged from the script"));
        }
        let expected = call.line();
        let line = self.pos + 1;
        if self.script.get(self.pos) != Some(&expected) {
            let found = self
                .script
                .get(self.pos)
                .map_or("the end".into(), Value::to_string);
            return self.diverge(format!(
                "script line {line}: the replay calls {expected}, the script has {found}"
            ));
        }
        self.pos += 1;
        while let Some(next) = self.script.get(self.pos) {
            if next.get("call").is_some() {
                break;
            }
            if next.get("storage").is_some() {
                if let Err(m) = self.apply_storage(next.clone()) {
                    return self.diverge(format!("script line {}: {m}", self.pos + 1));
                }
            }
            self.pos += 1;
        }
        let Some(raw) = self.raw.get(self.raw_pos).cloned() else {
            return self.diverge(format!("no raw result for the call of script line {line}"));
        };
        self.raw_pos += 1;
        let what = format!(
            "raw result {} (script line {line}, {})",
            self.raw_pos, call.name
        );
        if let Some(ok) = raw.get("ok") {
            match decode(ok) {
                Ok(v) => Ok(v),
                Err(m) => self.diverge(format!("{what}: {m}")),
            }
        } else if let Some(err) = raw.get("err") {
            let kind = err.get("kind").map(wire::error_kind_of);
            match (kind, err.get("message").and_then(Value::as_str)) {
                (Some(Ok(kind)), Some(m)) => Err(HostError::core(kind, m)),
                _ => self.diverge(format!("{what}: {err} is not an error record")),
            }
        } else {
            self.diverge(format!("{what}: {raw} has neither \"ok\" nor \"err\""))
        }
    }

    /// Runs a storage line's call on the replayer's table; it must end as
    /// the script says (it does unless the recording and playback storages
    /// differ, a bug of this module).
    fn apply_storage(&mut self, line: Value) -> Result<(), String> {
        let key = line["key"].as_str().unwrap_or_default();
        let value = match line.get("value") {
            Some(v) => wire::bytes_of(v)?,
            None => Vec::new(),
        };
        let s = &mut self.storage;
        let got = match line["storage"].as_str().unwrap_or_default() {
            "get" => fault(&s.get(key)),
            "put-if-absent" => fault(&s.put_if_absent(key, &value)),
            "put" => fault(&s.put(key, &value)),
            "delete" => fault(&s.delete(key)),
            "list" => fault(&s.list(key)),
            other => fault::<()>(&Err(StorageError::Io(format!(
                "unknown storage call {other:?}"
            )))),
        };
        if got == line["fault"] {
            Ok(())
        } else {
            Err(format!(
                "the storage call {line} ended as {got} on playback"
            ))
        }
    }
}

fn unit(_: &Value) -> WireResult<()> {
    Ok(())
}

/// The driver whose instances are the other host's.
pub struct PlaybackDriver {
    tape: SharedTape,
    next: u32,
}

impl PlaybackDriver {
    pub fn new(tape: SharedTape) -> Self {
        PlaybackDriver { tape, next: 0 }
    }

    fn handle(&mut self) -> u32 {
        self.next += 1;
        self.next
    }
}

impl Driver for PlaybackDriver {
    fn name(&self) -> &'static str {
        "script playback"
    }
    fn create(
        &mut self,
        config: Config,
        restore: Option<RestorePoint>,
    ) -> HostResult<Box<dyn CoordinatorApi>> {
        let h = self.handle();
        let call = calls::coordinator(h, &config, restore.as_ref());
        self.tape.borrow_mut().play(call, unit)?;
        Ok(Box::new(Played {
            h,
            tape: self.tape.clone(),
        }))
    }
    fn create_writer(&mut self, subtask: u32) -> HostResult<Box<dyn WriterApi>> {
        let h = self.handle();
        self.tape
            .borrow_mut()
            .play(calls::writer(h, subtask), unit)?;
        Ok(Box::new(Played {
            h,
            tape: self.tape.clone(),
        }))
    }
    fn snapshot_by_id(&mut self, id: u64) -> HostResult<Option<Snapshot>> {
        let call = Call::table("snapshot-by-id", vec![wire::u64_arg(id)]);
        self.tape
            .borrow_mut()
            .play(call, |v| wire::option_of(v, wire::snapshot_of))
    }
    fn list_snapshots(&mut self) -> HostResult<Vec<Snapshot>> {
        let call = Call::table("list-snapshots", vec![]);
        self.tape
            .borrow_mut()
            .play(call, |v| wire::list_of(v, wire::snapshot_of))
    }
    fn list_tags(&mut self) -> HostResult<Vec<Tag>> {
        let call = Call::table("list-tags", vec![]);
        self.tape
            .borrow_mut()
            .play(call, |v| wire::list_of(v, wire::tag_of))
    }
}

/// A coordinator or writer of the other host.
struct Played {
    h: u32,
    tape: SharedTape,
}

impl Played {
    fn bare(&self, name: &'static str) -> Call {
        Call::on(self.h, name, vec![])
    }
}

impl CoordinatorApi for Played {
    fn state(&mut self) -> Lifecycle {
        let call = self.bare("state");
        // A divergence is reported by the tape's verdict.
        self.tape
            .borrow_mut()
            .play(call, wire::lifecycle_of)
            .unwrap_or(Lifecycle::Failed)
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        let call = self.bare("committed-up-to");
        self.tape
            .borrow_mut()
            .play(call, wire::opt_u64_of)
            .unwrap_or(None)
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
        let mut tape = self.tape.borrow_mut();
        Ok(match call {
            CoordinatorCall::Checkpoint(_) => Reply::State(tape.play(line, wire::bytes_of)?),
            _ => Reply::Outcome(tape.play(line, wire::outcome_of)?),
        })
    }
}

impl WriterApi for Played {
    fn apply(&mut self, call: WriterCall<'_>) -> HostResult<WriterReply> {
        let line = calls::of_writer(self.h, &call);
        let mut tape = self.tape.borrow_mut();
        match call {
            WriterCall::Report { .. } | WriterCall::EndInput { .. } => {
                tape.play(line, wire::entry_of).map(WriterReply::Entry)
            }
            WriterCall::Committed(_) | WriterCall::CheckpointAborted(_) => {
                tape.play(line, unit).map(|()| WriterReply::Done)
            }
            WriterCall::State => tape.play(line, wire::bytes_of).map(WriterReply::State),
            WriterCall::Restore { .. } => tape
                .play(line, |v| wire::list_of(v, wire::entry_of))
                .map(WriterReply::Entries),
        }
    }
}
