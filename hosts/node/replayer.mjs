// Replays a validated trace (trace.mjs) through the component under jco,
// with the semantics of the Rust replayer (testkit/src/replay.rs):
//   - writer steps (TRACE-FORMAT "Writer steps") drive the component's
//     `writer` resource, one component instance per writer (as the Rust
//     host's one Store per writer); writers, their outboxes and the kept
//     writer state bytes survive coordinator failovers, like the clock;
//   - one fresh, empty in-memory table and one trace clock for the whole
//     trace; they survive failovers;
//   - every coordinator runs in its own component instance (a trap discards
//     it: state `failed`, later calls `illegal-state`, `close` succeeds);
//   - every step reports the named instance's committed-up-to after the
//     step (SEMANTICS 5.5), asked once the step is done; an instance whose
//     component trapped reports the last value the host received from it
//     (outcomes and these queries), one whose creation trapped none;
//   - a step's `committed` / `tags_created` / `tags_deleted` are the table's
//     `snapshot/` and `tag/` keys gained or lost during the step; new
//     snapshots' identifiers are read through the component's
//     `table.snapshot-by-id`, with storage faults suspended;
//   - the final `snapshots` / `tags` come from `table.list-snapshots` and
//     `table.list-tags`, faults suspended.

import { MemStorage, ManualClock, CallError, Trap, call, rustDebugStr } from './host.mjs';
import { Malformed, WRITER_OPS } from './trace.mjs';

const SNAPSHOT_PREFIX = 'snapshot/';
const TAG_PREFIX = 'tag/';

/** The host failed (not the trace, not the guest): exit code 1. */
export class HostFailure extends Error {}

const trapMessage = (what, e) => `guest trapped in ${what}: ${e.message}`;

const failedOutcome = (committedUpTo) => ({
  state: 'failed',
  committed: [],
  tagsCreated: [],
  tagsDeleted: [],
  restartRequired: false,
  committedUpTo,
});

// jco lifts option<u64> as undefined or a BigInt.
const option = (v) => (v === undefined ? null : v);

/** One coordinator in its own component instance. */
class ComponentCoordinator {
  constructor(runtime, storage, clock, config, restore) {
    this.trap = null;
    let exports;
    try {
      exports = runtime.instantiate(storage, clock);
    } catch (e) {
      throw new CallError('trap', trapMessage('instantiation', e));
    }
    this.handle = this.call('the coordinator constructor', () => new exports.coordinator.Coordinator(config, restore));
    // The committed-up-to of the last outcome or query (SEMANTICS 5.5): what
    // the host knows once a trap discarded the instance.
    this.knownUpTo = null;
  }

  get live() {
    return this.trap === null;
  }

  /** Calls into the guest: a result `err` is a CallError, a trap discards the instance. */
  call(what, fn) {
    if (!this.live) {
      throw new CallError('illegal-state', `${what}: the instance was discarded after a guest trap (${this.trap})`);
    }
    try {
      return call(fn);
    } catch (e) {
      if (e instanceof Trap) {
        this.trap = trapMessage(what, e);
        this.handle = null;
        throw new CallError('trap', this.trap);
      }
      throw e;
    }
  }

  state() {
    if (!this.live) return 'failed';
    try {
      return this.call('state', () => this.handle.state());
    } catch {
      return 'failed';
    }
  }

  /**
   * Committed-up-to (SEMANTICS 5.5), answered in every state: null or a
   * BigInt. Once a trap discarded the instance (also when this query traps),
   * the value of the last outcome or query the host received.
   */
  committedUpTo() {
    if (!this.live) return this.knownUpTo;
    try {
      this.knownUpTo = option(this.call('committed-up-to', () => this.handle.committedUpTo()));
    } catch (e) {
      if (!(e instanceof CallError)) throw e;
    }
    return this.knownUpTo;
  }

  /** A call returning an outcome: its committed-up-to is remembered. */
  outcomeCall(what, fn) {
    const outcome = this.call(what, fn);
    outcome.committedUpTo = option(outcome.committedUpTo);
    this.knownUpTo = outcome.committedUpTo;
    return outcome;
  }

