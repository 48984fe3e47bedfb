// Type declarations of the sink-coordinator package. The WIT record, enum and
// variant types are jco's, generated from the component
// (component/interfaces/sink-coordinator-types.d.ts): u64 is bigint, an absent
// option is undefined, list<u8> is Uint8Array.

import type {
  CheckpointId,
  Config as WitConfig,
  Entry,
  FinalCommitMode,
  Lifecycle,
  Limits,
  Outcome,
  RecoveryMode,
  Snapshot,
  Tag,
} from './component/interfaces/sink-coordinator-types.js';

export type { CheckpointId, Entry, FinalCommitMode, Lifecycle, Limits, Outcome, RecoveryMode, Snapshot, Tag, WitConfig };

/**
 * How a coordinator writes its table (WIT `table-format`, component 0.2.5):
 * host configuration, not part of the state bytes (a restored coordinator is
 * given it again). Declared here, not taken from jco's declarations, so that
 * the type does not depend on the component the package was built from.
 */
export type TableFormat = 'native' | 'paimon';

/** A u64 argument: a bigint, or a safe integer number. */
export type U64 = bigint | number;

/** A coordinator's configuration; unset fields take the defaults shown. */
export interface Config {
  parallelism: number;
  commitUser: string;
  /** default true */
  checkpointing?: boolean;
  /** default 'on-checkpoint' */
  finalCommit?: FinalCommitMode;
  /** default false */
  forceCreateSnapshot?: boolean;
  /** default false */
  savepointAutoTag?: boolean;
  tagTimeRetainedMs?: U64;
  /** default 'restart' */
  recovery?: RecoveryMode;
}

/** What a writer reported, as an argument (an Entry returned by a Writer fits). */
export interface EntryInput {
  checkpoint: U64;
  committables: Iterable<Uint8Array>;
  watermark?: bigint | number | null;
  savepoint?: boolean;
}

/** One writer event of a batch (`Coordinator.events`). */
export interface WriterEventInput {
  subtask: number;
  attempt: number;
  entry: EntryInput;
}

/** Where a restarted coordinator resumes. */
export interface RestorePointInput {
  checkpoint: U64;
  state: Uint8Array;
  finishedSubtasks?: Iterable<number>;
}

/**
 * The table's object store. Throw BackendIOError or InvalidKeyError to fail a call. A value
 * passed to `putIfAbsent` or `put` is a fresh copy on either runtime: the storage may keep it.
 */
export interface Storage {
  get(key: string): Uint8Array | undefined;
  putIfAbsent(key: string, value: Uint8Array): boolean;
  put(key: string, value: Uint8Array): void;
  delete(key: string): void;
  /** The keys starting with `prefix`, in byte order of their UTF-8. */
  list(prefix: string): string[];
}

/** Milliseconds since the Unix epoch. */
export interface Clock {
  nowMs(): bigint;
}

/** A table in a Map (tests, examples) with the key rules of FileSystemStorage (a refused key or prefix is an InvalidKeyError) and no value bound. */
export declare class MemoryStorage implements Storage {
  readonly items: Map<string, Uint8Array>;
  get(key: string): Uint8Array | undefined;
  putIfAbsent(key: string, value: Uint8Array): boolean;
  put(key: string, value: Uint8Array): void;
  delete(key: string): void;
  list(prefix: string): string[];
}

export interface FileSystemStorageOptions {
  /** The largest value read or written (default DEFAULT_MAX_VALUE_BYTES, 2 GiB); a larger one is a ValueTooLargeError. */
  maxValueBytes?: number | bigint;
}

/** 2 GiB: the default `maxValueBytes` (the Rust host's). */
export declare const DEFAULT_MAX_VALUE_BYTES: number;
/** 4 KiB: the bound on a value under `hint/`. */
export declare const MAX_HINT_BYTES: number;

/**
 * A table in a local directory (the Rust host's layout; `sinkcoord inspect`
 * reads it). No link under the root is followed, a FIFO, device or
 * directory at a key is an InvalidKeyError, and values are bounded.
 */
export declare class FileSystemStorage implements Storage {
  constructor(root: string, options?: FileSystemStorageOptions);
  readonly root: string;
  readonly maxValueBytes: number;
  /** The temporary files of dead writers that opening the table removed (paths below the root). */
  readonly removedTempFiles: string[];
  get(key: string): Uint8Array | undefined;
  putIfAbsent(key: string, value: Uint8Array): boolean;
  put(key: string, value: Uint8Array): void;
  delete(key: string): void;
  list(prefix: string): string[];
}

/** The default deadline of one WorkerStorage call: 30,000 ms. */
export declare const DEFAULT_STORAGE_DEADLINE_MS: number;

