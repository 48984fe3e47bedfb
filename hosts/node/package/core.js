// The package's default runtime: the component's core module (core/, the
// repository's dist/sink-coordinator-<version>.core.wasm, copied by build.mjs)
// run through Node's own WebAssembly API, with the canonical ABI written by
// hand (core_abi.js) instead of jco's generated glue. jco's glue makes a task
// object per call and per import call and lowers each record field through a
// generic path; this host writes a batch's events straight into guest memory
// with one allocation per event and lifts results with typed-array views.
//
// It gives the exports object the shape jco's instantiate() gives (classes
// `coordinator.Coordinator` and `writer.Writer`, functions under `table`, a
// result's `err` thrown as an error with `payload`), so index.js drives
// either runtime the same way (SINK_COORDINATOR_NODE_RUNTIME chooses).

import { readFileSync } from 'node:fs';

import { Guest, LIFECYCLE, enumCase, flag, s64, u32, u64, writeBlock } from './core_abi.js';
import * as L from './layout.js';
import { BackendError } from './errors.js';
import { checkVersion } from './version.js';

const FINAL_COMMIT = ['on-checkpoint', 'on-end-input'];
const RECOVERY = ['restart', 'continue'];
const TABLE_FORMAT = ['native', 'paimon'];
const STORAGE_ERROR = ['io', 'invalid-key'];
const keyDecoder = new TextDecoder();

/** A call's `err` result, thrown as jco throws it (index.js reads `payload`). */
class ResultError extends Error {
  constructor(payload) {
    super(payload?.error?.message ?? payload?.message ?? 'error');
    this.payload = payload;
  }
}

/** The compiled core module of one component version: instances are made from it. */
export class CoreEngine {
  /** `dir` holds sink-coordinator.core.wasm and core.json (written by build.mjs). */
  constructor(dir) {
    const meta = JSON.parse(readFileSync(new URL('core.json', dir), 'utf8'));
    this.module = new WebAssembly.Module(readFileSync(new URL('sink-coordinator.core.wasm', dir)));
    const names = WebAssembly.Module.exports(this.module).map((e) => e.name);
    // The core module's export names carry the WIT package version as the
    // component's do (`sink:coordinator/coordinator@V#[method]…`): the same
    // check, on the interface part, before anything is instantiated.
    this.version = checkVersion(names.map((n) => n.split('#')[0]));
    this.sha256 = meta.sha256;
    this.exportNames = new Set(names);
    this.imports = WebAssembly.Module.imports(this.module);
  }

  /** A new instance over `storage` and `clock`; `check()` runs at every storage call. */
  instantiate(storage, clock, check, memories) {
    const inst = new CoreInstance(this, storage, clock, check);
    memories.push(inst.guest.memory);
    return inst.exports();
  }
}

class CoreInstance {
  guest = new Guest();
  /** handle - 1 -> rep, for the resources this instance's guest created. */
  reps = [];
  /** Set while a call runs: a storage or clock callback must not call in again. */
  busy = false;

  constructor(engine, storage, clock, check) {
    this.engine = engine;
    this.storage = storage;
    this.clock = clock;
    this.check = check;
    const instance = new WebAssembly.Instance(engine.module, this.#imports());
    this.guest.bind(instance);
    this.x = instance.exports;
  }

  #imports() {
    const storageFns = {
      get: (kp, kl, ret) => this.#get(kp, kl, ret),
      'put-if-absent': (kp, kl, vp, vl, ret) => this.#putIfAbsent(kp, kl, vp, vl, ret),
      put: (kp, kl, vp, vl, ret) => this.#put(kp, kl, vp, vl, ret),
      delete: (kp, kl, ret) => this.#delete(kp, kl, ret),
      list: (pp, pl, ret) => this.#list(pp, pl, ret),
    };
    const resources = (kind) => ({
      // push returns the new length: the handle is the index + 1, never 0
      // (which the canonical ABI reserves).
      [`[resource-new]${kind}`]: (rep) => this.reps.push(rep),
      // This guest never drops a handle it created; forgetting the rep is
      // all a drop needs (the instance goes with its handle).
      [`[resource-drop]${kind}`]: (handle) => { this.reps[handle - 1] = undefined; },
    });
    const known = {
      'sink:coordinator/storage': storageFns,
      'sink:coordinator/clock': { 'now-ms': () => u64(this.clock.nowMs()) },
      '[export]sink:coordinator/coordinator': resources('coordinator'),
      '[export]sink:coordinator/writer': resources('writer'),
    };
    const imports = {};
    for (const { module, name } of this.engine.imports) {
      const f = known[module.split('@')[0]]?.[name];
      if (typeof f !== 'function') throw new Error(`the core module imports ${module}#${name}, which this host does not provide`);
      (imports[module] ??= {})[name] = f;
    }
    return imports;
  }

