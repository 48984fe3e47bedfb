//! JNI exports of the table interface: read-only views of a table's log
//! (snapshots, tags), decoded by the component itself.

use jni::objects::{JClass, JObject, JObjectArray, JString};
use jni::sys::{jlong, jobjectArray};
use jni::JNIEnv;
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_host::ComponentTable;

use crate::call::{fenced, free_handle, into_handle, with_handle, Fail};
use crate::convert;

type Handle = ComponentTable;

/// Opens the table log at `logDir`, which must exist (a reader never
/// creates a table).
#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_tableOpen<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    log_dir: JString<'local>,
) -> jlong {
    fenced(&mut env, 0, |env| {
        let dir: String = env.get_string(&log_dir)?.into();
        let storage = LocalDirStorage::open_existing(&dir)
            .map_err(|e| Fail::Usage(format!("cannot open the table log {dir}: {e}")))?;
        let runtime = crate::runtime().map_err(Fail::Usage)?;
        Ok(into_handle(ComponentTable::new(&runtime, storage)?))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_tableListSnapshots<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jobjectArray {
    fenced(&mut env, JObjectArray::from(JObject::null()), |env| {
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut t = unsafe { with_handle::<Handle>(handle)? };
        let snapshots = t.list_snapshots()?;
        convert::to_array(env, "Snapshot", &snapshots, |env, s| {
            convert::to_snapshot(env, s)
        })
    })
    .into_raw()
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_tableListTags<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jobjectArray {
    fenced(&mut env, JObjectArray::from(JObject::null()), |env| {
        // SAFETY: the Java wrapper passes its live handle (call.rs).
        let mut t = unsafe { with_handle::<Handle>(handle)? };
        let tags = t.list_tags()?;
        convert::to_array(env, "Tag", &tags, |env, tag| convert::to_tag(env, tag))
    })
    .into_raw()
}

#[no_mangle]
pub extern "system" fn Java_io_sinkcoordinator_flink_component_Native_tableFree<'local>(
    _env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    // SAFETY: called once by the wrapper's close, which then forgets the handle.
    unsafe { free_handle::<Handle>(handle) }
}
