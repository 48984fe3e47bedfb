//! The error classes of SEMANTICS 8, as one small typed enum, and the error
//! every call returns.

use alloc::string::String;
use core::fmt;

use crate::env::StorageError;

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

/// An error of one coordinator, writer or table call: its class and a
/// message naming the subtask and checkpoint involved. A `storage` error
/// keeps the storage failure it came from as its
/// [`source`](core::error::Error::source) (the message already includes
/// its text, which is all that crosses the WIT boundary).
#[derive(Clone, Debug)]
pub struct Error {
    /// The class (SEMANTICS 8).
    pub kind: ErrorKind,
    /// What happened, in one line.
    pub message: String,
    source: Option<StorageError>,
}

impl Error {
    /// An error of class `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }
    /// A `declined` error.
    pub fn declined(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::Declined, m)
    }
    /// A `storage` error (see also [`Self::with_source`]).
    pub fn storage(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::Storage, m)
    }
    /// An `illegal-state` error.
    pub fn illegal_state(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::IllegalState, m)
    }
    /// An `invalid-event` error.
    pub fn invalid_event(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidEvent, m)
    }
    /// An `invalid-config` error.
    pub fn invalid_config(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidConfig, m)
    }
    /// A `corrupt-state` error.
    pub fn corrupt_state(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::CorruptState, m)
    }

    /// The storage failure that caused this error, if it is kept.
    pub fn storage_source(&self) -> Option<&StorageError> {
        self.source.as_ref()
    }

    /// Keeps the storage failure that caused this error as its source.
    pub fn with_source(mut self, source: StorageError) -> Self {
        self.source = Some(source);
        self
    }
}

/// Two errors are equal when their class and message are: the message
/// already carries the source's text, and a source is not comparable
/// (it may hold any backend's error).
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl core::error::Error for Error {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        self.source
            .as_ref()
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
        let e = Error::storage(alloc::format!("committing checkpoint 1: {io}")).with_source(io);
        let source = e.source().unwrap();
        assert_eq!(
            source.to_string(),
            "storage i/o error: writing snapshot/1: disk full"
        );
        assert_eq!(source.source().unwrap().to_string(), "disk full");
        // Equality is by class and message.
        assert_eq!(e, Error::storage(e.message.clone()));
        assert!(Error::invalid_event("x").source().is_none());
    }
}
