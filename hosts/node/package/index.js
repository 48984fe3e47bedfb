// sink-coordinator: an exactly-once commit coordinator for streaming sinks,
// a WebAssembly component with a typed API (index.d.ts). Two runtimes run it:
// by default the component's core module (core/) through Node's WebAssembly
// API with the canonical ABI written by hand (core.js), or, with
// SINK_COORDINATOR_NODE_RUNTIME=jco, the component transpiled by jco
// (component/, jco.js). Both are built by build.mjs from the repository's
// dist/ artifact and give the same results byte for byte.
//
// Every Coordinator, Writer and Table handle is its own instance over its
// own storage and clock: an instance that trapped is dropped (its handle
// throws TrapError from then on; a Table instantiates anew).

import { CoreEngine } from './core.js';
import { blockLength, writeBlock } from './core_abi.js';
import { BackendError, CoordinatorError, ERRORS, InvalidConfigError, TrapError } from './errors.js';
import { JcoEngine } from './jco.js';
import { SystemClock } from './storage.js';

export * from './errors.js';
export {
  DEFAULT_MAX_VALUE_BYTES, FileSystemStorage, MAX_HINT_BYTES, ManualClock, MemoryStorage, SystemClock,
} from './storage.js';
export { COMPATIBLE_VERSIONS, checkVersion } from './version.js';
export { MAX_FILE_NAME_BYTES, encodeCommittable } from './paimon.js';
export { DEFAULT_STORAGE_DEADLINE_MS, WorkerStorage } from './worker_storage.js';

const ENGINES = {
  core: () => new CoreEngine(new URL('./core/', import.meta.url)),
  jco: () => new JcoEngine(new URL('./component/', import.meta.url)),
};

/**
 * The engine SINK_COORDINATOR_NODE_RUNTIME names (`core`, the default, or
 * `jco`), read when a Runtime is made; any other value is refused rather
 * than silently running the default.
 */
function engineFromEnvironment() {
  const name = process.env.SINK_COORDINATOR_NODE_RUNTIME || 'core';
  const make = Object.hasOwn(ENGINES, name) ? ENGINES[name] : undefined;
  if (!make) throw new RangeError(`SINK_COORDINATOR_NODE_RUNTIME must be core or jco, got ${JSON.stringify(name)}`);
  return make();
}

/** The range of `maxMemoryBytes`: 4 MiB to the wasm32 maximum, 4 GiB (the Python host's). */
export const MIN_MEMORY_BYTES = 4 * 1024 * 1024;
export const MAX_MEMORY_BYTES = 4 * 1024 * 1024 * 1024;

/** The component, compiled once (as its core module, or by jco); instances are made from it. */
export class Runtime {
  static #default;

  /** The package's component, loaded once per process. */
  static default() {
    Runtime.#default ??= new Runtime();
    return Runtime.#default;
  }

  /** The bound on an instance's linear memory, in bytes (`undefined`: the wasm32 4 GiB). */
  maxMemoryBytes;
  /** Exports object to the function that checks its instance's memory. */
  #memoryChecks = new WeakMap();
  #engine;

  /**
   * `maxMemoryBytes` (MIN_MEMORY_BYTES ..= MAX_MEMORY_BYTES) bounds each
   * instance's linear memory. V8 cannot cap a module's memory from outside,
   * so it is checked at every storage call the instance makes and at the end
   * of every call: past the bound, the call traps (TrapError naming the size
   * and the bound) and the instance is dropped, its memory freed. Between two
   * checks the guest's own limits (max-event-bytes, max-snapshot-bytes)
   * bound what one step can allocate.
   */
  constructor({ maxMemoryBytes } = {}) {
    if (maxMemoryBytes !== undefined) {
      if (!Number.isSafeInteger(maxMemoryBytes) || maxMemoryBytes < MIN_MEMORY_BYTES || maxMemoryBytes > MAX_MEMORY_BYTES) {
        throw new RangeError(
          `maxMemoryBytes must be an integer from ${MIN_MEMORY_BYTES} to ${MAX_MEMORY_BYTES}, got ${maxMemoryBytes}`,
        );
      }
      this.maxMemoryBytes = maxMemoryBytes;
    }
    this.#engine = engineFromEnvironment();
    /** The component's WIT package version (checked before anything is linked). */
    this.version = this.#engine.version;
    /** The SHA-256 of the component the package was built from. */
    this.sha256 = this.#engine.sha256;
  }

