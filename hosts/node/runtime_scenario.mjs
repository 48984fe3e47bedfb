#!/usr/bin/env node
// One scenario through the installed package, printed so that two runs can
// be compared byte for byte: hosts/node/test/runtime.test.mjs runs it with
// SINK_COORDINATOR_NODE_RUNTIME=core and =jco and requires the same output.
// It covers every call of the API (batches packed and failing, restore,
// savepoint tags, table reads, the writer), errors of each origin (the
// component's, a storage's, a trap) and the storage's final contents.
//
//   node hosts/node/runtime_scenario.mjs
//
// Prints one JSON line per call, then the table's keys and values, then a
// last line {"engine": …}: which glue served the storage calls, read from a
// stack (core.js or jco's component/sink-coordinator.js), so the test knows
// the variable chose the runtime.

import { loadInstalled } from './installed.mjs';

const sc = await loadInstalled();
const enc = new TextEncoder();
const bytes = (s) => enc.encode(s);

// Every value, including `undefined` fields and the class of typed arrays:
// a difference in shape between the runtimes shows as a different line.
const show = (v) => JSON.stringify(v, function replacer(k, x) {
  if (x === undefined) return '<undefined>';
  if (typeof x === 'bigint') return `${x}n`;
  if (ArrayBuffer.isView(x)) return { [x.constructor.name]: Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('hex') };
  return x;
});

const lines = [];
function rec(name, f) {
  try {
    lines.push(`${name} ok ${show(f())}`);
  } catch (e) {
    const { applied, outcome } = e ?? {};
    lines.push(`${name} err ${show({ name: e?.name, kind: e?.kind, detail: e?.detail, message: e?.message, applied, outcome })}`);
  }
}

let engine = 'none';
class Recording extends sc.MemoryStorage {
  failPut = 0;
  get(key) {
    const stack = new Error().stack ?? '';
    if (stack.includes('/core.js')) engine = 'core';
    else if (stack.includes('/component/sink-coordinator.js')) engine = 'jco';
    return super.get(key);
  }
  putIfAbsent(key, value) {
    if (this.failPut > 0 && key.startsWith('snapshot/')) {
      this.failPut--;
      throw new sc.BackendIOError(`injected failure writing ${key}`);
    }
    return super.putIfAbsent(key, value);
  }
}

const storage = new Recording();
const clock = new sc.ManualClock(1000n);
const config = { parallelism: 3, commitUser: 'job-ü', savepointAutoTag: true, tagTimeRetainedMs: 60000n };
const c = new sc.Coordinator(config, storage, { clock });
const ws = [0, 1, 2].map((s) => new sc.Writer(s));
rec('state', () => c.state());
rec('setLimits', () => c.setLimits({ maxCommittableBytes: 1 << 20 }));
rec('start', () => c.start());
rec('committedUpTo', () => c.committedUpTo());

const report = (s, cp, n, { watermark, savepoint } = {}) =>
  ws[s].report(cp, Array.from({ length: n }, (_, i) => bytes(`${s}/${cp}/${i}`)), watermark, savepoint);

// Checkpoint 1: one event alone, the others as a batch.
rec('event 0/1', () => c.event(0, 0, report(0, 1n, 2, { watermark: 10n })));
rec('events 1', () => c.events([1, 2].map((s) => ({ subtask: s, attempt: 0, entry: report(s, 1n, s, { watermark: -5n }) }))));
rec('checkpoint 1', () => c.checkpoint(1n));
clock.ms += 5n;
rec('complete 1', () => c.checkpointComplete(1n));
for (const w of ws) rec('writer committed 1', () => w.committed(1n));

// Checkpoint 2: a savepoint (tags), its snapshot write failing once.
rec('events 2', () => c.events([0, 1, 2].map((s) => ({ subtask: s, attempt: 0, entry: report(s, 2n, 1, { savepoint: true }) }))));
rec('checkpoint 2', () => c.checkpoint(2n));
storage.failPut = 1;
rec('complete 2 (storage fails)', () => c.checkpointComplete(2n));
rec('complete 2', () => c.checkpointComplete(2n));
const state2 = c.checkpoint(2n);
const writerStates2 = ws.map((w) => w.state());

