//! The error classes of SEMANTICS 8, as one small typed enum, and the error
//! every call returns.

use alloc::string::{String, ToString};
use core::fmt;

use crate::env::StorageError;

mod detail;
#[cfg(feature = "paimon")]
mod paimon;
mod reason;
mod text;
pub use detail::{Defect, StorageOp};
#[cfg(feature = "paimon")]
pub use paimon::PaimonDefect;
pub use reason::ErrorReason;

/// The class of an error (SEMANTICS 8); decides whether it is fatal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Refused; nothing changed; the instance stays usable.
    Declined,
    /// A storage import failed; the input was accepted; repeating the call is safe.
    Storage,
    /// Fatal: the call is not allowed in the instance's state.
    IllegalState,
    /// Fatal: the call's content breaks a rule (or a size limit).
    InvalidEvent,
    /// Fatal: the configuration (or a limit) is rejected.
    InvalidConfig,
    /// Fatal: state bytes or a table record cannot be decoded.
    CorruptState,
}

impl ErrorKind {
    /// Fatal errors move the instance to `failed`.
    pub fn is_fatal(self) -> bool {
        !matches!(self, ErrorKind::Declined | ErrorKind::Storage)
    }

    /// The kebab-case name used by the WIT interface and the trace format.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Declined => "declined",
            ErrorKind::Storage => "storage",
            ErrorKind::IllegalState => "illegal-state",
            ErrorKind::InvalidEvent => "invalid-event",
            ErrorKind::InvalidConfig => "invalid-config",
            ErrorKind::CorruptState => "corrupt-state",
        }
    }
}

/// An error of one coordinator, writer or table call: its class and its
/// typed [`ErrorReason`], whose [`Display`](fmt::Display) is the one-line
/// message naming the subtask and checkpoint involved. A `storage` error
/// keeps the storage failure it came from as its
/// [`source`](core::error::Error::source) (the message already includes
/// its text, which is all that crosses the WIT boundary: an error known
/// only by class and text is an [`ErrorReason::Text`]).
#[derive(Clone, Debug)]
pub struct Error {
    /// The class (SEMANTICS 8): [`ErrorReason::kind`] of the reason.
    pub kind: ErrorKind,
    reason: ErrorReason,
    source: Option<StorageError>,
}

impl Error {
    /// An error known only by its class and text ([`ErrorReason::Text`]).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorReason::Text {
            kind,
            text: message.into(),
        }
        .into()
    }

    /// Why the call failed.
    pub fn reason(&self) -> &ErrorReason {
        &self.reason
    }

    /// Why the call failed, taken out of the error.
    pub fn into_reason(self) -> ErrorReason {
        self.reason
    }

    /// What happened, in one line: the reason's text (without the class).
    pub fn message(&self) -> String {
        self.reason.to_string()
    }

    /// The storage failure that caused this error, if it is kept.
    pub fn storage_source(&self) -> Option<&StorageError> {
        match &self.reason {
            ErrorReason::Storage { error, .. } => Some(error),
            _ => self.source.as_ref(),
        }
    }

    /// Keeps the storage failure that caused this error as its source (an
    /// [`ErrorReason::Storage`] keeps its own).
    pub fn with_source(mut self, source: StorageError) -> Self {
        self.source = Some(source);
        self
    }
}

impl From<ErrorReason> for Error {
    fn from(reason: ErrorReason) -> Self {
        Error {
            kind: reason.kind(),
            reason,
            source: None,
        }
    }
}

/// Two errors are equal when their class and reason are, or their class
/// and message (an error known only by its text equals the typed one it
/// was rendered from): the message already carries the source's text, and
/// a source is not comparable (it may hold any backend's error).
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && (self.reason == other.reason || self.message() == other.message())
    }
}

impl Eq for Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.reason)
    }
}

impl core::error::Error for Error {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        self.storage_source()
            .map(|s| s as &(dyn core::error::Error + 'static))
    }
}

/// The result of every call.
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use core::error::Error as _;

    #[derive(Debug)]
    struct Disk;
    impl fmt::Display for Disk {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("disk full")
        }
    }
    impl core::error::Error for Disk {}

    #[test]
    fn the_cause_is_kept_as_the_source_chain() {
        let io = StorageError::backend("writing snapshot/1", Disk);
        assert_eq!(
            io.to_string(),
            "storage i/o error: writing snapshot/1: disk full"
        );
        let e = Error::from(ErrorReason::Storage {
            op: StorageOp::Committing {
                checkpoint: 1,
                snapshot: 1,
            },
            error: io,
        });
        assert_eq!(e.kind, ErrorKind::Storage);
        assert_eq!(
            e.to_string(),
            "storage: committing checkpoint 1 (snapshot 1): storage i/o error: writing snapshot/1: disk full"
        );
        let source = e.source().unwrap();
        assert_eq!(
            source.to_string(),
            "storage i/o error: writing snapshot/1: disk full"
        );
        assert_eq!(source.source().unwrap().to_string(), "disk full");
        // Equality is by class and reason, or class and message: the error
        // known only by its text (from the WIT boundary) equals it.
        assert_eq!(e, Error::new(ErrorKind::Storage, e.message()));
        assert_ne!(e, Error::new(ErrorKind::CorruptState, e.message()));
        assert!(Error::new(ErrorKind::InvalidEvent, "x").source().is_none());
        // A text error keeps the source it is given.
        let io = StorageError::backend("writing snapshot/1", Disk);
        let t = Error::new(ErrorKind::Storage, "committing: x").with_source(io);
        assert_eq!(
            t.source().unwrap().source().unwrap().to_string(),
            "disk full"
        );
    }

    #[test]
    fn the_kind_follows_from_the_reason() {
        let e = Error::from(ErrorReason::NoRestoreInProgress);
        assert_eq!(e.kind, ErrorKind::IllegalState);
        assert_eq!(
            e.to_string(),
            "illegal-state: restored: no restore in progress"
        );
        let e = Error::new(ErrorKind::Declined, "no");
        assert_eq!(
            e.reason(),
            &ErrorReason::Text {
                kind: ErrorKind::Declined,
                text: "no".to_string()
            }
        );
        assert_eq!(e.to_string(), "declined: no");
    }

    #[test]
    fn end_prints_as_end_where_a_checkpoint_is_named() {
        let e = Error::from(ErrorReason::NoStateYet {
            checkpoint: crate::types::END,
            state: crate::types::Lifecycle::Created,
        });
        assert_eq!(
            e.message(),
            "checkpoint END: the coordinator is created and has no state to take yet"
        );
    }
}
