//! Scratch files shared by the CLI's integration tests.

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A file in a per-process scratch directory (`sinkcoord-<test>-<pid>` under
/// the system's temp dir), removed on drop; the directory goes with its last
/// file (tests run in parallel threads and share it, so only an empty
/// directory is removed).
#[allow(dead_code)] // not every test binary uses it
pub struct TempFile(PathBuf);

impl Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Writes `bytes` to `name` in the scratch directory of the test `test`.
#[allow(dead_code)]
pub fn temp_file(test: &str, name: &str, bytes: &[u8]) -> TempFile {
    let dir = std::env::temp_dir().join(format!("sinkcoord-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    TempFile(path)
}

/// A fresh scratch directory `sinkcoord-<test>-<name>-<pid>` under the
/// system's temp dir, emptied first and removed on drop (one per test, so
/// tests in parallel threads never share it).
#[allow(dead_code)] // not every test binary uses it
pub struct Scratch(pub PathBuf);

#[allow(dead_code)]
impl Scratch {
    pub fn new(test: &str, name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("sinkcoord-{test}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
