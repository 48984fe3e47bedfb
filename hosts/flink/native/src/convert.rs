//! Java objects <-> the core's types. The Java classes are plain value
//! classes of package `io.sinkcoordinator.flink.component` whose
//! constructor signatures are named here; an absent watermark or
//! committed-up-to travels as a flag or as `-1`, because boxing every
//! value would cost an allocation per call on the hot path.

use jni::objects::{JByteArray, JFieldID, JObject, JObjectArray, JString, JValue};
use jni::signature::{Primitive, ReturnType};
use jni::sys::jsize;
use jni::JNIEnv;
use sink_coordinator_host::core::{Entry, Outcome, Snapshot, Tag};
use sink_coordinator_host::BatchResult;

use crate::call::{checkpoint_id, component_exception, CallResult, Fail};

const PACKAGE: &str = "io/sinkcoordinator/flink/component/";
const ENTRY_CTOR: &str = "(J[[BZJZ)V";
const OUTCOME_CTOR: &str = "(Ljava/lang/String;[J[Ljava/lang/String;[Ljava/lang/String;ZJ)V";
const BATCH_OUTCOME_CTOR: &str = "(ILio/sinkcoordinator/flink/component/Outcome;\
     Lio/sinkcoordinator/flink/component/ComponentException;)V";
const SNAPSHOT_CTOR: &str = "(JLjava/lang/String;JZJJ[I[[B)V";
const TAG_CTOR: &str = "(Ljava/lang/String;JJJZJ)V";

fn class(name: &str) -> String {
    format!("{PACKAGE}{name}")
}

/// `byte[][]` → list of byte strings (null → empty list).
pub fn byte_arrays(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> CallResult<Vec<Vec<u8>>> {
    if array.is_null() {
        return Ok(Vec::new());
    }
    let n = env.get_array_length(array)?;
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    for i in 0..n {
        let element = JByteArray::from(env.get_object_array_element(array, i)?);
        if element.is_null() {
            return Err(Fail::Usage(format!("committable {i} is null")));
        }
        out.push(env.convert_byte_array(&element)?);
        env.delete_local_ref(element)?;
    }
    Ok(out)
}

/// An object store's options from Java: a `String[]` of alternating keys
/// and values (null: none).
pub fn options(
    env: &mut JNIEnv<'_>,
    array: &JObjectArray<'_>,
) -> CallResult<Vec<(String, String)>> {
    if array.is_null() {
        return Ok(Vec::new());
    }
    let n = env.get_array_length(array)?;
    if n % 2 != 0 {
        return Err(Fail::Usage(format!(
            "storage options: {n} strings, not key-value pairs"
        )));
    }
    let mut strings = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    for i in 0..n {
        let element = JString::from(env.get_object_array_element(array, i)?);
        if element.is_null() {
            return Err(Fail::Usage(format!("storage option string {i} is null")));
        }
        strings.push(String::from(env.get_string(&element)?));
        env.delete_local_ref(element)?;
    }
    let mut pairs = Vec::with_capacity(strings.len() / 2);
    let mut it = strings.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        pairs.push((k, v));
    }
    Ok(pairs)
}

/// List of byte strings → `byte[][]`.
pub fn to_byte_arrays<'local, B: AsRef<[u8]>>(
    env: &mut JNIEnv<'local>,
    values: impl ExactSizeIterator<Item = B>,
) -> CallResult<JObjectArray<'local>> {
    object_array(env, "[B", values, |env, value| {
        Ok(env.byte_array_from_slice(value.as_ref())?.into())
    })
}

/// `byte[]` → bytes (null is a usage error: state bytes are never null).
pub fn bytes(env: &mut JNIEnv<'_>, array: &JByteArray<'_>, what: &str) -> CallResult<Vec<u8>> {
    if array.is_null() {
        return Err(Fail::Usage(format!("{what} is null")));
    }
    Ok(env.convert_byte_array(array)?)
}

fn jsize_of(n: usize) -> CallResult<jsize> {
    jsize::try_from(n).map_err(|_| Fail::Usage(format!("{n} elements exceed a Java array")))
}

/// The fields of a Java `Entry`, its committables still a Java array.
struct EntryFields<'local> {
    checkpoint: u64,
    committables: JObjectArray<'local>,
    watermark: Option<i64>,
    savepoint: bool,
}

/// The field ids of the Java `Entry` record, looked up once per entry and read without
/// parsing a signature each time (a batch of events does not come through here: its
/// entries are packed on the Java side, see `coordinatorEvents`). An id stays valid
/// while its class is loaded, which is at least the call.
struct EntryIds {
    checkpoint: JFieldID,
    committables: JFieldID,
    has_watermark: JFieldID,
    watermark: JFieldID,
    savepoint: JFieldID,
}

