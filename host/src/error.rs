//! Host-level errors: the core's error classes (SEMANTICS 8) plus `trap`,
//! which only a host running the component can observe.

use std::fmt;

use sink_coordinator::{Error, ErrorKind};

/// What went wrong in one coordinator, writer or table call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostErrorKind {
    /// An error the coordinator itself returned.
    Core(ErrorKind),
    /// The guest trapped (a bug, or a host-imposed fuel or memory limit).
    /// Fatal: the instance's Store is discarded.
    Trap,
}

impl HostErrorKind {
    /// The kebab-case name of TRACE-FORMAT (`declined`, ..., `trap`).
    pub fn name(self) -> &'static str {
        match self {
            HostErrorKind::Core(kind) => kind.name(),
            HostErrorKind::Trap => "trap",
        }
    }

    /// Fatal errors leave the instance `failed`.
    pub fn is_fatal(self) -> bool {
        match self {
            HostErrorKind::Core(kind) => kind.is_fatal(),
            HostErrorKind::Trap => true,
        }
    }
}

/// An error of a call made through the host (native or component).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostError {
    pub kind: HostErrorKind,
    pub message: String,
}

impl HostError {
    pub fn new(kind: HostErrorKind, message: impl Into<String>) -> Self {
        HostError {
            kind,
            message: message.into(),
        }
    }

    pub fn trap(message: impl Into<String>) -> Self {
        Self::new(HostErrorKind::Trap, message)
    }

    pub fn core(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::new(HostErrorKind::Core(kind), message)
    }
}

impl From<Error> for HostError {
    fn from(e: Error) -> Self {
        HostError {
            kind: HostErrorKind::Core(e.kind),
            message: e.message,
        }
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for HostError {}

pub type HostResult<T> = Result<T, HostError>;
