// The guards of a host without wasmtime's (issue 26): a storage call that
// never returns is cut off at its deadline (WorkerStorage), and an
// instance's memory is bounded (Runtime maxMemoryBytes). Run by
// `make hosts-test` (node --test) on the installed package.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { loadInstalled, PROJECT } from '../installed.mjs';

const sc = await loadInstalled();
const bytes = (s) => new TextEncoder().encode(s);
const config = { parallelism: 1, commitUser: 'job-1' };

// Backends for the worker, in a module of their own: `get` or
// `putIfAbsent` may block forever, in Atomics.wait or in a busy loop.
const dir = mkdtempSync(join(tmpdir(), 'sinkcoord-worker-'));
const backends = join(dir, 'backends.mjs');
writeFileSync(
  backends,
  `import { InvalidKeyError, MemoryStorage } from 'sink-coordinator';
export class Stuck extends MemoryStorage {
  constructor(op, how) { super(); this.op = op; this.how = how; }
  block() {
    if (this.how === 'wait') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    for (;;);
  }
  get(key) { if (this.op === 'get') this.block(); return super.get(key); }
  putIfAbsent(key, value) { if (this.op === 'putIfAbsent') this.block(); return super.putIfAbsent(key, value); }
}
// An async backend, as an object store client is: every call resolves
// later; 'never' is a get whose promise never settles.
export class Async {
  constructor(mode) { this.inner = new MemoryStorage(); this.mode = mode; }
  later(f) { return new Promise((ok) => setTimeout(() => ok(f()), 1)); }
  get(key) { return this.mode === 'never' ? new Promise(() => {}) : this.later(() => this.inner.get(key)); }
  putIfAbsent(key, value) { return this.later(() => this.inner.putIfAbsent(key, value)); }
  put(key, value) { return this.later(() => this.inner.put(key, value)); }
  delete(key) { return this.later(() => this.inner.delete(key)); }
  async list(prefix) {
    if (prefix.startsWith('../')) throw new InvalidKeyError('refused by the async backend');
    return this.later(() => this.inner.list(prefix));
  }
}
export class Throws extends MemoryStorage {
  get() { throw new TypeError('not a storage error'); }
}
export class Uncloneable extends MemoryStorage {
  get() { return { f() {} }; }
}
`,
);
// The module resolves 'sink-coordinator' from the installed project.
const backendsUrl = pathToFileURL(backends);
writeFileSync(join(dir, 'package.json'), '{"type": "module"}');
const link = join(dir, 'node_modules');
spawnSync('ln', ['-s', join(PROJECT, 'node_modules'), link]);
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

/** One checkpoint through `c`: a report of subtask 0, then its completion. */
const oneCheckpoint = (c, checkpoint = 1) => {
  c.event(0, 0, new sc.Writer(0).report(checkpoint, [bytes(`file-${checkpoint}`)]));
  c.checkpoint(checkpoint);
  return c.checkpointComplete(checkpoint);
};

/** `f()` must throw TrapError naming the deadline and `op`, within [ms, 10 s). */
const cutOff = (f, ms, op) => {
  const t0 = Date.now();
  assert.throws(f, (e) => {
    assert.ok(e instanceof sc.TrapError, `${e}`);
    assert.match(e.message, new RegExp(`deadline of ${ms} ms: storage ${op} of key`));
    return true;
  });
  const took = Date.now() - t0;
  assert.ok(took >= ms && took < 10_000, `cut off after ${took} ms`);
};

test('a FileSystemStorage on a worker commits the same table as inline', () => {
  const [a, b] = [mkdtempSync(join(dir, 'a-')), mkdtempSync(join(dir, 'b-'))];
  const worker = sc.WorkerStorage.fileSystem(a, {}, { callDeadlineMs: 5000 });
  const clock = new sc.ManualClock(7);
  for (const storage of [worker, new sc.FileSystemStorage(b)]) {
    const c = new sc.Coordinator(config, storage, { clock });
    c.start();
    assert.deepEqual([...oneCheckpoint(c).committed], [1n]);
  }
  const inline = new sc.FileSystemStorage(a);
  assert.deepEqual(worker.list(''), new sc.FileSystemStorage(b).list(''));
  for (const key of inline.list('')) assert.deepEqual(worker.get(key), new sc.FileSystemStorage(b).get(key), key);
  // Storage errors cross as their classes, with their fields.
  assert.throws(() => worker.get('../x'), sc.InvalidKeyError);
  assert.throws(() => worker.put('hint/big', new Uint8Array(5000)), (e) => {
    assert.ok(e instanceof sc.ValueTooLargeError && e instanceof sc.BackendIOError, `${e}`);
    assert.deepEqual([e.key, e.size, e.limit], ['hint/big', 5000, sc.MAX_HINT_BYTES]);
    return true;
  });
  worker.close();
  assert.equal(worker.get('nothing/here'), undefined, 'a call after close starts a new worker');
  worker.close();
});

