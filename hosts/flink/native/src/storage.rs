//! JNI exports of a table's storage opened by URL (a local directory, or an
//! object store: `s3://`, `gs://`, `az://`), the host crate's
//! [`AnyStorage`]. The coordinator and the table reader open their storage
//! with [`open`]; the writers put their data files through a storage handle
//! (`NativeStorage` in Java), so that on an object store the JobManager and
//! the TaskManagers reach the same table without sharing a disk.

use jni::objects::{JByteArray, JObjectArray, JString};
use jni::sys::{jboolean, jlong};
use jni::JNIEnv;
use sink_coordinator_host::core::Storage;
use sink_coordinator_host::storage::{open_url_with, AnyStorage};

use crate::call::{into_handle, jni_exports, CallResult, Fail};
use crate::convert;

type Handle = AnyStorage;

/// Opens the table storage at `location` with an object store's `options`
/// (`String[]` of alternating keys and values, object_store's keys such as
/// `aws_endpoint`; null for none). `create`: a missing local directory is
/// made; otherwise it must exist (object stores need nothing made).
pub fn open(
    env: &mut JNIEnv<'_>,
    location: &JString<'_>,
    options: &JObjectArray<'_>,
    create: bool,
    what: &str,
) -> CallResult<AnyStorage> {
    let location: String = env.get_string(location)?.into();
    let options = convert::options(env, options)?;
    open_url_with(&location, create, &options)
        .map_err(|e| Fail::Usage(format!("cannot open the {what} {location}: {e}")))
}

jni_exports! {
    /// `long storageOpen(String location, String[] options, boolean create)`.
    fn storageOpen(
        env,
        location: JString<'local>,
        options: JObjectArray<'local>,
        create: jboolean,
    ) -> jlong {
        Ok(into_handle(open(env, &location, &options, create != 0, "table")?))
    }

    /// `byte[] storageGet(long handle, String key)`: null if absent.
    fn storageGet(env, s: &mut Handle, key: JString<'local>) -> JByteArray<'local> {
        let key: String = env.get_string(&key)?.into();
        match s.get(&key).map_err(Fail::Storage)? {
            Some(value) => Ok(env.byte_array_from_slice(&value)?),
            None => Ok(JByteArray::default()),
        }
    }

    /// `void storagePut(long handle, String key, byte[] value)`: overwrites.
    fn storagePut(env, s: &mut Handle, key: JString<'local>, value: JByteArray<'local>) -> () {
        let key: String = env.get_string(&key)?.into();
        let value = convert::bytes(env, &value, "a storage value")?;
        s.put(&key, &value).map_err(Fail::Storage)
    }

    /// `boolean storagePutIfAbsent(long handle, String key, byte[] value)`:
    /// true if this call created the key.
    fn storagePutIfAbsent(
        env,
        s: &mut Handle,
        key: JString<'local>,
        value: JByteArray<'local>,
    ) -> jboolean {
        let key: String = env.get_string(&key)?.into();
        let value = convert::bytes(env, &value, "a storage value")?;
        s.put_if_absent(&key, &value).map(jboolean::from).map_err(Fail::Storage)
    }

    /// `void storageDelete(long handle, String key)`: a missing key is fine.
    fn storageDelete(env, s: &mut Handle, key: JString<'local>) -> () {
        let key: String = env.get_string(&key)?.into();
        s.delete(&key).map_err(Fail::Storage)
    }

    /// `String[] storageList(long handle, String prefix)`: in byte order.
    fn storageList(env, s: &mut Handle, prefix: JString<'local>) -> JObjectArray<'local> {
        let prefix: String = env.get_string(&prefix)?.into();
        let keys = s.list(&prefix).map_err(Fail::Storage)?;
        convert::to_strings(env, &keys)
    }

    free fn storageFree(Handle);
}