  start() {
    return this.outcomeCall('start', () => this.handle.start());
  }
  event(subtask, attempt, entry) {
    return this.outcomeCall('event', () => this.handle.event(subtask, attempt, entry));
  }
  restored(subtask, attempt, checkpoint, entries) {
    return this.outcomeCall('restored', () => this.handle.restored(subtask, attempt, checkpoint, entries));
  }
  subtaskReset(subtask, checkpoint) {
    return this.outcomeCall('subtask-reset', () => this.handle.subtaskReset(subtask, checkpoint ?? undefined));
  }
  checkpoint(checkpoint) {
    return this.call('checkpoint', () => this.handle.checkpoint(checkpoint));
  }
  checkpointComplete(checkpoint) {
    return this.outcomeCall('checkpoint-complete', () => this.handle.checkpointComplete(checkpoint));
  }
  checkpointAborted(checkpoint) {
    return this.outcomeCall('checkpoint-aborted', () => this.handle.checkpointAborted(checkpoint));
  }
  close() {
    if (!this.live) return failedOutcome(this.knownUpTo);
    return this.outcomeCall('close', () => this.handle.close());
  }
}

/** An instance whose creation trapped: `failed` for good; it never ran the commit rule. */
class FailedInstance {
  refuse() {
    throw new CallError('illegal-state', 'the instance failed: its component trapped while it was created');
  }
  state() {
    return 'failed';
  }
  committedUpTo() {
    return null;
  }
  start() { this.refuse(); }
  event() { this.refuse(); }
  restored() { this.refuse(); }
  subtaskReset() { this.refuse(); }
  checkpoint() { this.refuse(); }
  checkpointComplete() { this.refuse(); }
  checkpointAborted() { this.refuse(); }
  close() {
    return failedOutcome(null);
  }
}

/**
 * The writer-side helper (SEMANTICS 11): the component's `writer` resource,
 * in a component instance of its own (like the Rust host's one Store per
 * writer) over a detached storage and clock, which it never calls. A trap
 * discards the instance: later calls are `illegal-state`.
 */
class ComponentWriter {
  constructor(runtime, subtask) {
    this.trap = null;
    let exports;
    try {
      exports = runtime.instantiate(new MemStorage(), new ManualClock(0n, 0n));
    } catch (e) {
      throw new CallError('trap', trapMessage('instantiation', e));
    }
    this.handle = this.call('the writer constructor', () => new exports.writer.Writer(subtask));
  }

  call(what, fn) {
    if (this.trap !== null) {
      throw new CallError('illegal-state', `${what}: the instance was discarded after a guest trap (${this.trap})`);
    }
    try {
      return call(fn);
    } catch (e) {
      if (e instanceof Trap) {
        this.trap = trapMessage(what, e);
        this.handle = null;
        throw new CallError('trap', this.trap);
      }
      throw e;
    }
  }

  report(checkpoint, committables, watermark, savepoint) {
    return this.call('writer report', () => this.handle.report(checkpoint, committables, watermark, savepoint));
  }
  endInput(committables, watermark) {
    return this.call('writer end-input', () => this.handle.endInput(committables, watermark));
  }
  /** The coordinator's committed-up-to, forwarded (SEMANTICS 11). */
  committed(u) {
    this.call('writer committed', () => this.handle.committed(u));
  }
  checkpointAborted(checkpoint) {
    this.call('writer checkpoint-aborted', () => this.handle.checkpointAborted(checkpoint));
  }
  state() {
    return this.call('writer state', () => this.handle.state());
  }
  restore(state, checkpoint) {
    return this.call('writer restore', () => this.handle.restore(state, checkpoint));
  }
}

/** A writer whose creation trapped: every call is `illegal-state`. */
class FailedWriter {
  refuse() {
    throw new CallError('illegal-state', 'the writer failed: its component trapped while it was created');
  }
  report() { this.refuse(); }
  endInput() { this.refuse(); }
  committed() { this.refuse(); }
  checkpointAborted() { this.refuse(); }
  state() { this.refuse(); }
  restore() { this.refuse(); }
}

/**
 * The `table` interface, in an instance of its own over the same storage
 * with a detached clock (reading the table never consumes trace clock
 * readings). Re-instantiated after a trap.
 */
class ComponentTable {
  constructor(runtime, storage) {
    this.runtime = runtime;
    this.storage = storage;
    this.clock = new ManualClock(0n, 0n);
    this.exports = null;
  }
  call(what, fn) {
    if (this.exports === null) this.exports = this.runtime.instantiate(this.storage, this.clock);
    try {
      return call(() => fn(this.exports.table));
    } catch (e) {
      if (e instanceof Trap) {
        this.exports = null;
        throw new CallError('trap', trapMessage(what, e));
      }
      throw e;
    }
  }
  snapshotById(id) {
    return this.call('snapshot-by-id', (t) => t.snapshotById(id));
  }
  listSnapshots() {
    return this.call('list-snapshots', (t) => t.listSnapshots());
  }
  listTags() {
    return this.call('list-tags', (t) => t.listTags());
  }
}