  /** A new instance over `storage` and `clock`: its exports. */
  instantiate(storage, clock) {
    const memories = [];
    const check = this.#memoryCheck(memories);
    const exports = this.#engine.instantiate(storage, clock, check, memories);
    this.#memoryChecks.set(exports, check);
    return exports;
  }

  /** Throws (trapping the call) if an instance's memory is past `maxMemoryBytes`. */
  checkMemory(exports) {
    this.#memoryChecks.get(exports)?.();
  }

  #memoryCheck(memories) {
    const max = this.maxMemoryBytes;
    if (max === undefined) return () => {};
    return () => {
      for (const m of memories) {
        const size = m.buffer.byteLength;
        if (size > max) {
          throw new Error(`the instance's linear memory grew to ${size} bytes, past the runtime's maxMemoryBytes (${max})`);
        }
      }
    };
  }
}

const u64 = (v) => BigInt(v);
const optU64 = (v) => (v === undefined || v === null ? undefined : BigInt(v));
const entryArg = (e) => ({
  checkpoint: u64(e.checkpoint),
  committables: [...e.committables],
  watermark: optU64(e.watermark),
  savepoint: Boolean(e.savepoint),
});

const asArray = (committables) => (Array.isArray(committables) ? committables : Array.from(committables));

/**
 * The committables as one block (WIT 0.2.2 `packed-event`): an unsigned
 * LEB128 count, then per committable an unsigned LEB128 length and its
 * bytes; one Uint8Array, sized before it is written.
 */
export function packCommittables(committables) {
  const list = asArray(committables);
  const out = new Uint8Array(blockLength(list));
  writeBlock(out, 0, list);
  return out;
}

/**
 * A batch's `packed-event`s with each block's committables and size, not
 * yet written: everything a bad argument can throw is thrown here, before
 * the call (so it is the caller's error, not a trap).
 */
const planBatch = (events) => Array.from(events, (e) => {
  const list = asArray(e.entry.committables);
  return {
    subtask: e.subtask,
    attempt: e.attempt,
    checkpoint: u64(e.entry.checkpoint),
    list,
    size: blockLength(list),
    watermark: optU64(e.entry.watermark),
    savepoint: Boolean(e.entry.savepoint),
  };
});

/**
 * jco's `packed-event` arguments: every event's block is a view into one
 * buffer for the whole batch (one allocation per batch, not per event; jco
 * copies each view into the guest). The core runtime writes the blocks
 * straight into guest memory instead (its `eventsPlanned`).
 */
const packedArgs = (plan) => {
  const buffer = new Uint8Array(plan.reduce((n, e) => n + e.size, 0));
  let pos = 0;
  return plan.map((e) => {
    const start = pos;
    pos = writeBlock(buffer, pos, e.list);
    return {
      subtask: e.subtask,
      attempt: e.attempt,
      checkpoint: e.checkpoint,
      committables: buffer.subarray(start, pos),
      watermark: e.watermark,
      savepoint: e.savepoint,
    };
  });
};

/** A batch's compact outcome (WIT `batch-outcome`) as a full Outcome. */
const batchOutcome = (o) => ({
  state: o.state,
  committed: o.effects?.committed ?? new BigUint64Array(0),
  tagsCreated: o.effects?.tagsCreated ?? [],
  tagsDeleted: o.effects?.tagsDeleted ?? [],
  restartRequired: o.effects?.restartRequired ?? false,
  committedUpTo: o.committedUpTo,
});

class Handle {
  #discarded = null;
  #exports = null;

  constructor(storage, clock, runtime) {
    this.runtime = runtime ?? Runtime.default();
    this.storage = storage;
    this.clock = clock ?? new SystemClock();
  }

  get exports() {
    this.#exports ??= this.runtime.instantiate(this.storage, this.clock);
    return this.#exports;
  }

