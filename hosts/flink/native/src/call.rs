//! Fencing of every exported function: a panic must never unwind into the
//! JVM (undefined behaviour), and every failure becomes one Java exception.
//!
//! - a component error (SEMANTICS 8, or a trap) → `ComponentException(kind,
//!   message)`, so Java code can tell `declined` and `storage` from fatal;
//! - a misuse of the library (closed handle, negative checkpoint id) →
//!   `IllegalArgumentException`;
//! - a JNI failure with a Java exception pending → that exception;
//! - a panic → `IllegalStateException` naming the panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

use jni::objects::{JByteArray, JObject, JObjectArray, JString, JValue};
use jni::sys::{jlong, jobject};
use jni::JNIEnv;
use sink_coordinator_host::core::StorageError;
use sink_coordinator_host::HostError;

pub const COMPONENT_EXCEPTION: &str = "io/sinkcoordinator/flink/component/ComponentException";
/// The JVM binding's storage error, which a Java `Storage` throws.
pub const BACKEND_EXCEPTION: &str = "io/sinkcoordinator/jvm/BackendException";

/// Why an exported function could not return a value.
#[derive(Debug)]
pub enum Fail {
    /// The component (or the host library) reported an error.
    Host(HostError),
    /// The caller broke the library's contract.
    Usage(String),
    /// A JNI call failed (usually: a Java exception is pending).
    Jni(jni::errors::Error),
    /// A storage handle's call failed (`NativeStorage`): a Java
    /// `BackendException` of the error's kind.
    Storage(StorageError),
}

impl From<HostError> for Fail {
    fn from(e: HostError) -> Self {
        Fail::Host(e)
    }
}

impl From<jni::errors::Error> for Fail {
    fn from(e: jni::errors::Error) -> Self {
        Fail::Jni(e)
    }
}

pub type CallResult<T> = Result<T, Fail>;

/// Runs `f`; on failure or panic throws the matching Java exception and
/// returns `fallback` (which the JVM ignores once an exception is pending).
pub fn fenced<'local, T>(
    env: &mut JNIEnv<'local>,
    fallback: T,
    f: impl FnOnce(&mut JNIEnv<'local>) -> CallResult<T>,
) -> T {
    let result = catch_unwind(AssertUnwindSafe(|| f(env)));
    let fail = match result {
        Ok(Ok(value)) => return value,
        Ok(Err(fail)) => fail,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Fail::Usage(format!("panic in the native library: {text}"))
        }
    };
    throw(env, fail);
    fallback
}

fn throw(env: &mut JNIEnv<'_>, fail: Fail) {
    // A pending exception (from a failed JNI call) is the most precise one.
    if env.exception_check().unwrap_or(false) {
        return;
    }
    let thrown = match fail {
        Fail::Host(e) => throw_component(env, e.kind.name(), &e.message),
        Fail::Usage(message) => env.throw_new("java/lang/IllegalArgumentException", message),
        Fail::Jni(e) => env.throw_new("java/lang/IllegalStateException", format!("JNI: {e}")),
        Fail::Storage(e) => throw_backend(env, &e),
    };
    if thrown.is_err() && !env.exception_check().unwrap_or(false) {
        // Nothing else can be reported: the JVM is out of memory or broken.
        let _ = env.throw_new(
            "java/lang/Error",
            "sinkcoord_flink: cannot throw an exception",
        );
    }
}

fn throw_component(env: &mut JNIEnv<'_>, kind: &str, message: &str) -> jni::errors::Result<()> {
    let exception = component_exception(env, kind, message)?;
    env.throw(jni::objects::JThrowable::from(exception))
}

/// Throws `BackendException.invalidKey(message)` or `.io(message)`.
fn throw_backend(env: &mut JNIEnv<'_>, e: &StorageError) -> jni::errors::Result<()> {
    let factory = match e {
        StorageError::InvalidKey(_) => "invalidKey",
        _ => "io",
    };
    let message = env.new_string(e.to_string())?;
    let exception = env
        .call_static_method(
            BACKEND_EXCEPTION,
            factory,
            "(Ljava/lang/String;)Lio/sinkcoordinator/jvm/BackendException;",
            &[JValue::Object(&message)],
        )?
        .l()?;
    env.throw(jni::objects::JThrowable::from(exception))
}