for (const [op, how] of [['get', 'wait'], ['putIfAbsent', 'spin']]) {
  test(`a ${op} that never returns (${how}) is cut off at the deadline; a new coordinator commits`, () => {
    const storage = new sc.WorkerStorage(backendsUrl, 'Stuck', [op, how], { callDeadlineMs: 300 });
    const c = new sc.Coordinator(config, storage, { clock: new sc.ManualClock(1) });
    c.start();
    cutOff(() => oneCheckpoint(c), 300, op);
    assert.ok(c.discarded);
    assert.throws(() => c.checkpoint(2), sc.TrapError);
    // The same code on a backend that answers commits.
    const good = new sc.WorkerStorage(backendsUrl, 'Stuck', ['none', how], { callDeadlineMs: 300 });
    const again = new sc.Coordinator(config, good, { clock: new sc.ManualClock(1) });
    again.start();
    assert.deepEqual([...oneCheckpoint(again).committed], [1n]);
    good.close();
  });
}

test('an async backend serves the synchronous imports; a promise that never settles is cut off', () => {
  const storage = new sc.WorkerStorage(backendsUrl, 'Async', ['ok'], { callDeadlineMs: 5000 });
  const c = new sc.Coordinator(config, storage, { clock: new sc.ManualClock(1) });
  c.start();
  assert.deepEqual([...oneCheckpoint(c).committed], [1n]);
  assert.deepEqual([...oneCheckpoint(c, 2).committed], [2n]);
  assert.equal(new sc.Table(storage).listSnapshots().length, 2);
  assert.throws(() => storage.list('../x'), sc.InvalidKeyError, 'a rejected promise crosses as its class');
  storage.close();
  const never = new sc.Coordinator(config, new sc.WorkerStorage(backendsUrl, 'Async', ['never'], { callDeadlineMs: 300 }));
  never.start();
  cutOff(() => oneCheckpoint(never), 300, 'get');
});

test('a stuck storage leaves the process free to exit', () => {
  const script = join(dir, 'exit.mjs');
  writeFileSync(
    script,
    `import * as sc from 'sink-coordinator';
const storage = new sc.WorkerStorage(${JSON.stringify(backendsUrl.href)}, 'Stuck', ['get', 'wait'], { callDeadlineMs: 200 });
const c = new sc.Coordinator({ parallelism: 1, commitUser: 'u' }, storage);
c.start();
try {
  c.event(0, 0, new sc.Writer(0).report(1, []));
  c.checkpoint(1);
  c.checkpointComplete(1);
} catch (e) { console.log(e.name); }
`,
  );
  const r = spawnSync(process.execPath, [script], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.error, undefined, 'the child did not exit within 20 s');
  assert.deepEqual([r.status, r.stdout, r.stderr], [0, 'TrapError\n', '']);
});

test('a backend that throws a non-storage error, or cannot load, traps the call', () => {
  const c = new sc.Coordinator(config, new sc.WorkerStorage(backendsUrl, 'Throws'));
  c.start();
  assert.throws(() => oneCheckpoint(c), /storage get threw TypeError: not a storage error/);
  // An answer that cannot be posted back fails at once, not at the deadline.
  const t0 = Date.now();
  const odd = new sc.Coordinator(config, new sc.WorkerStorage(backendsUrl, 'Uncloneable', [], { callDeadlineMs: 20_000 }));
  odd.start();
  assert.throws(() => oneCheckpoint(odd), (e) => e instanceof sc.TrapError && /cannot be sent back/.test(e.message));
  assert.ok(Date.now() - t0 < 10_000, 'no wait for the deadline');
  const missing = new sc.Coordinator(config, new sc.WorkerStorage(backendsUrl, 'Nothing'));
  missing.start();
  assert.throws(() => oneCheckpoint(missing), (e) => e instanceof sc.TrapError && /exports no class Nothing/.test(e.message));
  for (const ms of [0, -1, 1.5, '300']) {
    assert.throws(() => new sc.WorkerStorage(backendsUrl, 'Stuck', [], { callDeadlineMs: ms }), RangeError);
  }
});

test('maxMemoryBytes: an instance whose memory grows past it traps and is dropped', () => {
  const runtime = new sc.Runtime({ maxMemoryBytes: sc.MIN_MEMORY_BYTES });
  assert.equal(runtime.maxMemoryBytes, sc.MIN_MEMORY_BYTES);
  const big = [new Uint8Array(3 << 20), new Uint8Array(3 << 20)];
  const event = (rt) => {
    const c = new sc.Coordinator(config, new sc.MemoryStorage(), { runtime: rt });
    c.start();
    return [c, () => c.event(0, 0, { checkpoint: 1, committables: big })];
  };
  // Small calls stay under the bound.
  const [small] = event(runtime);
  assert.deepEqual([...oneCheckpoint(small).committed], [1n]);
  const [c, call] = event(runtime);
  assert.throws(call, (e) => {
    assert.ok(e instanceof sc.TrapError, `${e}`);
    assert.match(e.message, /linear memory grew to \d+ bytes, past the runtime's maxMemoryBytes \(4194304\)/);
    return true;
  });
  assert.ok(c.discarded);
  // Without the bound, the same event is taken.
  const [, unbounded] = event(undefined);
  unbounded();
  for (const n of [0, sc.MIN_MEMORY_BYTES - 1, sc.MAX_MEMORY_BYTES + 1, 1.5]) {
    assert.throws(() => new sc.Runtime({ maxMemoryBytes: n }), RangeError);
  }
});