  // -------------------------------------------------------------------------
  // The storage imports: arguments read from guest memory, the result
  // written through the return pointer (result<T, storage-error>: the
  // discriminant at ret, the payload at ret + 4). A BackendError is the
  // result's `err`; anything else thrown unwinds the call, which traps.
  // -------------------------------------------------------------------------

  #key(p, n) {
    const g = this.guest;
    g.refresh();
    return keyDecoder.decode(g.u8.subarray(p, g.span(p, n, 1)));
  }

  #value(p, n) {
    return this.guest.u8.slice(p, this.guest.span(p, n, 1));
  }

  /** Runs `f`; a BackendError becomes the result's err at `ret` (then: false). */
  #storageCall(ret, f) {
    this.check();
    let value;
    try {
      value = f();
    } catch (e) {
      if (!(e instanceof BackendError)) throw e;
      const kind = enumCase(STORAGE_ERROR, e.kind, 'storage-error');
      const g = this.guest;
      const p = g.lowerString(e.message);
      // Every storage import's result<T, storage-error> has its payload
      // at one offset (layout.js), so one err case serves all five.
      const err = ret + L.RESULT_STORAGE_ERROR.payload;
      g.dv.setUint8(ret, 1);
      g.dv.setUint8(err, kind);
      g.setList(err + L.STORAGE_ERROR.payload, p, g.len);
      return { ok: false };
    }
    return { ok: true, value };
  }

  #get(kp, kl, ret) {
    const key = this.#key(kp, kl);
    const r = this.#storageCall(ret, () => this.storage.get(key));
    if (!r.ok) return;
    const g = this.guest;
    const opt = ret + L.RESULT_OPTION_LIST_U8_STORAGE_ERROR.payload;
    if (r.value === undefined || r.value === null) {
      g.dv.setUint8(ret, 0);
      g.dv.setUint8(opt, 0);
      return;
    }
    const p = g.lowerBytes(r.value);
    g.dv.setUint8(ret, 0);
    g.dv.setUint8(opt, 1);
    g.setList(opt + L.OPTION_LIST_U8.payload, p, g.len);
  }

  #putIfAbsent(kp, kl, vp, vl, ret) {
    const key = this.#key(kp, kl);
    const value = this.#value(vp, vl);
    const r = this.#storageCall(ret, () => this.storage.putIfAbsent(key, value));
    if (!r.ok) return;
    this.guest.dv.setUint8(ret, 0);
    this.guest.dv.setUint8(ret + L.RESULT_BOOL_STORAGE_ERROR.payload, flag(r.value));
  }

  #put(kp, kl, vp, vl, ret) {
    const key = this.#key(kp, kl);
    const value = this.#value(vp, vl);
    if (this.#storageCall(ret, () => this.storage.put(key, value)).ok) this.guest.dv.setUint8(ret, 0);
  }

  #delete(kp, kl, ret) {
    const key = this.#key(kp, kl);
    if (this.#storageCall(ret, () => this.storage.delete(key)).ok) this.guest.dv.setUint8(ret, 0);
  }

  #list(pp, pl, ret) {
    const prefix = this.#key(pp, pl);
    const r = this.#storageCall(ret, () => this.storage.list(prefix));
    if (!r.ok) return;
    const keys = r.value;
    if (!Array.isArray(keys)) throw new TypeError(`list returned ${typeof keys}, not an array of keys`);
    const g = this.guest;
    const base = g.alloc(L.LIST.align, keys.length * L.LIST.size);
    for (let i = 0; i < keys.length; i++) {
      const p = g.lowerString(keys[i]);
      g.setList(base + L.LIST.size * i, p, g.len);
    }
    g.dv.setUint8(ret, 0);
    g.setList(ret + L.RESULT_LIST_STRING_STORAGE_ERROR.payload, base, keys.length);
  }

  // -------------------------------------------------------------------------
  // Calls into the guest
  // -------------------------------------------------------------------------

  /** The core name of `e` (a layout.js export) in this module's version. */
  name(e) {
    return `sink:coordinator/${e.interface}@${this.engine.version}#${e.name}`;
  }

  has(e) {
    return this.engine.exportNames.has(this.name(e));
  }

  /** Calls export `e`; its lowering is done by `lower` inside the guard. */
  call(e, lower) {
    const name = this.name(e);
    if (this.busy) throw new Error(`${name}: the instance is already running a call (a storage or clock callback called into it)`);
    const f = this.x[name];
    if (typeof f !== 'function') throw new Error(`the core module (sink:coordinator@${this.engine.version}) does not export ${name}`);
    this.busy = true;
    try {
      const r = f(...lower());
      this.guest.refresh();
      return r;
    } finally {
      this.busy = false;
    }
  }

  /**
   * Calls `e`, lifts its return area with `lift` (which returns {ok} or
   * {err}), then runs its post-return if it has one; the err is thrown after it.
   */
  callRet(e, lower, lift) {
    const ret = this.call(e, lower) >>> 0;
    const v = lift(ret);
    if (e.postReturn) {
      this.busy = true;
      try {
        this.x[`cabi_post_${this.name(e)}`](ret);
      } finally {
        this.busy = false;
      }
    }
    if ('err' in v) throw new ResultError(v.err);
    return v.ok;
  }

  /** result<outcome, error>. */
  outcomeResult = (ret) => {
    const g = this.guest;
    const p = ret + L.RESULT_OUTCOME_ERROR.payload;
    return g.dv.getUint8(ret) === 0 ? { ok: g.outcome(p) } : { err: g.error(p) };
  };

  /** result<_, error>. */
  unitResult = (ret) => (this.guest.dv.getUint8(ret) === 0
    ? { ok: undefined } : { err: this.guest.error(ret + L.RESULT_ERROR.payload) });

  /** result<batch-outcome, batch-error>. */
  batchResult = (ret) => {
    const g = this.guest;
    const p = ret + L.RESULT_BATCH_OUTCOME_BATCH_ERROR.payload;
    return g.dv.getUint8(ret) === 0 ? { ok: g.batchOutcome(p) } : { err: g.batchError(p) };
  };

  rep(handle) {
    const rep = this.reps[handle - 1];
    if (rep === undefined) throw new Error(`the guest's constructor returned an unknown handle ${handle}`);
    return rep;
  }

  exports() {
    const inst = this;
    return {
      coordinator: { Coordinator: function Coordinator(config, restore) { return new CoreCoordinator(inst, config, restore); } },
      writer: { Writer: function Writer(subtask) { return new CoreWriter(inst, subtask); } },
      table: new CoreTable(inst),
    };
  }
}

