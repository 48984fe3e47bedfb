// Replays a validated trace (trace.mjs) through the component under jco,
// with the semantics of the Rust replayer (host/src/replay.rs):
//   - one fresh, empty in-memory table and one trace clock for the whole
//     trace; they survive failovers;
//   - every coordinator runs in its own component instance (a trap discards
//     it: state `failed`, later calls `illegal-state`, `close` succeeds);
//   - a step's `committed` / `tags_created` / `tags_deleted` are the table's
//     `snapshot/` and `tag/` keys gained or lost during the step; new
//     snapshots' identifiers are read through the component's
//     `table.snapshot-by-id`, with storage faults suspended;
//   - the final `snapshots` / `tags` come from `table.list-snapshots` and
//     `table.list-tags`, faults suspended.

import { MemStorage, ManualClock, CallError, Trap, call } from './host.mjs';
import { Malformed } from './trace.mjs';

const SNAPSHOT_PREFIX = 'snapshot/';
const TAG_PREFIX = 'tag/';

/** The host failed (not the trace, not the guest): exit code 1. */
export class HostFailure extends Error {}

const trapMessage = (what, e) => `guest trapped in ${what}: ${e.message}`;

const failedOutcome = () => ({ state: 'failed', committed: [], tagsCreated: [], tagsDeleted: [], restartRequired: false });

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

  start() {
    return this.call('start', () => this.handle.start());
  }
  event(subtask, attempt, entry) {
    return this.call('event', () => this.handle.event(subtask, attempt, entry));
  }
  restored(subtask, attempt, checkpoint, entries) {
    return this.call('restored', () => this.handle.restored(subtask, attempt, checkpoint, entries));
  }
  subtaskReset(subtask, checkpoint) {
    return this.call('subtask-reset', () => this.handle.subtaskReset(subtask, checkpoint ?? undefined));
  }
  checkpoint(checkpoint) {
    return this.call('checkpoint', () => this.handle.checkpoint(checkpoint));
  }
  checkpointComplete(checkpoint) {
    return this.call('checkpoint-complete', () => this.handle.checkpointComplete(checkpoint));
  }
  checkpointAborted(checkpoint) {
    return this.call('checkpoint-aborted', () => this.handle.checkpointAborted(checkpoint));
  }
  close() {
    if (!this.live) return failedOutcome();
    return this.call('close', () => this.handle.close());
  }
}

/** An instance whose creation trapped: `failed` for good. */
class FailedInstance {
  refuse() {
    throw new CallError('illegal-state', 'the instance failed: its component trapped while it was created');
  }
  state() {
    return 'failed';
  }
  start() { this.refuse(); }
  event() { this.refuse(); }
  restored() { this.refuse(); }
  subtaskReset() { this.refuse(); }
  checkpoint() { this.refuse(); }
  checkpointComplete() { this.refuse(); }
  checkpointAborted() { this.refuse(); }
  close() {
    return failedOutcome();
  }
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

  const steps = trace.steps.map((step, index) => {
    const before = tableKeys();
    let outcome = null;
    let stateBytes = null;
    let error = null;
    try {
      [outcome, stateBytes] = apply(index, step);
    } catch (e) {
      if (!(e instanceof CallError)) throw e;
      error = { kind: e.kind, message: e.detail };
    }
    const after = tableKeys();
    const instance = instances.get(step.instance);
    if (!instance) throw new HostFailure(`replay failed: step ${index}: no instance ${JSON.stringify(step.instance)}`);
    const state = instance.state();

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
      restartRequired: outcome ? outcome.restartRequired : false,
      stateBytes,
      error,
    };
  });

  const snapshots = tableRead('list the snapshots', () => table.listSnapshots());
  const tags = tableRead('list the tags', () => table.listTags());
  return { steps, snapshots, tags, states };
}
