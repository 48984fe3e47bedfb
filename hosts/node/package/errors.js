// Errors: one class per error kind of a coordinator, writer or table call
// (WIT `error-kind`, plus `trap`), the errors a Storage throws (WIT
// `storage-error`), and the refusal of a component of another version.

/** A call returned an error; `kind` is the WIT kebab-case name. */
export class CoordinatorError extends Error {
  static kind = 'error';
  constructor(message) {
    super(`${new.target.kind}: ${message}`);
    this.name = new.target.name;
    /** The WIT kind (`declined`, ..., `trap`). */
    this.kind = new.target.kind;
    /** The component's message. */
    this.detail = message;
  }
}
/** The call was declined (not fatal). */
export class DeclinedError extends CoordinatorError { static kind = 'declined'; }
/** The table's storage failed during the call. */
export class StorageError extends CoordinatorError { static kind = 'storage'; }
/** The call is not allowed in the instance's state (fatal). */
export class IllegalStateError extends CoordinatorError { static kind = 'illegal-state'; }
/** The input breaks the protocol or a size limit (fatal). */
export class InvalidEventError extends CoordinatorError { static kind = 'invalid-event'; }
/** The configuration or limits are invalid (fatal). */
export class InvalidConfigError extends CoordinatorError { static kind = 'invalid-config'; }
/** State bytes or table contents cannot be decoded (fatal). */
export class CorruptStateError extends CoordinatorError { static kind = 'corrupt-state'; }
/** The component trapped: the handle is discarded, later calls throw this too. */
export class TrapError extends CoordinatorError { static kind = 'trap'; }

/** Error kind (WIT name) to its class. */
export const ERRORS = Object.fromEntries(
  [DeclinedError, StorageError, IllegalStateError, InvalidEventError, InvalidConfigError, CorruptStateError, TrapError].map(
    (c) => [c.kind, c],
  ),
);

/** Thrown by a Storage: the component receives it as its `storage-error`. */
export class BackendError extends Error {
  static kind = 'io';
  constructor(message) {
    super(message);
    this.name = new.target.name;
    this.kind = new.target.kind;
  }
}
/** The backend failed (WIT `storage-error.io`). */
export class BackendIOError extends BackendError { static kind = 'io'; }
/** The backend refuses the key (WIT `storage-error.invalid-key`). */
export class InvalidKeyError extends BackendError { static kind = 'invalid-key'; }

/**
 * A value above a storage's bound (FileSystemStorage `maxValueBytes`, or the
 * hint bound): refused before it is read or written. The component receives
 * it as `storage-error.io` with this message.
 */
export class ValueTooLargeError extends BackendIOError {
  constructor(key, size, limit) {
    const bound = key.startsWith('hint/') ? 'the hint limit' : "the storage's maxValueBytes";
    super(`the value of key "${key}" holds ${size} bytes, more than ${bound} (${limit} bytes)`);
    /** The key. */
    this.key = key;
    /** The value's size in bytes (at least `limit + 1` if it grew while read). */
    this.size = size;
    /** The bound that applies to the key. */
    this.limit = limit;
  }
}

/** A component refused at load: its version is outside COMPATIBLE_VERSIONS. */
export class IncompatibleComponent extends Error {
  constructor(message, found) {
    super(message);
    this.name = 'IncompatibleComponent';
    /** The versions the component exports (none, one, or several). */
    this.found = found;
  }
}