/**
 * A Storage whose backend runs on a worker thread, so that a call that
 * never returns is cut off: past `callDeadlineMs` the worker is terminated
 * and the call throws a plain Error, which traps the calling instance (its
 * handle throws TrapError naming the operation and the key). The next call
 * starts a new worker. The backend's methods may be async (return
 * promises): the worker awaits them, so an async client serves the
 * component's synchronous storage. Costs a thread handoff per call (tens of µs).
 */
export declare class WorkerStorage implements Storage {
  /**
   * The worker imports `module` (a URL or an absolute path) and constructs
   * its export `exportName` with `args` (structured-cloned).
   */
  constructor(module: URL | string, exportName: string, args?: unknown[], options?: { callDeadlineMs?: number });
  /** A FileSystemStorage on a worker thread. */
  static fileSystem(root: string, options?: FileSystemStorageOptions, deadline?: { callDeadlineMs?: number }): WorkerStorage;
  readonly callDeadlineMs: number;
  get(key: string): Uint8Array | undefined;
  putIfAbsent(key: string, value: Uint8Array): boolean;
  put(key: string, value: Uint8Array): void;
  delete(key: string): void;
  list(prefix: string): string[];
  /** Stops the worker (a later call starts a new one). */
  close(): void;
}

export declare class SystemClock implements Clock {
  nowMs(): bigint;
}

export declare class ManualClock implements Clock {
  constructor(ms?: U64);
  ms: bigint;
  nowMs(): bigint;
}

/** The range of Runtime's `maxMemoryBytes`: 4 MiB ..= 4 GiB. */
export declare const MIN_MEMORY_BYTES: number;
export declare const MAX_MEMORY_BYTES: number;

/** The transpiled component inside the package. */
export declare class Runtime {
  static default(): Runtime;
  /**
   * `maxMemoryBytes` (4 MiB ..= 4 GiB; default none, the wasm32 4 GiB)
   * bounds each instance's linear memory, checked at every storage call and
   * at the end of every call: past it the call traps (TrapError) and the
   * instance is dropped. A RangeError outside the range.
   */
  constructor(options?: { maxMemoryBytes?: number });
  readonly maxMemoryBytes: number | undefined;
  readonly version: string;
  readonly sha256: string;
}

interface HandleOptions {
  clock?: Clock;
  runtime?: Runtime;
}

export declare class Coordinator {
  /**
   * `tableFormat` (default `'native'`: no call) is set before the
   * constructor returns, as `setTableFormat` would (a component older than
   * 0.2.5 refuses `'paimon'`: the constructor throws InvalidConfigError).
   */
  constructor(
    config: Config,
    storage: Storage,
    options?: HandleOptions & { restore?: RestorePointInput; tableFormat?: TableFormat },
  );
  readonly discarded: boolean;
  setLimits(limits: Partial<{ maxCommittableBytes: U64; maxEventBytes: U64; maxSnapshotBytes: U64 }>): void;
  /**
   * Chooses the table format (component 0.2.5; default `'native'`); only
   * before `start`, else IllegalStateError. `'paimon'`: an Apache Paimon
   * table, whose `schema/schema-0` must be in the storage and whose
   * committables are data-file metadata (a bad one is a fatal
   * InvalidEventError). A component older than 0.2.5 takes `'native'` with
   * no call and refuses `'paimon'` with InvalidConfigError.
   */
  setTableFormat(format: TableFormat): void;
  start(): Outcome;
  event(subtask: number, attempt: number, entry: EntryInput): Outcome;
  /**
   * Many writer events in one crossing (component 0.2.1 on; a 0.2.2
   * component gets them through `events-packed`): applied in order as
   * `event` would, stopping at the first error, which is thrown with
   * `applied` (the failing event's index) and `outcome` (the applied events'
   * merged outcome). Returns the merged outcome: committed snapshots and tags
   * concatenated, restart-required ORed, the last state and committed-up-to.
   */
  events(events: Iterable<WriterEventInput>): Outcome;
  restored(subtask: number, attempt: number, checkpoint: U64, entries: EntryInput[]): Outcome;
  subtaskReset(subtask: number, checkpoint?: U64 | null): Outcome;
  /** The coordinator's state bytes for `checkpoint`. */
  checkpoint(checkpoint: U64): Uint8Array;
  checkpointComplete(checkpoint: U64): Outcome;
  checkpointAborted(checkpoint: U64): Outcome;
  close(): Outcome;
  state(): Lifecycle;
  committedUpTo(): CheckpointId | undefined;
}