// Checkpoint 3 aborted; a region failover; an empty batch.
rec('events 3', () => c.events([0, 1].map((s) => ({ subtask: s, attempt: 0, entry: report(s, 3n, 3) }))));
rec('aborted 3', () => c.checkpointAborted(3n));
rec('writer aborted 3', () => ws[0].checkpointAborted(3n));
rec('subtaskReset 1', () => c.subtaskReset(1, 2n));
rec('subtaskReset 2 (none)', () => c.subtaskReset(2, undefined));
rec('events []', () => c.events([]));
rec('events null', () => c.events(null));
rec('writer state', () => ws[0].state());
rec('writer restore', () => new sc.Writer(0).restore(ws[0].state(), 2n));
rec('writer endInput', () => ws[2].endInput([bytes('last')], 99n));
rec('writer report out of order', () => ws[1].report(1n, [], undefined, false));

// A batch that stops at an invalid event: applied and outcome.
rec('events (subtask 9)', () => c.events([
  { subtask: 0, attempt: 0, entry: { checkpoint: 4n, committables: [bytes('a')] } },
  { subtask: 9, attempt: 0, entry: { checkpoint: 4n, committables: [bytes('b')] } },
]));
rec('state after', () => c.state());
rec('close (failed)', () => c.close());

// The global failover: restored from checkpoint 2's state bytes.
const r = new sc.Coordinator(config, storage, { clock, restore: { checkpoint: 2n, state: state2, finishedSubtasks: [] } });
rec('restored start', () => r.start());
for (const s of [0, 1, 2]) {
  const w = new sc.Writer(s);
  const entries = w.restore(writerStates2[s], 2n);
  rec(`restored ${s}`, () => r.restored(s, 1, 2n, entries));
}
rec('restored event 5', () => r.event(0, 1, { checkpoint: 5n, committables: [bytes('x'.repeat(300))], watermark: 7n }));
rec('restored checkpoint 5', () => r.checkpoint(5n));
rec('restored complete 5', () => r.checkpointComplete(5n));
// Numbers at the edges of their types, lowered by both runtimes' glue
// (checkpoints past 2^53 and 2^64 - 1, watermarks at both ends of s64).
rec('restored events (wide numbers)', () => r.events([
  { subtask: 1, attempt: 0xffffffff, entry: { checkpoint: 6n, committables: [bytes('y'.repeat(200)), new Uint8Array(0)], watermark: -(2n ** 63n) } },
  { subtask: 2, attempt: 7, entry: { checkpoint: 6n, committables: [], watermark: 2n ** 63n - 1n, savepoint: true } },
  { subtask: 0, attempt: 1, entry: { checkpoint: 6n, committables: [bytes('w')], watermark: 2n ** 52n } },
  { subtask: 0, attempt: 1, entry: { checkpoint: 2n ** 60n + 1n, committables: [bytes('z')], watermark: -(2n ** 52n) - 1n } },
]));
rec('restored events (checkpoint 2^64 - 1)', () => r.events([
  { subtask: 1, attempt: 0, entry: { checkpoint: 2n ** 64n - 1n, committables: [bytes('m')] } },
]));
rec('restored close', () => r.close());

// The table, read back.
const t = new sc.Table(storage, { clock });
rec('latestSnapshot', () => t.latestSnapshot());
rec('snapshotById 1', () => t.snapshotById(1n));
rec('snapshotById 99', () => t.snapshotById(99n));
rec('listSnapshots', () => t.listSnapshots());
rec('listTags', () => t.listTags());

// Configuration refused at start; the Paimon format without a schema.
rec('parallelism 0', () => new sc.Coordinator({ parallelism: 0, commitUser: 'x' }, new sc.MemoryStorage()).start());
const p = new sc.Coordinator({ parallelism: 1, commitUser: 'p' }, new sc.MemoryStorage(), { clock, tableFormat: 'paimon' });
rec('paimon start', () => p.start());
rec('bad limits', () => new sc.Coordinator({ parallelism: 1, commitUser: 'l' }, new sc.MemoryStorage()).setLimits({ maxEventBytes: 0n }));
rec('corrupt state', () => new sc.Coordinator({ parallelism: 1, commitUser: 'c' }, new sc.MemoryStorage(), { restore: { checkpoint: 1n, state: new Uint8Array([255, 255]) } }).start());

// A storage that throws something other than a BackendError: a trap.
class Broken extends sc.MemoryStorage {
  get() { throw new RangeError('bug in the storage'); }
}
const b = new sc.Coordinator({ parallelism: 1, commitUser: 'b' }, new Broken(), { clock });
rec('broken start', () => b.start());
rec('broken event', () => b.event(0, 0, { checkpoint: 1n, committables: [bytes('a')] }));
rec('broken discarded', () => b.discarded);
rec('broken state', () => b.state());

for (const key of storage.list('')) lines.push(`table ${key} ${Buffer.from(storage.get(key)).toString('hex')}`);
process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ engine })}\n`);
