//! Host-level errors: the core's error classes (SEMANTICS 8) plus `trap`,
//! which only a host running the component can observe.

#![warn(missing_docs)]

use std::fmt;

use sink_coordinator::{Error, ErrorKind, StorageError};

/// What went wrong in one coordinator, writer or table call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostErrorKind {
    /// An error the coordinator itself returned.
    Core(ErrorKind),
    /// The guest trapped (a bug, or a host-imposed fuel, memory or deadline
    /// limit). Fatal: the instance's Store is discarded.
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
///
/// On the native path a `storage` error keeps the storage failure it came
/// from as its [`source`](std::error::Error::source); through the component
/// only its text crosses (in the message), so equality ignores the source.
#[derive(Clone, Debug)]
pub struct HostError {
    /// The class: one of the core's, or `trap`.
    pub kind: HostErrorKind,
    /// What happened, in one line.
    pub message: String,
    source: Option<StorageError>,
}

impl HostError {
    /// An error of class `kind`.
    pub fn new(kind: HostErrorKind, message: impl Into<String>) -> Self {
        HostError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A guest trap.
    pub fn trap(message: impl Into<String>) -> Self {
        Self::new(HostErrorKind::Trap, message)
    }

    /// An error of one of the core's classes.
    pub fn core(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::new(HostErrorKind::Core(kind), message)
    }
}

impl From<Error> for HostError {
    fn from(e: Error) -> Self {
        HostError {
            kind: HostErrorKind::Core(e.kind),
            source: e.storage_source().cloned(),
            message: e.message,
        }
    }
}

impl PartialEq for HostError {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for HostError {}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// The result of a call made through the host.
pub type HostResult<T> = Result<T, HostError>;

/// A batch of writer events (`events`) stopped at an error: the events
/// before the failing one stay applied, the later ones were not looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchFailure {
    /// How many events were applied: the failing event's index. After a
    /// `declined` or `storage` error the instance stays usable and the host
    /// resends the events from this index (a `storage` error accepted the
    /// failing event's input; repeating it is safe). After a trap, 0: the
    /// instance is discarded and nothing is resent to it.
    pub applied: usize,
    /// What the applied events did, merged (committed snapshots, tags,
    /// restart-required), with the state and committed-up-to after the
    /// failing event.
    pub outcome: sink_coordinator::Outcome,
    /// The failing event's error.
    pub error: HostError,
}

impl From<Box<sink_coordinator::BatchError>> for Box<BatchFailure> {
    fn from(e: Box<sink_coordinator::BatchError>) -> Self {
        let e = *e;
        Box::new(BatchFailure {
            applied: e.applied,
            outcome: e.outcome,
            error: e.error.into(),
        })
    }
}

impl fmt::Display for BatchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {} of the batch: {}", self.applied, self.error)
    }
}

impl std::error::Error for BatchFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The result of a batch of writer events (the failure boxed: it is rare,
/// and large).
pub type BatchResult = Result<sink_coordinator::Outcome, Box<BatchFailure>>;