/** WIT resource `coordinator` on the core module (jco's class shape). */
class CoreCoordinator {
  #i;
  #self;

  constructor(inst, config, restore) {
    this.#i = inst;
    const g = inst.guest;
    const handle = inst.call(L.COORDINATOR_CONSTRUCTOR, () => {
      const { parallelism, commitUser, checkpointing, finalCommit, forceCreateSnapshot, savepointAutoTag, tagTimeRetainedMs, recovery } = config;
      const user = g.lowerString(commitUser);
      const userLen = g.len;
      const fc = enumCase(FINAL_COMMIT, finalCommit, 'final-commit-mode');
      const rc = enumCase(RECOVERY, recovery, 'recovery-mode');
      const tagSome = tagTimeRetainedMs === undefined || tagTimeRetainedMs === null ? 0 : 1;
      let r = [0, 0n, 0, 0, 0, 0];
      if (restore !== undefined && restore !== null) {
        const checkpoint = u64(restore.checkpoint);
        const state = g.lowerBytes(restore.state);
        const stateLen = g.len;
        const finished = g.lowerU32s(restore.finishedSubtasks);
        r = [1, checkpoint, state, stateLen, finished, g.len];
      }
      return [
        u32(parallelism), user, userLen, flag(checkpointing), fc, flag(forceCreateSnapshot), flag(savepointAutoTag),
        tagSome, tagSome ? u64(tagTimeRetainedMs) : 0n, rc, ...r,
      ];
    });
    this.#self = inst.rep(handle);
    // Calls a component older than 0.2.5 (0.2.2) does not have are absent,
    // as on jco's class, so index.js sees the same feature tests.
    if (!inst.has(L.COORDINATOR_SET_TABLE_FORMAT)) this.setTableFormat = undefined;
    if (!inst.has(L.COORDINATOR_EVENTS_PACKED)) {
      this.eventsPacked = undefined;
      this.eventsPlanned = undefined;
    }
  }

