package sinkcoord

import (
	"errors"
	"fmt"
)

// ErrorKind is the WIT error-kind of a call's error (SEMANTICS), plus
// KindTrap for a trapped instance.
type ErrorKind uint8

const (
	// KindDeclined: refused, nothing changed, the instance stays usable.
	KindDeclined ErrorKind = iota
	// KindStorage: a storage import failed; the input was accepted and
	// repeating the call is safe.
	KindStorage
	// KindIllegalState: fatal, the call is not allowed in this state.
	KindIllegalState
	// KindInvalidEvent: fatal, the call's content breaks a rule.
	KindInvalidEvent
	// KindInvalidConfig: fatal, the configuration is rejected.
	KindInvalidConfig
	// KindCorruptState: fatal, state bytes cannot be decoded.
	KindCorruptState
	// KindTrap: the instance trapped (a guest bug, a host-imposed limit or
	// a failing host callback); it is discarded.
	KindTrap
)

var kindNames = [...]string{"declined", "storage", "illegal-state", "invalid-event", "invalid-config", "corrupt-state", "trap"}

// String is the WIT kebab-case name ("invalid-event").
func (k ErrorKind) String() string { return enumName(kindNames[:], k, "ErrorKind") }

// CoordinatorError is implemented by every error a coordinator, writer or
// table call returns: one type per kind, so callers use errors.As with the
// concrete type (*InvalidEventError) or this interface.
type CoordinatorError interface {
	error
	// Kind is the error's kind.
	Kind() ErrorKind
	// Detail is the component's message (it names the subtask and checkpoint).
	Detail() string
}

// DeclinedError: the call was refused and changed nothing; the instance goes on.
type DeclinedError struct{ Message string }

// StorageError: a storage import failed during the call; the input was
// accepted and repeating the call is safe.
type StorageError struct{ Message string }

// IllegalStateError: the call is not allowed in the instance's state (fatal).
type IllegalStateError struct{ Message string }

// InvalidEventError: the call's content breaks a rule or a size limit (fatal).
type InvalidEventError struct{ Message string }

// InvalidConfigError: the configuration or the limits are rejected (fatal).
type InvalidConfigError struct{ Message string }

// CorruptStateError: state bytes or table contents cannot be decoded (fatal).
type CorruptStateError struct{ Message string }

func (e *DeclinedError) Error() string      { return "declined: " + e.Message }
func (e *StorageError) Error() string       { return "storage: " + e.Message }
func (e *IllegalStateError) Error() string  { return "illegal-state: " + e.Message }
func (e *InvalidEventError) Error() string  { return "invalid-event: " + e.Message }
func (e *InvalidConfigError) Error() string { return "invalid-config: " + e.Message }
func (e *CorruptStateError) Error() string  { return "corrupt-state: " + e.Message }

func (e *DeclinedError) Kind() ErrorKind      { return KindDeclined }
func (e *StorageError) Kind() ErrorKind       { return KindStorage }
func (e *IllegalStateError) Kind() ErrorKind  { return KindIllegalState }
func (e *InvalidEventError) Kind() ErrorKind  { return KindInvalidEvent }
func (e *InvalidConfigError) Kind() ErrorKind { return KindInvalidConfig }
func (e *CorruptStateError) Kind() ErrorKind  { return KindCorruptState }

func (e *DeclinedError) Detail() string      { return e.Message }
func (e *StorageError) Detail() string       { return e.Message }
func (e *IllegalStateError) Detail() string  { return e.Message }
func (e *InvalidEventError) Detail() string  { return e.Message }
func (e *InvalidConfigError) Detail() string { return e.Message }
func (e *CorruptStateError) Detail() string  { return e.Message }

// TrapError: the instance trapped. Fatal: every later call on the same
// Coordinator, Writer or Table returns a TrapError too (a core runtime would
// let the host re-enter a guest whose allocator may be mid-operation;
// docs/embedding.md section 6). Cause is wazero's error, or what a Storage
// or Clock callback failed with.
type TrapError struct {
	Call  string
	Cause error
}

func (e *TrapError) Error() string   { return fmt.Sprintf("trap: %s: %v", e.Call, e.Cause) }
func (e *TrapError) Unwrap() error   { return e.Cause }
func (e *TrapError) Kind() ErrorKind { return KindTrap }
func (e *TrapError) Detail() string  { return fmt.Sprintf("%s: %v", e.Call, e.Cause) }

// BatchError is a batch (Events, EventsPacked) stopped at an error: the
// events before index Applied stay applied, Outcome is what they did merged
// (with the state and committed-up-to after the failing event), and Err is
// the failing event's error (one of the kind types, reachable through
// errors.As). After a declined or storage error, resend from Applied.
type BatchError struct {
	Applied uint32
	Outcome BatchOutcome
	Err     error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("batch stopped at event %d: %v", e.Applied, e.Err)
}
func (e *BatchError) Unwrap() error { return e.Err }

func newCallError(kind ErrorKind, message string) error {
	switch kind {
	case KindDeclined:
		return &DeclinedError{message}
	case KindStorage:
		return &StorageError{message}
	case KindIllegalState:
		return &IllegalStateError{message}
	case KindInvalidEvent:
		return &InvalidEventError{message}
	case KindInvalidConfig:
		return &InvalidConfigError{message}
	case KindCorruptState:
		return &CorruptStateError{message}
	}
	return &TrapError{Call: "lift", Cause: fmt.Errorf("unknown error kind %d (message %q)", kind, message)}
}

// BackendIOError is returned by a Storage when the backend failed; the
// component receives it as storage-error.io. Any other non-nil error a
// Storage returns is passed as io too, with its Error() as the message.
type BackendIOError struct{ Message string }

func (e *BackendIOError) Error() string { return e.Message }

// InvalidKeyError is returned by a Storage that refuses a key; the
// component receives it as storage-error.invalid-key.
type InvalidKeyError struct{ Message string }

func (e *InvalidKeyError) Error() string { return e.Message }

// IncompatibleComponentError: the core module's WIT package version is
// outside CompatibleVersions. The message is the one of every other host.
type IncompatibleComponentError struct {
	// The versions of the module's sink:coordinator exports, sorted.
	Found   []string
	message string
}

func (e *IncompatibleComponentError) Error() string { return e.message }

// storageErrorCase is how a Storage's error reaches the guest.
func storageErrorCase(err error) (invalidKey bool, message string) {
	var ik *InvalidKeyError
	if errors.As(err, &ik) {
		return true, ik.Message
	}
	var io *BackendIOError
	if errors.As(err, &io) {
		return false, io.Message
	}
	return false, err.Error()
}
