//! JNI exports of the table interface: read-only views of a table's log
//! (snapshots, tags), decoded by the component itself.

use jni::objects::{JObjectArray, JString};
use jni::sys::jlong;
use sink_coordinator_host::ComponentTable;

use crate::call::{into_handle, jni_exports, Fail};
use crate::convert;

type Handle = ComponentTable;

jni_exports! {
    /// `long tableOpen(String location, String[] options)`: the table log at
    /// `location` (see [`crate::storage::open`]), which must exist (a reader
    /// never creates a table).
    fn tableOpen(env, location: JString<'local>, options: JObjectArray<'local>) -> jlong {
        let storage = crate::storage::open(env, &location, &options, false, "table log")?;
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