const hex = (bytes) => Buffer.from(bytes).toString('hex');

/**
 * Replays `trace` on `runtime`. Returns {steps, snapshots, tags, states}
 * where `states` lists, for every successful checkpoint step,
 * {step, instance, checkpoint, hex}. Throws Malformed (a failover without
 * kept bytes) or HostFailure.
 */
export function replay(trace, runtime) {
  const storage = new MemStorage();
  const clock = new ManualClock(trace.clockStartMs, trace.clockStepMs);
  const table = new ComponentTable(runtime, storage);
  const instances = new Map();
  const kept = new Map(); // `${name}\0${checkpoint}` -> bytes
  const states = [];

  const suspended = (fn) => {
    storage.suspended = true;
    try {
      return fn();
    } finally {
      storage.suspended = false;
    }
  };
  const tableKeys = () => ({ snapshots: new Set(storage.keys(SNAPSHOT_PREFIX)), tags: new Set(storage.keys(TAG_PREFIX)) });
  const tableRead = (what, fn) => {
    try {
      return suspended(fn);
    } catch (e) {
      if (e instanceof CallError) throw new HostFailure(`replay failed: cannot ${what} of the table: ${e.kind}: ${e.detail}`);
      throw e;
    }
  };

  const createAndStart = (name, config, restore) => {
    let instance;
    try {
      instance = new ComponentCoordinator(runtime, storage, clock, config, restore);
    } catch (e) {
      if (!(e instanceof CallError)) throw e;
      instances.set(name, new FailedInstance());
      throw e;
    }
    instances.set(name, instance);
    return instance.start();
  };

  // Runs one step: returns [outcome or null, state length or null]; a
  // CallError is the step's error.
  const apply = (index, step) => {
    const name = step.instance;
    const inst = () => instances.get(name);
    switch (step.op) {
      case 'start':
        instances.delete(name);
        return [createAndStart(name, step.config, undefined), null];
      case 'failover': {
        let restore;
        if (step.checkpoint !== null) {
          let bytes = step.state;
          if (bytes === null) {
            bytes = kept.get(`${name}\0${step.checkpoint}`);
            if (bytes === undefined) {
              throw new Malformed(
                `no state bytes were kept for checkpoint ${step.checkpoint} of instance ${JSON.stringify(name)} ` +
                  '(no successful "checkpoint" step for it) and there is no "state_hex"',
                { step: index, op: step.op, field: 'checkpoint' },
              );
            }
          }
          restore = { checkpoint: step.checkpoint, state: bytes, finishedSubtasks: Uint32Array.from(step.finishedSubtasks) };
        }
        instances.delete(name);
        return [createAndStart(name, step.config, restore), null];
      }
      case 'event':
        return [inst().event(step.subtask, step.attempt, step.entry), null];
      case 'checkpoint': {
        const bytes = inst().checkpoint(step.checkpoint);
        kept.set(`${name}\0${step.checkpoint}`, bytes);
        states.push({ step: index, instance: name, checkpoint: step.checkpoint, hex: hex(bytes) });
        return [null, bytes.length];
      }
      case 'complete':
        return [inst().checkpointComplete(step.checkpoint), null];
      case 'abort':
        return [inst().checkpointAborted(step.checkpoint), null];
      case 'reset_subtask':
        return [inst().subtaskReset(step.subtask, step.checkpoint), null];
      case 'restored':
        return [inst().restored(step.subtask, step.attempt, step.checkpoint, step.entries), null];
      case 'close':
        return [inst().close(), null];
      case 'clock':
        clock.setNext(step.ms);
        return [null, null];
      case 'storage_fault':
        storage.pushFault(step.call, step.fault);
        return [null, null];
      default:
        throw new HostFailure(`step ${index}: unknown op ${step.op}`);
    }
  };

  // ---- Writer steps (TRACE-FORMAT "Writer steps"), as replay.rs ----
  // Writers are keyed by (instance name, subtask); they, their outboxes and
  // the writer state bytes kept by `writer_snapshot` belong to the replayer
  // and survive coordinator `failover` and `start`.
  const writers = new Map(); // JSON [name, subtask] -> {api, attempt, outbox}
  const writerKept = new Map(); // JSON [name, subtask, checkpoint] -> bytes
  const writerKey = (name, subtask) => JSON.stringify([name, subtask]);
  const writerKeptKey = (name, subtask, c) => JSON.stringify([name, subtask, c.toString()]);
  const applied = (error = null) => ({ restartRequired: false, error });
  // Runs fn; a CallError (a guest `err` or a trap) is returned, not thrown.
  const tryCall = (fn) => {
    try {
      fn();
      return null;
    } catch (e) {
      if (e instanceof CallError) return e;
      throw e;
    }
  };

  // The writer (name, subtask), created (attempt 0, empty outbox) if it does
  // not exist. A creation that fails leaves a FailedWriter and throws.
  const writer = (name, subtask) => {
    const key = writerKey(name, subtask);
    let slot = writers.get(key);
    if (slot) return slot;
    let api;
    let failure = null;
    try {
      api = new ComponentWriter(runtime, subtask);
    } catch (e) {
      if (!(e instanceof CallError)) throw e;
      failure = e;
      api = new FailedWriter();
    }
    slot = { api, attempt: 0, outbox: [] };
    writers.set(key, slot);
    if (failure) throw failure;
    return slot;
  };

  // Delivers the oldest `count` (null: all) events of a writer's outbox, one
  // coordinator call each. `restartRequired` if any call said so; the first
  // error stops the delivery (the event whose call failed was delivered; the
  // later ones stay in the outbox).
  const deliver = (name, subtask, count) => {
    const result = applied();
    let sent = 0n;
    while (count === null || sent < count) {
      const slot = writers.get(writerKey(name, subtask));
      if (!slot || slot.outbox.length === 0) break;
      const item = slot.outbox.shift();
      const instance = instances.get(name);
      if (!instance) {
        throw new HostFailure(`replay failed: no instance ${JSON.stringify(name)} (the trace was not validated)`);
      }
      let outcome = null;
      const e = tryCall(() => {
        outcome =
          item.kind === 'event'
            ? instance.event(subtask, slot.attempt, item.entry)
            : instance.restored(subtask, slot.attempt, item.checkpoint, item.entries);
      });
      sent += 1n;
      if (e) {
        result.error = e;
        break;
      }
      result.restartRequired ||= outcome.restartRequired;
    }
    return result;
  };

  // A `write` or `end_input` call's result: the entry joins the outbox, which
  // is delivered with `send`; a writer error is the step's error.
  const produced = (name, subtask, produce, send) => {
    let entry;
    const e = tryCall(() => {
      entry = produce();
    });
    if (e) return applied(e);
    const slot = writers.get(writerKey(name, subtask));
    if (slot) slot.outbox.push({ kind: 'event', entry });
    return send ? deliver(name, subtask, null) : applied();
  };

  // Runs fn on the writer `subtask`, or on every writer of the instance in
  // subtask order; the first error stops and is the step's.
  const eachWriter = (name, subtask, fn) => {
    const subtasks =
      subtask !== null
        ? [subtask]
        : [...writers.keys()]
            .map((k) => JSON.parse(k))
            .filter(([n]) => n === name)
            .map(([, s]) => s)
            .sort((a, b) => a - b);
    for (const s of subtasks) {
      const slot = writers.get(writerKey(name, s));
      if (!slot) continue; // parse() guarantees the writer exists
      const e = tryCall(() => fn(s, slot.api));
      if (e) return applied(e);
    }
    return applied();
  };

  // Runs one writer step: {restartRequired, error (a CallError or null)}.
  const applyWriter = (index, step) => {
    const name = step.instance;
    switch (step.op) {
      case 'write':
      case 'end_input': {
        let slot;
        const e = tryCall(() => {
          slot = writer(name, step.subtask);
        });
        if (e) return applied(e);
        const produce =
          step.op === 'write'
            ? () => slot.api.report(step.entry.checkpoint, step.entry.committables, step.entry.watermark, step.entry.savepoint)
            : () => slot.api.endInput(step.committables, step.watermark);
        return produced(name, step.subtask, produce, step.send);
      }
      case 'send': {
        const e = tryCall(() => writer(name, step.subtask));
        if (e) return applied(e);
        return deliver(name, step.subtask, step.count);
      }
      case 'writer_committed': {
        // By default the named coordinator's committed-up-to; while it is
        // none the step does nothing.
        const instance = instances.get(name);
        if (!instance) {
          throw new HostFailure(`replay failed: no instance ${JSON.stringify(name)} (the trace was not validated)`);
        }
        const u = step.checkpoint !== null ? step.checkpoint : instance.committedUpTo();
        if (u === null) return applied();
        return eachWriter(name, step.subtask, (_, w) => w.committed(u));
      }
      case 'writer_abort':
        return eachWriter(name, step.subtask, (_, w) => w.checkpointAborted(step.checkpoint));
      case 'writer_snapshot': {
        const taken = [];
        const result = eachWriter(name, step.subtask, (s, w) => {
          taken.push([s, w.state()]);
        });
        for (const [s, bytes] of taken) writerKept.set(writerKeptKey(name, s, step.checkpoint), bytes);
        return result;
      }
      case 'writer_restore': {
        // parse() checked that bytes were kept; only a writer whose state()
        // failed can have kept none.
        let bytes = null;
        if (step.checkpoint !== null) {
          bytes = writerKept.get(writerKeptKey(name, step.subtask, step.checkpoint));
          if (bytes === undefined) {
            throw new Malformed(
              `no writer state bytes were kept for checkpoint ${step.checkpoint} of writer ${step.subtask} ` +
                `of instance ${rustDebugStr(name)}`,
              { step: index, op: step.op, field: 'checkpoint' },
            );
          }
        }
        // The old writer and its outbox are discarded; the fresh one (even a
        // failed one) has the step's attempt.
        const key = writerKey(name, step.subtask);
        writers.delete(key);
        const created = tryCall(() => writer(name, step.subtask));
        const slot = writers.get(key);
        if (slot) slot.attempt = step.attempt;
        if (created) return applied(created);
        if (step.checkpoint === null) return applied(); // from scratch: nothing to send
        let entries;
        const e = tryCall(() => {
          entries = slot.api.restore(bytes, step.checkpoint);
        });
        if (e) return applied(e);
        slot.outbox.push({ kind: 'restored', checkpoint: step.checkpoint, entries });
        return step.send ? deliver(name, step.subtask, null) : applied();
      }
      default:
        throw new HostFailure(`replay failed: step ${index}: ${JSON.stringify(step.op)} is not a writer step`);
    }
  };

  const steps = trace.steps.map((step, index) => {
    const before = tableKeys();
    let restartRequired = false;
    let stateBytes = null;
    let error = null;
    if (WRITER_OPS.has(step.op)) {
      const result = applyWriter(index, step);
      restartRequired = result.restartRequired;
      if (result.error) error = { kind: result.error.kind, message: result.error.detail };
    } else {
      try {
        let outcome;
        [outcome, stateBytes] = apply(index, step);
        restartRequired = outcome ? outcome.restartRequired : false;
      } catch (e) {
        if (!(e instanceof CallError)) throw e;
        error = { kind: e.kind, message: e.detail };
      }
    }
    const after = tableKeys();
    const instance = instances.get(step.instance);
    if (!instance) throw new HostFailure(`replay failed: step ${index}: no instance ${JSON.stringify(step.instance)}`);
    const state = instance.state();
    const committedUpTo = instance.committedUpTo();

    const ids = [...after.snapshots]
      .filter((k) => !before.snapshots.has(k))
      .map((k) => {
        const digits = k.slice(SNAPSHOT_PREFIX.length);
        if (!/^[0-9]+$/.test(digits) || BigInt(digits) >= 2n ** 64n) {
          throw new HostFailure(`replay failed: the table holds an unexpected key ${JSON.stringify(k)}`);
        }
        return BigInt(digits);
      })
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const committed = ids.map((id) => {
      const s = tableRead(`read snapshot ${id}`, () => table.snapshotById(id));
      if (!s) throw new HostFailure(`replay failed: snapshot ${id} was listed but cannot be read`);
      return s.identifier;
    });
    const tagName = (k) => k.slice(TAG_PREFIX.length);
    return {
      state,
      committed,
      tagsCreated: [...after.tags].filter((k) => !before.tags.has(k)).map(tagName),
      tagsDeleted: [...before.tags].filter((k) => !after.tags.has(k)).map(tagName),
      restartRequired,
      committedUpTo,
      stateBytes,
      error,
    };
  });

  const snapshots = tableRead('list the snapshots', () => table.listSnapshots());
  const tags = tableRead('list the tags', () => table.listTags());
  return { steps, snapshots, tags, states };
}