impl EntryIds {
    /// The ids of the class of `entry` (a Java `Entry`: a final record, so every
    /// element of an `Entry[]` has this class).
    pub fn of(env: &mut JNIEnv<'_>, entry: &JObject<'_>) -> CallResult<Self> {
        if entry.is_null() {
            return Err(Fail::Usage("an entry is null".to_string()));
        }
        let class = env.get_object_class(entry)?;
        let ids = EntryIds {
            checkpoint: env.get_field_id(&class, "checkpoint", "J")?,
            committables: env.get_field_id(&class, "committables", "[[B")?,
            has_watermark: env.get_field_id(&class, "hasWatermark", "Z")?,
            watermark: env.get_field_id(&class, "watermark", "J")?,
            savepoint: env.get_field_id(&class, "savepoint", "Z")?,
        };
        env.delete_local_ref(class)?;
        Ok(ids)
    }
}

fn entry_fields<'local>(
    env: &mut JNIEnv<'local>,
    object: &JObject<'_>,
) -> CallResult<EntryFields<'local>> {
    let ids = EntryIds::of(env, object)?;
    entry_fields_by(env, object, &ids)
}

/// The fields of `object`, an `Entry` of the class `ids` were taken from.
fn entry_fields_by<'local>(
    env: &mut JNIEnv<'local>,
    object: &JObject<'_>,
    ids: &EntryIds,
) -> CallResult<EntryFields<'local>> {
    if object.is_null() {
        return Err(Fail::Usage("an entry is null".to_string()));
    }
    let long = ReturnType::Primitive(Primitive::Long);
    let boolean = ReturnType::Primitive(Primitive::Boolean);
    // The ids are the class's own fields with these types (`EntryIds::of`).
    let checkpoint = env
        .get_field_unchecked(object, ids.checkpoint, long.clone())?
        .j()?;
    let committables = JObjectArray::from(
        env.get_field_unchecked(object, ids.committables, ReturnType::Array)?
            .l()?,
    );
    let has_watermark = env
        .get_field_unchecked(object, ids.has_watermark, boolean.clone())?
        .z()?;
    let watermark = env.get_field_unchecked(object, ids.watermark, long)?.j()?;
    let savepoint = env
        .get_field_unchecked(object, ids.savepoint, boolean)?
        .z()?;
    Ok(EntryFields {
        checkpoint: checkpoint_id(checkpoint, "entry checkpoint")?,
        committables,
        watermark: has_watermark.then_some(watermark),
        savepoint,
    })
}

/// A Java `Entry` → the core's entry.
pub fn entry(env: &mut JNIEnv<'_>, object: &JObject<'_>) -> CallResult<Entry> {
    let fields = entry_fields(env, object)?;
    let committables = byte_arrays(env, &fields.committables)?;
    env.delete_local_ref(fields.committables)?;
    Ok(Entry {
        checkpoint: fields.checkpoint,
        committables: committables.into(),
        watermark: fields.watermark,
        savepoint: fields.savepoint,
    })
}

/// A Java `Entry[]` → the core's entries.
pub fn entries(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> CallResult<Vec<Entry>> {
    if array.is_null() {
        return Ok(Vec::new());
    }
    let n = env.get_array_length(array)?;
    let mut out = Vec::new();
    for i in 0..n {
        let element = env.get_object_array_element(array, i)?;
        out.push(entry(env, &element)?);
        env.delete_local_ref(element)?;
    }
    Ok(out)
}

/// The core's entry → a Java `Entry`.
pub fn to_entry<'local>(env: &mut JNIEnv<'local>, e: &Entry) -> CallResult<JObject<'local>> {
    let committables = to_byte_arrays(env, e.committables.iter())?;
    let checkpoint = i64::try_from(e.checkpoint)
        .map_err(|_| Fail::Usage(format!("checkpoint {} exceeds a long", e.checkpoint)))?;
    Ok(env.new_object(
        class("Entry"),
        ENTRY_CTOR,
        &[
            JValue::Long(checkpoint),
            JValue::Object(&committables),
            JValue::Bool(e.watermark.is_some().into()),
            JValue::Long(e.watermark.unwrap_or(0)),
            JValue::Bool(e.savepoint.into()),
        ],
    )?)
}

/// The core's entries → a Java `Entry[]`.
pub fn to_entries<'local>(
    env: &mut JNIEnv<'local>,
    list: &[Entry],
) -> CallResult<JObjectArray<'local>> {
    to_array(env, "Entry", list, |env, e| to_entry(env, e))
}

/// Strings → `String[]`.
pub fn to_strings<'local>(
    env: &mut JNIEnv<'local>,
    list: &[String],
) -> CallResult<JObjectArray<'local>> {
    object_array(env, "java/lang/String", list.iter(), |env, s| {
        Ok(env.new_string(s)?.into())
    })
}

/// A checkpoint id as a Java `long`: END (`2^63-1`) is `Long.MAX_VALUE`.
pub fn to_long(id: u64) -> CallResult<i64> {
    i64::try_from(id).map_err(|_| Fail::Usage(format!("checkpoint {id} exceeds a long")))
}

