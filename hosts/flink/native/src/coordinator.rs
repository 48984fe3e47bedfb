//! JNI exports of the coordinator resource: one component instance per
//! coordinator, over the table's log directory and the system clock.

use jni::objects::{
    JByteArray, JByteBuffer, JIntArray, JLongArray, JObject, JObjectArray, JString,
};
use jni::sys::{jboolean, jint, jlong};
use jni::JNIEnv;
use sink_coordinator_host::clock::SystemClock;
use sink_coordinator_host::core::{
    Config, FinalCommitMode, Outcome, RecoveryMode, RestorePoint, TableFormatKind,
};
use sink_coordinator_host::env::HostEnv;
use sink_coordinator_host::{ComponentCoordinator, HostResult, PackedEventRef};

use crate::call::{
    checkpoint_id, into_handle, jni_exports, optional_checkpoint, subtask_index, CallResult, Fail,
};
use crate::convert;
use crate::faults::{DrilledStorage, FaultPlan};

type Handle = ComponentCoordinator;

/// A coordinator call's outcome → a Java `Outcome` (an error throws).
fn outcome<'local>(
    env: &mut JNIEnv<'local>,
    result: HostResult<Outcome>,
) -> CallResult<JObject<'local>> {
    convert::to_outcome(env, &result?)
}

/// The first `size` bytes of a Java direct buffer, borrowed for the call
/// (the Java caller keeps the buffer alive and unshared until it returns).
fn direct_bytes<'b>(
    env: &mut JNIEnv<'_>,
    buffer: &'b JByteBuffer<'_>,
    size: jint,
) -> CallResult<&'b [u8]> {
    let address = env.get_direct_buffer_address(buffer)?;
    let capacity = env.get_direct_buffer_capacity(buffer)?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&n| n <= capacity)
        .ok_or_else(|| Fail::Usage(format!("{size} bytes of blocks in a buffer of {capacity}")))?;
    if size == 0 {
        return Ok(&[]);
    }
    // SAFETY: a direct buffer's memory stays valid while the buffer object
    // is reachable, which the Java caller guarantees for the whole call, and
    // nothing writes to it meanwhile (the wrapper's calls are serialized);
    // `size` is within its capacity.
    Ok(unsafe { std::slice::from_raw_parts(address, size) })
}