  /** Whether a trap discarded this handle. */
  get discarded() {
    return this.#discarded !== null;
  }

  call(fn) {
    if (this.#discarded !== null) throw new TrapError(`the instance was discarded after a trap: ${this.#discarded}`);
    try {
      const value = fn();
      if (this.#exports !== null) this.runtime.checkMemory(this.#exports);
      return value;
    } catch (e) {
      if (e instanceof CoordinatorError) throw e;
      const p = e && Object.hasOwn(e, 'payload') ? e.payload : undefined;
      if (p && typeof p.kind === 'string' && typeof p.message === 'string' && ERRORS[p.kind]) {
        throw new ERRORS[p.kind](p.message);
      }
      const message = e instanceof Error ? e.message : String(e);
      this.trapped(message);
      throw new TrapError(message, { cause: e });
    }
  }

  trapped(message) {
    this.#discarded = message;
    this.#exports = null;
  }

  resetInstance() {
    this.#exports = null;
  }
}

/** A storage that a writer links but never calls. */
const NO_STORAGE = {
  get: () => { throw new BackendError('a writer has no storage'); },
  putIfAbsent: () => { throw new BackendError('a writer has no storage'); },
  put: () => { throw new BackendError('a writer has no storage'); },
  delete: () => { throw new BackendError('a writer has no storage'); },
  list: () => { throw new BackendError('a writer has no storage'); },
};

/** The WIT `table-format` cases. */
const TABLE_FORMATS = Object.freeze(['native', 'paimon']);

/** The commit coordinator of one sink (WIT resource `coordinator`). */
export class Coordinator extends Handle {
  #c;
  constructor(config, storage, { clock, restore, runtime, tableFormat } = {}) {
    super(storage, clock, runtime);
    const cfg = {
      parallelism: config.parallelism,
      commitUser: config.commitUser,
      checkpointing: config.checkpointing ?? true,
      finalCommit: config.finalCommit ?? 'on-checkpoint',
      forceCreateSnapshot: config.forceCreateSnapshot ?? false,
      savepointAutoTag: config.savepointAutoTag ?? false,
      tagTimeRetainedMs: optU64(config.tagTimeRetainedMs),
      recovery: config.recovery ?? 'restart',
    };
    const point = restore && {
      checkpoint: u64(restore.checkpoint),
      state: restore.state,
      finishedSubtasks: Uint32Array.from(restore.finishedSubtasks ?? []),
    };
    this.#c = this.call(() => new this.exports.coordinator.Coordinator(cfg, point ?? undefined));
    // As the Rust host's RuntimeOptions::table_format: native makes no call.
    if (tableFormat !== undefined && tableFormat !== 'native') this.setTableFormat(tableFormat);
  }
  setLimits(limits) {
    const l = {
      maxCommittableBytes: u64(limits.maxCommittableBytes ?? 1n << 30n),
      maxEventBytes: u64(limits.maxEventBytes ?? (5n << 30n) / 4n),
      maxSnapshotBytes: u64(limits.maxSnapshotBytes ?? (5n << 30n) / 4n),
    };
    this.call(() => this.#c.setLimits(l));
  }
  /**
   * Chooses the table format, `'native'` or `'paimon'` (WIT 0.2.5
   * `set-table-format`); only before `start`, else a fatal IllegalStateError.
   * A component older than 0.2.5 has no such export and writes the native
   * log only: `'native'` needs no call, `'paimon'` throws InvalidConfigError
   * without entering it (the coordinator stays usable), with the Rust host's
   * message. Any other value is a TypeError, thrown before the call.
   */
  setTableFormat(format) {
    if (!TABLE_FORMATS.includes(format)) {
      throw new TypeError(`unknown table format ${JSON.stringify(format)} (native or paimon)`);
    }
    this.call(() => {
      if (typeof this.#c.setTableFormat === 'function') return this.#c.setTableFormat(format);
      if (format === 'native') return undefined;
      throw new InvalidConfigError(
        `table-format ${format}: the component has no set-table-format (it needs WIT 0.2.5 or later)`,
      );
    });
  }
  start() { return this.call(() => this.#c.start()); }
  event(subtask, attempt, entry) { return this.call(() => this.#c.event(subtask, attempt, entryArg(entry))); }
  /**
   * Many writer events in one crossing (WIT 0.2.1 `events`): applied in order
   * exactly as `event` would, stopping at the first error; one merged Outcome.
   * An error is thrown as its kind's class with `applied` (the failing event's
   * index: the events before it stay applied; after `declined` or `storage`
   * resend from there) and `outcome` (what the applied events did).
   *
   * A 0.2.2 component gets the batch through `events-packed`: each event's
   * committables cross as one block (one guest allocation per event instead
   * of one per committable); a 0.2.1 component gets `events`.
   */
  events(events) {
    let run;
    if (typeof this.#c.eventsPacked === 'function') {
      const plan = planBatch(events);
      if (typeof this.#c.eventsPlanned === 'function') {
        run = () => this.#c.eventsPlanned(plan);
      } else {
        const batch = packedArgs(plan);
        run = () => this.#c.eventsPacked(batch);
      }
    } else {
      const batch = Array.from(events, (e) => ({ subtask: e.subtask, attempt: e.attempt, entry: entryArg(e.entry) }));
      run = () => this.#c.events(batch);
    }
    return this.call(() => {
      try {
        return batchOutcome(run());
      } catch (e) {
        const p = e && Object.hasOwn(e, 'payload') ? e.payload : undefined;
        if (p && p.error && typeof p.error.kind === 'string' && ERRORS[p.error.kind]) {
          const err = new ERRORS[p.error.kind](p.error.message);
          err.applied = p.applied;
          err.outcome = batchOutcome(p.outcome);
          throw err;
        }
        throw e;
      }
    });
  }
  restored(subtask, attempt, checkpoint, entries) {
    return this.call(() => this.#c.restored(subtask, attempt, u64(checkpoint), entries.map(entryArg)));
  }
  subtaskReset(subtask, checkpoint) { return this.call(() => this.#c.subtaskReset(subtask, optU64(checkpoint))); }
  checkpoint(checkpoint) { return this.call(() => this.#c.checkpoint(u64(checkpoint))); }
  checkpointComplete(checkpoint) { return this.call(() => this.#c.checkpointComplete(u64(checkpoint))); }
  checkpointAborted(checkpoint) { return this.call(() => this.#c.checkpointAborted(u64(checkpoint))); }
  close() { return this.call(() => this.#c.close()); }
  state() { return this.call(() => this.#c.state()); }
  committedUpTo() { return this.call(() => this.#c.committedUpTo()); }
}

/** The writer-side half for one subtask (WIT resource `writer`). */
export class Writer extends Handle {
  #w;
  constructor(subtask, { storage, clock, runtime } = {}) {
    super(storage ?? NO_STORAGE, clock, runtime);
    this.#w = this.call(() => new this.exports.writer.Writer(subtask));
  }
  report(checkpoint, committables, watermark, savepoint = false) {
    return this.call(() => this.#w.report(u64(checkpoint), [...committables], optU64(watermark), Boolean(savepoint)));
  }
  endInput(committables, watermark) {
    return this.call(() => this.#w.endInput([...committables], optU64(watermark)));
  }
  committed(checkpoint) { this.call(() => this.#w.committed(u64(checkpoint))); }
  checkpointAborted(checkpoint) { this.call(() => this.#w.checkpointAborted(u64(checkpoint))); }
  state() { return this.call(() => this.#w.state()); }
  restore(state, checkpoint) { return this.call(() => this.#w.restore(state, u64(checkpoint))); }
}

/** Reads the table's snapshot log and tags back (WIT interface `table`). */
export class Table extends Handle {
  constructor(storage, { clock, runtime } = {}) {
    super(storage, clock, runtime);
  }
  trapped() {
    this.resetInstance(); // stateless: the next call instantiates anew
  }
  latestSnapshot() { return this.call(() => this.exports.table.latestSnapshot()); }
  snapshotById(id) { return this.call(() => this.exports.table.snapshotById(u64(id))); }
  listSnapshots() { return this.call(() => this.exports.table.listSnapshots()); }
  listTags() { return this.call(() => this.exports.table.listTags()); }
}