  #outcome(e, lower) {
    const self = this.#self;
    return this.#i.callRet(e, () => [self, ...lower()], this.#i.outcomeResult);
  }

  setLimits(l) {
    const self = this.#self;
    this.#i.callRet(L.COORDINATOR_SET_LIMITS,
      () => [self, u64(l.maxCommittableBytes), u64(l.maxEventBytes), u64(l.maxSnapshotBytes)], this.#i.unitResult);
  }

  setTableFormat(format) {
    const self = this.#self;
    this.#i.callRet(L.COORDINATOR_SET_TABLE_FORMAT,
      () => [self, enumCase(TABLE_FORMAT, format, 'table-format')], this.#i.unitResult);
  }

  start() { return this.#outcome(L.COORDINATOR_START, () => []); }

  event(subtask, attempt, entry) {
    const g = this.#i.guest;
    return this.#outcome(L.COORDINATOR_EVENT, () => {
      const checkpoint = u64(entry.checkpoint);
      const p = g.lowerByteLists(entry.committables);
      const wm = entry.watermark;
      const some = wm === undefined || wm === null ? 0 : 1;
      return [u32(subtask), u32(attempt), checkpoint, p, g.len, some, some ? s64(wm) : 0n, flag(entry.savepoint)];
    });
  }

  /**
   * A batch call: export `e` with the list of `items` as records of `record`'s
   * layout (layout.js), each lowered at `at` by lowerAt(item, at).
   */
  #batch(e, record, items, lowerAt) {
    const inst = this.#i;
    const g = inst.guest;
    const self = this.#self;
    return inst.callRet(e, () => {
      const list = Array.isArray(items) ? items : Array.from(items);
      const base = g.alloc(record.align, list.length * record.size);
      for (let i = 0; i < list.length; i++) lowerAt(list[i], base + record.size * i);
      return [self, base, list.length];
    }, inst.batchResult);
  }

  /** list<writer-event>. */
  events(events) {
    const g = this.#i.guest;
    return this.#batch(L.COORDINATOR_EVENTS, L.WRITER_EVENT, events, (e, at) => {
      const subtask = u32(e.subtask);
      const attempt = u32(e.attempt);
      g.lowerEntryAt(at + L.WRITER_EVENT.entry, e.entry);
      g.dv.setUint32(at + L.WRITER_EVENT.subtask, subtask, true);
      g.dv.setUint32(at + L.WRITER_EVENT.attempt, attempt, true);
    });
  }

  /**
   * list<packed-event> (Guest.lowerPackedEventAt); each block is its own
   * allocation, as the guest frees it on its own.
   */
  eventsPacked(events) {
    const g = this.#i.guest;
    return this.#batch(L.COORDINATOR_EVENTS_PACKED, L.PACKED_EVENT, events, (e, at) => {
      const p = g.lowerBytes(e.committables);
      g.lowerPackedEventAt(at, e, p, g.len);
    });
  }

  /**
   * `eventsPacked` from index.js's plan of the batch (each event's
   * committables and block size): each block is written straight into its
   * guest allocation, with no block built in JavaScript first.
   */
  eventsPlanned(plan) {
    const g = this.#i.guest;
    return this.#batch(L.COORDINATOR_EVENTS_PACKED, L.PACKED_EVENT, plan, (e, at) => {
      const p = g.alloc(1, e.size);
      // A committable whose length changed since the plan (a getter) must
      // not write past the allocation the guest will free.
      if (writeBlock(g.u8, p, e.list) - p !== e.size) throw new Error('a committable changed its length while the batch was sent');
      g.lowerPackedEventAt(at, e, p, e.size);
    });
  }

  restored(subtask, attempt, checkpoint, entries) {
    const g = this.#i.guest;
    return this.#outcome(L.COORDINATOR_RESTORED, () => {
      const list = Array.from(entries);
      const base = g.alloc(L.ENTRY.align, list.length * L.ENTRY.size);
      for (let i = 0; i < list.length; i++) g.lowerEntryAt(base + L.ENTRY.size * i, list[i]);
      return [u32(subtask), u32(attempt), u64(checkpoint), base, list.length];
    });
  }

  subtaskReset(subtask, checkpoint) {
    const some = checkpoint === undefined || checkpoint === null ? 0 : 1;
    return this.#outcome(L.COORDINATOR_SUBTASK_RESET, () => [u32(subtask), some, some ? u64(checkpoint) : 0n]);
  }

  /** result<list<u8>, error>. */
  checkpoint(checkpoint) {
    const inst = this.#i;
    const self = this.#self;
    return inst.callRet(L.COORDINATOR_CHECKPOINT, () => [self, u64(checkpoint)], (ret) => {
      const g = inst.guest;
      const p = ret + L.RESULT_LIST_U8_ERROR.payload;
      return g.dv.getUint8(ret) === 0 ? { ok: g.bytes(p) } : { err: g.error(p) };
    });
  }

  checkpointComplete(checkpoint) { return this.#outcome(L.COORDINATOR_CHECKPOINT_COMPLETE, () => [u64(checkpoint)]); }
  checkpointAborted(checkpoint) { return this.#outcome(L.COORDINATOR_CHECKPOINT_ABORTED, () => [u64(checkpoint)]); }
  close() { return this.#outcome(L.COORDINATOR_CLOSE, () => []); }

  state() {
    const self = this.#self;
    const v = this.#i.call(L.COORDINATOR_STATE, () => [self]);
    const state = LIFECYCLE[v];
    if (state === undefined) throw new TypeError(`invalid lifecycle discriminant ${v}`);
    return state;
  }

  /** option<checkpoint-id> through a return area (two flat results). */
  committedUpTo() {
    const inst = this.#i;
    const self = this.#self;
    return inst.callRet(L.COORDINATOR_COMMITTED_UP_TO, () => [self], (ret) => ({ ok: inst.guest.optU64(ret) }));
  }
}

/** WIT resource `writer` on the core module. */
class CoreWriter {
  #i;
  #self;

  constructor(inst, subtask) {
    this.#i = inst;
    this.#self = inst.rep(inst.call(L.WRITER_CONSTRUCTOR, () => [u32(subtask)]));
  }

  /** result<entry, error>. */
  #entryResult = (ret) => {
    const g = this.#i.guest;
    const p = ret + L.RESULT_ENTRY_ERROR.payload;
    return g.dv.getUint8(ret) === 0 ? { ok: g.entry(p) } : { err: g.error(p) };
  };

  #call(e, lower, lift) {
    const self = this.#self;
    return this.#i.callRet(e, () => [self, ...lower()], lift);
  }

  report(checkpoint, committables, watermark, savepoint) {
    const g = this.#i.guest;
    return this.#call(L.WRITER_REPORT, () => {
      const cp = u64(checkpoint);
      const p = g.lowerByteLists(committables);
      const some = watermark === undefined || watermark === null ? 0 : 1;
      return [cp, p, g.len, some, some ? s64(watermark) : 0n, flag(savepoint)];
    }, this.#entryResult);
  }

  endInput(committables, watermark) {
    const g = this.#i.guest;
    return this.#call(L.WRITER_END_INPUT, () => {
      const p = g.lowerByteLists(committables);
      const some = watermark === undefined || watermark === null ? 0 : 1;
      return [p, g.len, some, some ? s64(watermark) : 0n];
    }, this.#entryResult);
  }

  committed(checkpoint) { this.#call(L.WRITER_COMMITTED, () => [u64(checkpoint)], this.#i.unitResult); }
  checkpointAborted(checkpoint) { this.#call(L.WRITER_CHECKPOINT_ABORTED, () => [u64(checkpoint)], this.#i.unitResult); }

  /** list<u8> through a return area: its descriptor at ret. */
  state() {
    return this.#call(L.WRITER_STATE, () => [], (ret) => ({ ok: this.#i.guest.bytes(ret) }));
  }

  /** result<list<entry>, error>. */
  restore(state, checkpoint) {
    const g = this.#i.guest;
    return this.#call(L.WRITER_RESTORE, () => {
      const p = g.lowerBytes(state);
      const n = g.len;
      return [p, n, u64(checkpoint)];
    }, (ret) => {
      const p = ret + L.RESULT_LIST_ENTRY_ERROR.payload;
      return g.dv.getUint8(ret) === 0 ? { ok: g.entries(p) } : { err: g.error(p) };
    });
  }
}

