//! Checks the backends' unit tests share.

use sink_coordinator::{Storage, StorageError};

/// A key is created once, `put` overwrites, and deleting a missing key
/// succeeds: what a backend must do before anything else is tested.
pub(crate) fn creates_once_overwrites_and_deletes(st: &mut dyn Storage) {
    assert_eq!(st.get("snapshot/1").unwrap(), None);
    assert!(st.put_if_absent("snapshot/1", b"first").unwrap());
    assert!(!st.put_if_absent("snapshot/1", b"second").unwrap());
    assert_eq!(
        st.get("snapshot/1").unwrap().as_deref(),
        Some(&b"first"[..])
    );
    st.put("hint/latest", b"a").unwrap();
    st.put("hint/latest", b"bb").unwrap();
    assert_eq!(st.get("hint/latest").unwrap().as_deref(), Some(&b"bb"[..]));
    st.delete("hint/latest").unwrap();
    st.delete("hint/latest").unwrap();
    assert_eq!(st.get("hint/latest").unwrap(), None);
}

/// Whether `r` is the refusal of a key (`invalid-key`).
pub(crate) fn is_invalid_key<T>(r: &Result<T, StorageError>) -> bool {
    matches!(r, Err(StorageError::InvalidKey(_)))
}
