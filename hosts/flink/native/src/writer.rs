//! JNI exports of the writer helper (SEMANTICS 11): one component instance
//! per writer subtask; it touches neither storage nor time.

use jni::objects::{JByteArray, JClass, JObject, JObjectArray};
use jni::sys::{jboolean, jbyteArray, jint, jlong, jobject, jobjectArray};
use jni::JNIEnv;
use sink_coordinator_host::ComponentWriter;

use crate::call::{
    checkpoint_id, fenced, free_handle, into_handle, null, subtask_index, with_handle, Fail,
};
use crate::convert;

type Handle = ComponentWriter;

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerNew<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    subtask: jint,
) -> jlong {
    fenced(&mut env, 0, |_| {
        let runtime = crate::runtime().map_err(Fail::Usage)?;
        let writer = ComponentWriter::new(&runtime, subtask_index(subtask)?)?;
        Ok(into_handle(writer))
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerReport<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    checkpoint: jlong,
    committables: JObjectArray<'local>,
    has_watermark: jboolean,
    watermark: jlong,
    savepoint: jboolean,
) -> jobject {
    fenced(&mut env, null(), |env| {
        let committables = convert::byte_arrays(env, &committables)?;
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut w = unsafe { with_handle::<Handle>(handle)? };
        let entry = w.report(
            checkpoint_id(checkpoint, "checkpoint")?,
            &committables,
            (has_watermark != 0).then_some(watermark),
            savepoint != 0,
        )?;
        convert::to_entry(env, &entry)
    })
    .into_raw()
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerEndInput<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    committables: JObjectArray<'local>,
    has_watermark: jboolean,
    watermark: jlong,
) -> jobject {
    fenced(&mut env, null(), |env| {
        let committables = convert::byte_arrays(env, &committables)?;
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut w = unsafe { with_handle::<Handle>(handle)? };
        let entry = w.end_input(&committables, (has_watermark != 0).then_some(watermark))?;
        convert::to_entry(env, &entry)
    })
    .into_raw()
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerCommitted<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    up_to: jlong,
) {
    fenced(&mut env, (), |_| {
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut w = unsafe { with_handle::<Handle>(handle)? };
        Ok(w.committed(checkpoint_id(up_to, "committed-up-to")?)?)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerCheckpointAborted<
    'local,
>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    checkpoint: jlong,
) {
    fenced(&mut env, (), |_| {
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut w = unsafe { with_handle::<Handle>(handle)? };
        Ok(w.checkpoint_aborted(checkpoint_id(checkpoint, "checkpoint")?)?)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerState<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jbyteArray {
    fenced(&mut env, JByteArray::default(), |env| {
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut w = unsafe { with_handle::<Handle>(handle)? };
        let state = w.state()?;
        Ok(env.byte_array_from_slice(&state)?)
    })
    .into_raw()
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerRestore<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    state: JByteArray<'local>,
    checkpoint: jlong,
) -> jobjectArray {
    fenced(&mut env, JObjectArray::from(JObject::null()), |env| {
        let state = convert::bytes(env, &state, "writer state")?;
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut w = unsafe { with_handle::<Handle>(handle)? };
        let entries = w.restore(&state, checkpoint_id(checkpoint, "checkpoint")?)?;
        convert::to_entries(env, &entries)
    })
    .into_raw()
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_writerFree<'local>(
    _env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    // SAFETY: called once by the wrapper's close, which then forgets the handle.
    unsafe { free_handle::<Handle>(handle) }
}
