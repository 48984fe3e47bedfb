//! JNI exports of the table interface: read-only views of a table's log
//! (snapshots, tags), decoded by the component itself.

use jni::objects::{JObjectArray, JString};
use jni::sys::jlong;
use sink_coordinator_host::storage::LocalDirStorage;
use sink_coordinator_host::ComponentTable;

use crate::call::{into_handle, jni_exports, Fail};
use crate::convert;

type Handle = ComponentTable;

jni_exports! {
    /// Opens the table log at `logDir`, which must exist (a reader never
    /// creates a table).
    fn tableOpen(env, log_dir: JString<'local>) -> jlong {
        let dir: String = env.get_string(&log_dir)?.into();
        let storage = LocalDirStorage::open_existing(&dir)
            .map_err(|e| Fail::Usage(format!("cannot open the table log {dir}: {e}")))?;
        let runtime = crate::runtime().map_err(Fail::Usage)?;
        Ok(into_handle(ComponentTable::new(&runtime, storage)?))
    }

    fn tableListSnapshots(env, t: &mut Handle) -> JObjectArray<'local> {
        let snapshots = t.list_snapshots()?;
        convert::to_array(env, "Snapshot", &snapshots, |env, s| convert::to_snapshot(env, s))
    }

    fn tableListTags(env, t: &mut Handle) -> JObjectArray<'local> {
        let tags = t.list_tags()?;
        convert::to_array(env, "Tag", &tags, |env, tag| convert::to_tag(env, tag))
    }

    free fn tableFree(Handle);
}
