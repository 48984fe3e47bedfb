//! The error classes of SEMANTICS 8, as one small typed enum.

use alloc::string::String;
use core::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Refused; nothing changed; the instance stays usable.
    Declined,
    /// A storage import failed; the input was accepted; repeating the call is safe.
    Storage,
    IllegalState,
    InvalidEvent,
    InvalidConfig,
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    pub fn declined(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::Declined, m)
    }
    pub fn storage(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::Storage, m)
    }
    pub fn illegal_state(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::IllegalState, m)
    }
    pub fn invalid_event(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidEvent, m)
    }
    pub fn invalid_config(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidConfig, m)
    }
    pub fn corrupt_state(m: impl Into<String>) -> Self {
        Self::new(ErrorKind::CorruptState, m)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

pub type Result<T> = core::result::Result<T, Error>;