/** WIT interface `table` on the core module. */
class CoreTable {
  #i;

  constructor(inst) {
    this.#i = inst;
  }

  /** result<option<snapshot>, error>. */
  #optSnapshot = (ret) => {
    const g = this.#i.guest;
    const p = ret + L.RESULT_OPTION_SNAPSHOT_ERROR.payload;
    if (g.dv.getUint8(ret) !== 0) return { err: g.error(p) };
    const d = g.dv.getUint8(p);
    if (d > 1) throw new TypeError(`invalid variant discriminant ${d} for option`);
    return { ok: d === 0 ? undefined : g.snapshot(p + L.OPTION_SNAPSHOT.payload) };
  };

  /** result<list<T>, error> (`result`'s layout): elements of `size` bytes lifted by `one`. */
  #listResult = (result, size, one) => (ret) => {
    const g = this.#i.guest;
    const p = ret + result.payload;
    return g.dv.getUint8(ret) === 0 ? { ok: g.list(p, size, one) } : { err: g.error(p) };
  };

  latestSnapshot() {
    return this.#i.callRet(L.TABLE_LATEST_SNAPSHOT, () => [], this.#optSnapshot);
  }

  snapshotById(id) {
    return this.#i.callRet(L.TABLE_SNAPSHOT_BY_ID, () => [u64(id)], this.#optSnapshot);
  }

  listSnapshots() {
    return this.#i.callRet(L.TABLE_LIST_SNAPSHOTS, () => [], this.#listResult(L.RESULT_LIST_SNAPSHOT_ERROR, L.SNAPSHOT.size, this.#i.guest.snapshot));
  }

  listTags() {
    return this.#i.callRet(L.TABLE_LIST_TAGS, () => [], this.#listResult(L.RESULT_LIST_TAG_ERROR, L.TAG.size, this.#i.guest.tag));
  }
}