/// A `ComponentException(kind, message)`, not thrown (a batch returns its
/// error inside its result, with what was applied before it).
pub fn component_exception<'local>(
    env: &mut JNIEnv<'local>,
    kind: &str,
    message: &str,
) -> jni::errors::Result<JObject<'local>> {
    let kind = env.new_string(kind)?;
    let message = env.new_string(message)?;
    env.new_object(
        COMPONENT_EXCEPTION,
        "(Ljava/lang/String;Ljava/lang/String;)V",
        &[JValue::Object(&kind), JValue::Object(&message)],
    )
}

/// What an exported function returns to Java: the raw JNI value, and (its
/// `Default`) what it returns when it throws instead, which the JVM ignores.
pub trait ToJava: Default {
    /// The JNI type in the exported signature.
    type Raw;
    /// The value as the JVM receives it.
    fn into_raw(self) -> Self::Raw;
}

impl ToJava for () {
    type Raw = ();
    fn into_raw(self) {}
}

impl ToJava for jni::sys::jboolean {
    type Raw = jni::sys::jboolean;
    fn into_raw(self) -> jni::sys::jboolean {
        self
    }
}

impl ToJava for jlong {
    type Raw = jlong;
    fn into_raw(self) -> jlong {
        self
    }
}

macro_rules! object_returns {
    ($($object:ident),*) => {$(
        impl<'local> ToJava for $object<'local> {
            type Raw = jobject;
            fn into_raw(self) -> jobject {
                JObject::from(self).into_raw()
            }
        }
    )*};
}
object_returns!(JObject, JString, JByteArray, JObjectArray);