export declare class Writer {
  constructor(subtask: number, options?: HandleOptions & { storage?: Storage });
  readonly discarded: boolean;
  report(checkpoint: U64, committables: Iterable<Uint8Array>, watermark?: bigint | number | null, savepoint?: boolean): Entry;
  endInput(committables: Iterable<Uint8Array>, watermark?: bigint | number | null): Entry;
  committed(checkpoint: U64): void;
  checkpointAborted(checkpoint: U64): void;
  state(): Uint8Array;
  restore(state: Uint8Array, checkpoint: U64): Entry[];
}

export declare class Table {
  constructor(storage: Storage, options?: HandleOptions);
  latestSnapshot(): Snapshot | undefined;
  snapshotById(id: U64): Snapshot | undefined;
  listSnapshots(): Snapshot[];
  listTags(): Tag[];
}

/** A call's error; `kind` is the WIT kebab-case name, `detail` the component's message. */
export declare class CoordinatorError extends Error {
  static readonly kind: string;
  readonly kind: string;
  readonly detail: string;
  /** Set by `Coordinator.events`: how many events were applied (the failing event's index). */
  applied?: number;
  /** Set by `Coordinator.events`: what the applied events did, merged. */
  outcome?: Outcome;
}
export declare class DeclinedError extends CoordinatorError {}
export declare class StorageError extends CoordinatorError {}
export declare class IllegalStateError extends CoordinatorError {}
export declare class InvalidEventError extends CoordinatorError {}
export declare class InvalidConfigError extends CoordinatorError {}
export declare class CorruptStateError extends CoordinatorError {}
export declare class TrapError extends CoordinatorError {}
export declare const ERRORS: Record<string, typeof CoordinatorError>;

/** Thrown by a Storage: the component receives it as its `storage-error`. */
export declare class BackendError extends Error {
  constructor(message: string);
  readonly kind: 'io' | 'invalid-key';
}
export declare class BackendIOError extends BackendError {}
export declare class InvalidKeyError extends BackendError {}
/** A value above a storage's bound, refused before it is read or written (kind `io`). */
export declare class ValueTooLargeError extends BackendIOError {
  constructor(key: string, size: number, limit: number);
  readonly key: string;
  readonly size: number;
  readonly limit: number;
}

/** A component whose WIT version is outside COMPATIBLE_VERSIONS. */
export declare class IncompatibleComponent extends Error {
  readonly found: string[];
}

export declare const COMPATIBLE_VERSIONS: string;
/**
 * Committables as one block (WIT 0.2.2 `packed-event`): an unsigned LEB128
 * count, then per committable an unsigned LEB128 length and its bytes.
 */
export function packCommittables(committables: Iterable<Uint8Array>): Uint8Array;

/** The component's version if this package runs it (else throws IncompatibleComponent). */
export declare function checkVersion(exportNames: Iterable<string>): string;

/**
 * One Paimon partition or stats value: `null`, a `number` (INT, TINYINT,
 * SMALLINT, DATE in days since epoch: a 32-bit integer), a `bigint`
 * (BIGINT), a `string` (STRING, VARCHAR, CHAR) or a `boolean` (BOOLEAN).
 */
export type Datum = null | number | bigint | string | boolean;

/** One column's value stats (Paimon mode). */
export interface ColumnStats {
  column: string;
  /** `null` when every value of the column is null. */
  min: Datum;
  max: Datum;
  /** Absent or `null`: the writer does not know (encoded as -1). */
  nullCount?: bigint | number | null;
}

/**
 * A new data file of a Paimon append table, as a writer reports it. The
 * 64-bit fields take a bigint or a safe integer number.
 */
export interface DataFile {
  /** The plain file name, e.g. `data-<uuid>-0.parquet`, under the partition's `bucket-0/`. */
  fileName: string;
  fileSize: U64;
  rowCount: U64;
  /** The table's current schema id. */
  schemaId: U64;
  minSequenceNumber: bigint | number;
  maxSequenceNumber: bigint | number;
  /** Epoch milliseconds (UTC). */
  creationTimeMillis: bigint | number;
  /** One value per partition key, in key order; absent or empty for an unpartitioned table. */
  partition?: readonly Datum[];
  /** Absent or empty: no value stats. */
  valueStats?: readonly ColumnStats[];
}

/** The longest file name the coordinator accepts, in UTF-8 bytes (255). */
export declare const MAX_FILE_NAME_BYTES: number;

/**
 * A Paimon-mode committable (encoding `PCM` v1, docs/paimon.md): the bytes
 * `Writer.report` carries for one data file. Throws TypeError for a field of
 * the wrong type and RangeError for a value out of range or a file name that
 * is not a plain name (the checks the coordinator makes without the table).
 */
export declare function encodeCommittable(dataFile: DataFile): Uint8Array;
