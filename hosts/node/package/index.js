// sink-coordinator: an exactly-once commit coordinator for streaming sinks,
// a WebAssembly component transpiled by jco (component/, built by build.mjs
// from the repository's dist/ artifact), with a typed API (index.d.ts).
//
// Every Coordinator, Writer and Table handle is its own component instance
// over its own storage and clock: an instance that trapped is dropped (its
// handle throws TrapError from then on; a Table instantiates anew).

import { readFileSync } from 'node:fs';

import { instantiate } from './component/sink-coordinator.js';
import { BackendError, CoordinatorError, ERRORS, InvalidConfigError, TrapError } from './errors.js';
import { SystemClock } from './storage.js';
import { checkVersion } from './version.js';

export * from './errors.js';
export {
  DEFAULT_MAX_VALUE_BYTES, FileSystemStorage, MAX_HINT_BYTES, ManualClock, MemoryStorage, SystemClock,
} from './storage.js';
export { COMPATIBLE_VERSIONS, checkVersion } from './version.js';
export { MAX_FILE_NAME_BYTES, encodeCommittable } from './paimon.js';
export { DEFAULT_STORAGE_DEADLINE_MS, WorkerStorage } from './worker_storage.js';

const COMPONENT = new URL('./component/', import.meta.url);

/** The range of `maxMemoryBytes`: 4 MiB to the wasm32 maximum, 4 GiB (the Python host's). */
export const MIN_MEMORY_BYTES = 4 * 1024 * 1024;
export const MAX_MEMORY_BYTES = 4 * 1024 * 1024 * 1024;

/** The transpiled component: its core modules compiled once, instances made from them. */
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
    const meta = JSON.parse(readFileSync(new URL('component.json', COMPONENT), 'utf8'));
    /** The component's WIT package version (checked before anything is linked). */
    this.version = checkVersion(meta.exports);
    /** The SHA-256 of the component the package was built from. */
    this.sha256 = meta.sha256;
    this.modules = new Map();
  }

  #coreModule = (file) => {
    let m = this.modules.get(file);
    if (!m) {
      m = new WebAssembly.Module(readFileSync(new URL(file, COMPONENT)));
      this.modules.set(file, m);
    }
    return m;
  };

  /** A new component instance over `storage` and `clock`: its exports. */
  instantiate(storage, clock) {
    const memories = [];
    const check = this.#memoryCheck(memories);
    // A Storage throws BackendError; jco lowers `{tag: 'err', val}` as the
    // import's `err` (anything else thrown traps the instance).
    const result = (f) => (...args) => {
      check();
      try {
        return f(...args);
      } catch (e) {
        if (e instanceof BackendError) return { tag: 'err', val: { tag: e.kind, val: e.message } };
        throw e;
      }
    };
    const s = {
      get: result((key) => storage.get(key) ?? undefined),
      putIfAbsent: result((key, value) => Boolean(storage.putIfAbsent(key, value))),
      put: result((key, value) => void storage.put(key, value)),
      delete: result((key) => void storage.delete(key)),
      list: result((prefix) => storage.list(prefix)),
    };
    const c = { nowMs: () => BigInt(clock.nowMs()) };
    // jco: the generated JS reads the unversioned import keys, the .d.ts
    // names the versioned ones; both are passed.
    const imports = {
      'sink:coordinator/storage': s,
      [`sink:coordinator/storage@${this.version}`]: s,
      'sink:coordinator/clock': c,
      [`sink:coordinator/clock@${this.version}`]: c,
    };
    // jco 1.35 on Node 20 (no JSPI): the glue wraps exports with
    // `try { WebAssembly.promising(f) } catch { f }`, each throw costing ~2 ms.
    // An identity `promising` while instantiating gives the catch branch's
    // result at once. The callbacks are synchronous, so is instantiate().
    const stub = typeof WebAssembly.promising !== 'function';
    if (stub) WebAssembly.promising = (f) => f;
    const core = (module, imp) => {
      const instance = new WebAssembly.Instance(module, imp);
      for (const v of Object.values(instance.exports)) if (v instanceof WebAssembly.Memory) memories.push(v);
      return instance;
    };
    let exports;
    try {
      exports = instantiate(this.#coreModule, imports, core);
    } finally {
      if (stub) delete WebAssembly.promising;
    }
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

// Lengths of a JavaScript byte array stay below 2^53: division, not `>>>`.
const lebLength = (n) => {
  let k = 1;
  for (; n >= 0x80; n = Math.floor(n / 0x80)) k++;
  return k;
};
const lebWrite = (out, pos, n) => {
  for (; n >= 0x80; n = Math.floor(n / 0x80)) out[pos++] = (n % 0x80) | 0x80;
  out[pos++] = n;
  return pos;
};
const blockLength = (list) => {
  let size = lebLength(list.length);
  for (const c of list) size += lebLength(c.length) + c.length;
  return size;
};
const writeBlock = (out, pos, list) => {
  pos = lebWrite(out, pos, list.length);
  for (const c of list) {
    pos = lebWrite(out, pos, c.length);
    out.set(c, pos);
    pos += c.length;
  }
  return pos;
};
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
 * A batch's `packed-event` arguments: every event's block is a view into
 * one buffer for the whole batch (one allocation per batch, not per event;
 * jco copies each view into the guest).
 */
const packedArgs = (events) => {
  const list = Array.from(events);
  const committables = list.map((e) => asArray(e.entry.committables));
  const buffer = new Uint8Array(committables.reduce((n, c) => n + blockLength(c), 0));
  let pos = 0;
  return list.map((e, i) => {
    const start = pos;
    pos = writeBlock(buffer, pos, committables[i]);
    return {
      subtask: e.subtask,
      attempt: e.attempt,
      checkpoint: u64(e.entry.checkpoint),
      committables: buffer.subarray(start, pos),
      watermark: optU64(e.entry.watermark),
      savepoint: Boolean(e.entry.savepoint),
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
    const packed = typeof this.#c.eventsPacked === 'function';
    const batch = packed
      ? packedArgs(events)
      : Array.from(events, (e) => ({ subtask: e.subtask, attempt: e.attempt, entry: entryArg(e.entry) }));
    return this.call(() => {
      try {
        return batchOutcome(packed ? this.#c.eventsPacked(batch) : this.#c.events(batch));
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
