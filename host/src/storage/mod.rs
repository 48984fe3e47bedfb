//! Storage backends for the `storage` import.
//!
//! - [`MemStorage`] (re-exported from the core): a map in memory, without key
//!   rules (the replayer's table: a trace may seed any key);
//!   [`SharedMemStorage`]: a map shared by handles of one process, with the
//!   key rules of every other backend.
//! - [`LocalDirStorage`]: one file per key under a root directory, with
//!   atomic create-once (`put_if_absent`), atomic overwrite (`put`), fsync of
//!   files and directories and symlink-safe key confinement.
//! - [`ObjectStorage`] (feature `object-store`): any store of the
//!   `object_store` crate (S3, GCS, Azure, its in-memory store) behind the
//!   synchronous import, `put_if_absent` being a conditional create.
//! - [`open_url`]: a backend by table URL (`file://`, a plain path,
//!   `memory://`, `s3://`, `gs://`, `az://`).
//!
//! Every backend that checks keys applies the same rules ([`check_key`],
//! [`check_prefix`]); `docs/storage-conformance.md` lists what a backend
//! must do, and the test kit's `storage_conformance` module checks it.
//!
//! The local directory and the in-memory map are not thin uses of
//! `object_store`'s `LocalFileSystem` and `InMemory`: `LocalFileSystem`
//! neither fsyncs the file and its directory nor refuses symbolic links
//! under the root, which is what [`LocalDirStorage`] adds, and the core's
//! map is what the native replayer and the simulator's twin compare
//! byte for byte. `memory://` opens `object_store`'s `InMemory` through
//! [`ObjectStorage`], so the object-store path runs without a server.

#[cfg(test)]
mod checks;
mod keys;
mod local;
mod memory;
#[cfg(feature = "object-store")]
mod object;
mod url;

pub use keys::{check_key, check_prefix};
pub use local::{
    LocalDirStorage, ValueTooLarge, DEFAULT_MAX_VALUE_BYTES, MAX_HINT_BYTES, TMP_PREFIX,
};
pub use memory::{MemStorage, SharedMemStorage};
#[cfg(feature = "object-store")]
pub use object::ObjectStorage;
pub use url::{open_url, open_url_with, AnyStorage, TableUrl, UrlError};