/// Defines the native methods of the Java class
/// `io.sinkcoordinator.flink.component.Native`, so that the JNI plumbing
/// (the `JNIEnv` and class parameters, [`fenced`], the raw return value,
/// the handle) is written once. Each function is named as its Java method;
/// it is exported as the symbol the JVM looks up,
/// `Java_io_sinkcoordinator_flink_component_Native_<method>` (the method
/// names have no `_` or non-ASCII letter, which JNI would escape). Three
/// forms:
///
/// - `fn method(env, value: &mut Type, args...) -> R { body }`: the first
///   Java parameter is a `long handle` made by [`into_handle`]`::<Type>`;
///   the body runs with the JNI env and the locked value;
/// - `fn method(env, args...) -> R { body }`: no handle (constructors);
/// - `free fn method(Type);`: frees the handle (the wrapper's `close`).
///
/// `R` is a [`ToJava`] type; the body returns a `CallResult<R>` (a failure
/// throws the matching Java exception). The lifetime `'local` names the
/// JNI frame of the call.
macro_rules! jni_exports {
    () => {};
    (
        $(#[$meta:meta])*
        fn $method:ident($env:ident, $value:ident: &mut $handle:ty $(, $arg:ident: $ty:ty)* $(,)?)
            -> $ret:ty $body:block
        $($rest:tt)*
    ) => {
        $crate::call::jni_exports! {
            $(#[$meta])*
            fn $method($env, handle: jni::sys::jlong $(, $arg: $ty)*) -> $ret {
                // SAFETY: the Java wrapper passes its live handle (see `with_handle`).
                let mut $value = unsafe { $crate::call::with_handle::<$handle>(handle)? };
                $body
            }
            $($rest)*
        }
    };
    (
        $(#[$meta:meta])*
        fn $method:ident($env:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty $body:block
        $($rest:tt)*
    ) => {
        $(#[$meta])*
        #[export_name = concat!("Java_io_sinkcoordinator_flink_component_Native_", stringify!($method))]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub extern "system" fn $method<'local>(
            mut env: jni::JNIEnv<'local>,
            _class: jni::objects::JClass<'local>,
            $($arg: $ty),*
        ) -> <$ret as $crate::call::ToJava>::Raw {
            let value = $crate::call::fenced(
                &mut env,
                Default::default(),
                |$env: &mut jni::JNIEnv<'local>| -> $crate::call::CallResult<$ret> { $body },
            );
            $crate::call::ToJava::into_raw(value)
        }
        $crate::call::jni_exports! { $($rest)* }
    };
    (
        $(#[$meta:meta])*
        free fn $method:ident($handle:ty);
        $($rest:tt)*
    ) => {
        $(#[$meta])*
        #[export_name = concat!("Java_io_sinkcoordinator_flink_component_Native_", stringify!($method))]
        #[allow(non_snake_case)]
        pub extern "system" fn $method<'local>(
            _env: jni::JNIEnv<'local>,
            _class: jni::objects::JClass<'local>,
            handle: jni::sys::jlong,
        ) {
            // SAFETY: called once by the wrapper's close, which then forgets the handle.
            unsafe { $crate::call::free_handle::<$handle>(handle) }
        }
        $crate::call::jni_exports! { $($rest)* }
    };
}
pub(crate) use jni_exports;

/// Moves `value` to the heap; the `long` is its handle.
pub fn into_handle<T>(value: T) -> jlong {
    Box::into_raw(Box::new(Mutex::new(value))) as jlong
}

/// Locks the value behind a handle made by [`into_handle`] with the same `T`.
///
/// # Safety
/// `handle` must come from `into_handle::<T>` and not have been freed; the
/// Java wrappers guarantee both (they null their handle in `close`).
pub unsafe fn with_handle<T>(handle: jlong) -> CallResult<MutexGuard<'static, T>> {
    if handle == 0 {
        return Err(Fail::Usage("the handle is closed".to_string()));
    }
    let cell: &'static Mutex<T> = &*(handle as *const Mutex<T>);
    // A panic while locked cannot leave a Store half-updated in a way a
    // later call could observe (wasmtime discards trapped Stores itself).
    Ok(cell.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Frees a handle made by [`into_handle`] with the same `T`.
///
/// # Safety
/// As for [`with_handle`]; the handle must not be used afterwards.
pub unsafe fn free_handle<T>(handle: jlong) {
    if handle != 0 {
        drop(Box::from_raw(handle as *mut Mutex<T>));
    }
}

/// A checkpoint id from Java (`long`, never negative: ids are `0 ..= 2^63-1`).
pub fn checkpoint_id(value: jlong, what: &str) -> CallResult<u64> {
    u64::try_from(value).map_err(|_| Fail::Usage(format!("{what} {value} is negative")))
}

/// An optional checkpoint id from Java: `-1` is none.
pub fn optional_checkpoint(value: jlong, what: &str) -> CallResult<Option<u64>> {
    if value == -1 {
        Ok(None)
    } else {
        checkpoint_id(value, what).map(Some)
    }
}

/// A subtask index from Java (`int`, never negative).
pub fn subtask_index(value: i32) -> CallResult<u32> {
    u32::try_from(value).map_err(|_| Fail::Usage(format!("subtask {value} is negative")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_ids_from_java_longs() {
        assert_eq!(checkpoint_id(0, "c").unwrap(), 0);
        assert_eq!(checkpoint_id(i64::MAX, "c").unwrap(), i64::MAX as u64);
        assert!(matches!(checkpoint_id(-1, "c"), Err(Fail::Usage(m)) if m.contains("negative")));
        assert_eq!(optional_checkpoint(-1, "c").unwrap(), None);
        assert_eq!(optional_checkpoint(7, "c").unwrap(), Some(7));
        assert!(optional_checkpoint(-2, "c").is_err());
        assert!(subtask_index(-1).is_err());
        assert_eq!(subtask_index(3).unwrap(), 3);
    }

    #[test]
    fn handles_round_trip_and_refuse_null() {
        let h = into_handle(41u32);
        // SAFETY: `h` was just made by `into_handle::<u32>` and is freed once below.
        unsafe {
            *with_handle::<u32>(h).unwrap() += 1;
            assert_eq!(*with_handle::<u32>(h).unwrap(), 42);
            free_handle::<u32>(h);
            assert!(with_handle::<u32>(0).is_err());
        }
    }
}