jni_exports! {
    /// `long coordinatorNew(String location, String[] options, int parallelism, String commitUser,
    /// boolean checkpointing, boolean finalOnEndInput, boolean forceCreateSnapshot,
    /// boolean savepointAutoTag, long tagRetainedMs, boolean recoveryContinue,
    /// long restoreCheckpoint, byte[] state, int[] finishedSubtasks,
    /// int faultEvery, long faultAfter)`: the storage at `location` (a local
    /// directory or an object store's URL, with its `options`: see
    /// [`crate::storage::open`]); `tagRetainedMs`, `restoreCheckpoint`
    /// and `faultAfter` are `-1` for none; `faultEvery` 0 for none (a storage
    /// fault drill, [`crate::faults`]).
    fn coordinatorNew(
        env,
        location: JString<'local>,
        options: JObjectArray<'local>,
        parallelism: jint,
        commit_user: JString<'local>,
        checkpointing: jboolean,
        final_on_end_input: jboolean,
        force_create_snapshot: jboolean,
        savepoint_auto_tag: jboolean,
        tag_retained_ms: jlong,
        recovery_continue: jboolean,
        restore_checkpoint: jlong,
        state: JByteArray<'local>,
        finished: JIntArray<'local>,
        fault_every: jint,
        fault_after: jlong,
    ) -> jlong {
        let user: String = env.get_string(&commit_user)?.into();
        let config = Config {
            parallelism: u32::try_from(parallelism).unwrap_or(0),
            commit_user: user,
            checkpointing: checkpointing != 0,
            final_commit: if final_on_end_input != 0 {
                FinalCommitMode::OnEndInput
            } else {
                FinalCommitMode::OnCheckpoint
            },
            force_create_snapshot: force_create_snapshot != 0,
            savepoint_auto_tag: savepoint_auto_tag != 0,
            tag_time_retained_ms: optional_checkpoint(tag_retained_ms, "tag retention")?,
            recovery: if recovery_continue != 0 {
                RecoveryMode::Continue
            } else {
                RecoveryMode::Restart
            },
        };
        let restore = match optional_checkpoint(restore_checkpoint, "restore checkpoint")? {
            None => None,
            Some(checkpoint) => {
                let state = convert::bytes(env, &state, "restore state")?;
                let n = if finished.is_null() {
                    0
                } else {
                    env.get_array_length(&finished)?
                };
                let mut indexes = vec![0i32; usize::try_from(n).unwrap_or(0)];
                if n > 0 {
                    env.get_int_array_region(&finished, 0, &mut indexes)?;
                }
                let finished_subtasks = indexes
                    .into_iter()
                    .map(subtask_index)
                    .collect::<CallResult<Vec<u32>>>()?;
                Some(RestorePoint {
                    checkpoint,
                    state,
                    finished_subtasks,
                })
            }
        };
        let storage = crate::storage::open(env, &location, &options, true, "table log")?;
        let runtime = crate::runtime().map_err(Fail::Usage)?;
        let plan = FaultPlan {
            every: u32::try_from(fault_every).unwrap_or(0),
            fail_after: u64::try_from(fault_after).ok(),
        };
        let env = if plan == FaultPlan::default() {
            HostEnv::new(storage, SystemClock)
        } else {
            HostEnv::new(DrilledStorage::new(storage, plan), SystemClock)
        };
        let coordinator = ComponentCoordinator::new(&runtime, env, &config, restore.as_ref())?;
        Ok(into_handle(coordinator))
    }

    /// `void coordinatorSetTableFormat(long handle, String format)`: WIT
    /// `set-table-format` (`native` or `paimon`), only while `created`, i.e.
    /// between `coordinatorNew` and `coordinatorStart`.
    fn coordinatorSetTableFormat(env, c: &mut Handle, format: JString<'local>) -> () {
        let name: String = env.get_string(&format)?.into();
        let kind = match name.as_str() {
            "native" => TableFormatKind::Native,
            "paimon" => TableFormatKind::Paimon,
            _ => return Err(Fail::Usage(format!("unknown table format {name}"))),
        };
        Ok(c.set_table_format(kind)?)
    }

    fn coordinatorStart(env, c: &mut Handle) -> JObject<'local> {
        outcome(env, c.start())
    }

    fn coordinatorEvent(
        env,
        c: &mut Handle,
        subtask: jint,
        attempt: jint,
        entry: JObject<'local>,
    ) -> JObject<'local> {
        let entry = convert::entry(env, &entry)?;
        let attempt = u32::try_from(attempt).unwrap_or(0);
        outcome(env, c.event(subtask_index(subtask)?, attempt, entry))
    }

    /// `BatchOutcome coordinatorEvents(long handle, int[] subtasks, int[] attempts,
    /// long[] checkpoints, long[] watermarks, byte[] flags, ByteBuffer blocks, int size,
    /// int[] ends)`:
    /// event i is `(subtasks[i], attempts[i])` with the entry `checkpoints[i]`, watermark
    /// `watermarks[i]` if bit 0 of `flags[i]` is set, savepoint flag bit 1, and its
    /// committables as one block (WIT 0.2.2 `packed-event`, packed by the Java side):
    /// `blocks[ends[i-1]..ends[i]]`, read in place from the direct buffer (its first
    /// `size` bytes) and lowered into the guest from there. The rest of the batch
    /// crosses JNI in six array copies, not a few calls per event and committable
    /// (issue 24's JMH profile); a 0.2.1
    /// component gets `events`. An error the component reports is returned inside the
    /// result, with how many events were applied before it and what they did, so the
    /// caller can resend from there; only a misuse or a JNI failure throws.
    fn coordinatorEvents(
        env,
        c: &mut Handle,
        subtasks: JIntArray<'local>,
        attempts: JIntArray<'local>,
        checkpoints: JLongArray<'local>,
        watermarks: JLongArray<'local>,
        flags: JByteArray<'local>,
        blocks: JByteBuffer<'local>,
        size: jint,
        ends: JIntArray<'local>,
    ) -> JObject<'local> {
        let n = env.get_array_length(&subtasks)?;
        for len in [
            env.get_array_length(&attempts)?,
            env.get_array_length(&checkpoints)?,
            env.get_array_length(&watermarks)?,
            env.get_array_length(&flags)?,
            env.get_array_length(&ends)?,
        ] {
            if len != n {
                return Err(Fail::Usage(
                    "a batch needs one attempt, checkpoint, watermark, flag and end per event"
                        .to_string(),
                ));
            }
        }
        let len = usize::try_from(n).unwrap_or(0);
        // Each array in one copy (all of them `len` long, checked above).
        let ints = |env: &mut JNIEnv<'local>, array: &JIntArray<'local>| -> CallResult<Vec<i32>> {
            let mut v = vec![0; len];
            env.get_int_array_region(array, 0, &mut v)?;
            Ok(v)
        };
        let longs = |env: &mut JNIEnv<'local>, array: &JLongArray<'local>| -> CallResult<Vec<i64>> {
            let mut v = vec![0; len];
            env.get_long_array_region(array, 0, &mut v)?;
            Ok(v)
        };
        let (s, a, e) = (ints(env, &subtasks)?, ints(env, &attempts)?, ints(env, &ends)?);
        let (cp, wm) = (longs(env, &checkpoints)?, longs(env, &watermarks)?);
        let mut fl = vec![0; len];
        env.get_byte_array_region(&flags, 0, &mut fl)?;
        let bytes = direct_bytes(env, &blocks, size)?;
        let mut batch = Vec::with_capacity(len);
        let mut start = 0usize;
        for i in 0..len {
            let end = usize::try_from(e[i]).unwrap_or(usize::MAX);
            let block = bytes.get(start..end).ok_or_else(|| {
                Fail::Usage(format!("event {i}'s block ends at {} outside the blocks", e[i]))
            })?;
            start = end;
            batch.push(PackedEventRef {
                subtask: subtask_index(s[i])?,
                attempt: u32::try_from(a[i]).unwrap_or(0),
                checkpoint: checkpoint_id(cp[i], "entry checkpoint")?,
                committables: block,
                watermark: (fl[i] & 1 != 0).then_some(wm[i]),
                savepoint: fl[i] & 2 != 0,
            });
        }
        if start != bytes.len() {
            return Err(Fail::Usage("the blocks hold bytes after the last event's".to_string()));
        }
        let result = c.events_packed_refs(&batch);
        convert::to_batch_outcome(env, len, result)
    }

    fn coordinatorRestored(
        env,
        c: &mut Handle,
        subtask: jint,
        attempt: jint,
        checkpoint: jlong,
        entries: JObjectArray<'local>,
    ) -> JObject<'local> {
        let entries = convert::entries(env, &entries)?;
        let attempt = u32::try_from(attempt).unwrap_or(0);
        let checkpoint = checkpoint_id(checkpoint, "restored checkpoint")?;
        outcome(env, c.restored(subtask_index(subtask)?, attempt, checkpoint, entries))
    }

    /// `checkpoint` is `-1` when the subtask restarts from scratch.
    fn coordinatorSubtaskReset(
        env,
        c: &mut Handle,
        subtask: jint,
        checkpoint: jlong,
    ) -> JObject<'local> {
        let checkpoint = optional_checkpoint(checkpoint, "reset checkpoint")?;
        outcome(env, c.subtask_reset(subtask_index(subtask)?, checkpoint))
    }

    fn coordinatorCheckpoint(env, c: &mut Handle, checkpoint: jlong) -> JByteArray<'local> {
        let state = c.checkpoint(checkpoint_id(checkpoint, "checkpoint")?)?;
        Ok(env.byte_array_from_slice(&state)?)
    }

    fn coordinatorCheckpointComplete(env, c: &mut Handle, checkpoint: jlong) -> JObject<'local> {
        outcome(env, c.checkpoint_complete(checkpoint_id(checkpoint, "checkpoint")?))
    }

    fn coordinatorCheckpointAborted(env, c: &mut Handle, checkpoint: jlong) -> JObject<'local> {
        outcome(env, c.checkpoint_aborted(checkpoint_id(checkpoint, "checkpoint")?))
    }

    fn coordinatorClose(env, c: &mut Handle) -> JObject<'local> {
        outcome(env, c.close())
    }

    /// The lifecycle state's name (`created`, ..., `failed`).
    fn coordinatorState(env, c: &mut Handle) -> JString<'local> {
        Ok(env.new_string(c.state().name())?)
    }

    /// Committed-up-to (SEMANTICS 5.5); `-1` for none.
    fn coordinatorCommittedUpTo(_env, c: &mut Handle) -> jlong {
        match c.committed_up_to() {
            Some(u) => convert::to_long(u),
            None => Ok(-1),
        }
    }

    free fn coordinatorFree(Handle);
}