/// The core's outcome → a Java `Outcome`.
pub fn to_outcome<'local>(env: &mut JNIEnv<'local>, o: &Outcome) -> CallResult<JObject<'local>> {
    let state = env.new_string(o.state.name())?;
    let ids = o
        .committed
        .iter()
        .map(|&c| to_long(c))
        .collect::<CallResult<Vec<i64>>>()?;
    let committed = env.new_long_array(jsize_of(ids.len())?)?;
    env.set_long_array_region(&committed, 0, &ids)?;
    let created = to_strings(env, &o.tags_created)?;
    let deleted = to_strings(env, &o.tags_deleted)?;
    let up_to = match o.committed_up_to {
        Some(u) => to_long(u)?,
        None => -1,
    };
    Ok(env.new_object(
        class("Outcome"),
        OUTCOME_CTOR,
        &[
            JValue::Object(&state),
            JValue::Object(&committed),
            JValue::Object(&created),
            JValue::Object(&deleted),
            JValue::Bool(o.restart_required.into()),
            JValue::Long(up_to),
        ],
    )?)
}

/// A batch's result → a Java `BatchOutcome`: `total` events applied and
/// no error, or the failure's applied count, merged outcome and error.
pub fn to_batch_outcome<'local>(
    env: &mut JNIEnv<'local>,
    total: usize,
    result: BatchResult,
) -> CallResult<JObject<'local>> {
    let (applied, outcome, error) = match result {
        Ok(outcome) => (total, outcome, JObject::null()),
        Err(failure) => {
            let error =
                component_exception(env, failure.error.kind.name(), &failure.error.message)?;
            (failure.applied, failure.outcome, error)
        }
    };
    let outcome = to_outcome(env, &outcome)?;
    Ok(env.new_object(
        class("BatchOutcome"),
        BATCH_OUTCOME_CTOR,
        &[
            JValue::Int(jsize_of(applied)?),
            JValue::Object(&outcome),
            JValue::Object(&error),
        ],
    )?)
}

/// The core's snapshot → a Java `Snapshot`.
pub fn to_snapshot<'local>(env: &mut JNIEnv<'local>, s: &Snapshot) -> CallResult<JObject<'local>> {
    let user = env.new_string(&s.commit_user)?;
    let subtasks: Vec<i32> = s
        .committables
        .iter()
        .map(|(subtask, _)| i32::try_from(*subtask).unwrap_or(i32::MAX))
        .collect();
    let subtask_array = env.new_int_array(jsize_of(subtasks.len())?)?;
    env.set_int_array_region(&subtask_array, 0, &subtasks)?;
    let payloads: Vec<Vec<u8>> = s.committables.iter().map(|(_, b)| b.clone()).collect();
    let payload_array = to_byte_arrays(env, payloads.iter())?;
    Ok(env.new_object(
        class("Snapshot"),
        SNAPSHOT_CTOR,
        &[
            JValue::Long(to_long(s.id)?),
            JValue::Object(&user),
            JValue::Long(to_long(s.identifier)?),
            JValue::Bool(s.watermark.is_some().into()),
            JValue::Long(s.watermark.unwrap_or(0)),
            JValue::Long(to_long(s.time_ms)?),
            JValue::Object(&subtask_array),
            JValue::Object(&payload_array),
        ],
    )?)
}

/// The core's tag → a Java `Tag`.
pub fn to_tag<'local>(env: &mut JNIEnv<'local>, t: &Tag) -> CallResult<JObject<'local>> {
    let name = env.new_string(&t.name)?;
    Ok(env.new_object(
        class("Tag"),
        TAG_CTOR,
        &[
            JValue::Object(&name),
            JValue::Long(to_long(t.snapshot_id)?),
            JValue::Long(to_long(t.identifier)?),
            JValue::Long(to_long(t.create_time_ms)?),
            JValue::Bool(t.expire_time_ms.is_some().into()),
            JValue::Long(to_long(t.expire_time_ms.unwrap_or(0))?),
        ],
    )?)
}

/// A list of Java objects built by `f` → a Java array of `class_name` (a
/// class of this package).
pub fn to_array<'local, T>(
    env: &mut JNIEnv<'local>,
    class_name: &str,
    list: &[T],
    f: impl FnMut(&mut JNIEnv<'local>, &T) -> CallResult<JObject<'local>>,
) -> CallResult<JObjectArray<'local>> {
    object_array(env, &class(class_name), list.iter(), f)
}

/// Java objects built by `f` → a Java array of the class named `class_name`
/// in full; each element's local reference is freed once stored, so a long
/// list does not fill the JNI frame.
fn object_array<'local, T>(
    env: &mut JNIEnv<'local>,
    class_name: &str,
    items: impl ExactSizeIterator<Item = T>,
    mut f: impl FnMut(&mut JNIEnv<'local>, T) -> CallResult<JObject<'local>>,
) -> CallResult<JObjectArray<'local>> {
    let array = env.new_object_array(jsize_of(items.len())?, class_name, JObject::null())?;
    for (i, item) in items.enumerate() {
        let element = f(env, item)?;
        env.set_object_array_element(&array, jsize_of(i)?, &element)?;
        env.delete_local_ref(element)?;
    }
    Ok(array)
}
