//! JNI exports of the writer helper (SEMANTICS 11): one component instance
//! per writer subtask; it touches neither storage nor time.

use jni::objects::{JByteArray, JObject, JObjectArray};
use jni::sys::{jboolean, jint, jlong};
use sink_coordinator_host::ComponentWriter;

use crate::call::{checkpoint_id, into_handle, jni_exports, subtask_index, Fail};
use crate::convert;

type Handle = ComponentWriter;

jni_exports! {
    fn writerNew(_env, subtask: jint) -> jlong {
        let runtime = crate::runtime().map_err(Fail::Usage)?;
        let writer = ComponentWriter::new(&runtime, subtask_index(subtask)?)?;
        Ok(into_handle(writer))
    }

    fn writerReport(
        env,
        w: &mut Handle,
        checkpoint: jlong,
        committables: JObjectArray<'local>,
        has_watermark: jboolean,
        watermark: jlong,
        savepoint: jboolean,
    ) -> JObject<'local> {
        let committables = convert::byte_arrays(env, &committables)?;
        let entry = w.report(
            checkpoint_id(checkpoint, "checkpoint")?,
            &committables,
            (has_watermark != 0).then_some(watermark),
            savepoint != 0,
        )?;
        convert::to_entry(env, &entry)
    }

    fn writerEndInput(
        env,
        w: &mut Handle,
        committables: JObjectArray<'local>,
        has_watermark: jboolean,
        watermark: jlong,
    ) -> JObject<'local> {
        let committables = convert::byte_arrays(env, &committables)?;
        let entry = w.end_input(&committables, (has_watermark != 0).then_some(watermark))?;
        convert::to_entry(env, &entry)
    }

    fn writerCommitted(_env, w: &mut Handle, up_to: jlong) -> () {
        Ok(w.committed(checkpoint_id(up_to, "committed-up-to")?)?)
    }

    fn writerCheckpointAborted(_env, w: &mut Handle, checkpoint: jlong) -> () {
        Ok(w.checkpoint_aborted(checkpoint_id(checkpoint, "checkpoint")?)?)
    }

    fn writerState(env, w: &mut Handle) -> JByteArray<'local> {
        let state = w.state()?;
        Ok(env.byte_array_from_slice(&state)?)
    }

    fn writerRestore(
        env,
        w: &mut Handle,
        state: JByteArray<'local>,
        checkpoint: jlong,
    ) -> JObjectArray<'local> {
        let state = convert::bytes(env, &state, "writer state")?;
        let entries = w.restore(&state, checkpoint_id(checkpoint, "checkpoint")?)?;
        convert::to_entries(env, &entries)
    }

    free fn writerFree(Handle);
}
