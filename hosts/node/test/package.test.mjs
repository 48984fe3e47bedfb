// The installed npm package (hosts/node/package.sh packs it and installs the
// tarball into a fresh project; installed.mjs resolves it from there): the
// README example, the API, the error classes, both storages and the clock.
// Run by `make hosts-test` (node --test).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadInstalled, PROJECT, REPO } from '../installed.mjs';

const sc = await loadInstalled();
const bytes = (s) => new TextEncoder().encode(s);
const config = { parallelism: 1, commitUser: 'job-1' };

test('the package is the installed tarball, with its component and declarations', () => {
  const dir = join(PROJECT, 'node_modules', 'sink-coordinator');
  for (const f of ['index.d.ts', 'component/sink-coordinator.d.ts', 'component/interfaces/sink-coordinator-types.d.ts']) {
    assert.ok(existsSync(join(dir, f)), f);
  }
  assert.equal(sc.Runtime.default().version, '0.2.10');
  const dist = readFileSync(join(REPO, 'dist', 'sink-coordinator-0.2.10.wasm.sha256'), 'utf8').split(' ')[0];
  assert.equal(sc.Runtime.default().sha256, dist);
});

test('the package exports the Paimon committable builder (package/paimon.js)', () => {
  const vectors = JSON.parse(readFileSync(join(REPO, 'tests', 'paimon', 'committables.json'), 'utf8'));
  const minimal = vectors.cases.find((c) => c.name === 'minimal').hex;
  const f = { fileName: 'data-1-0.parquet', fileSize: 1234n, rowCount: 10n, schemaId: 0n, minSequenceNumber: 0n, maxSequenceNumber: 9n, creationTimeMillis: 1700000000000n };
  assert.equal(Buffer.from(sc.encodeCommittable(f)).toString('hex'), minimal);
  assert.equal(sc.MAX_FILE_NAME_BYTES, 255);
});

test('the README example runs in the project', () => {
  const readme = readFileSync(join(REPO, 'hosts', 'node', 'package', 'README.md'), 'utf8');
  const code = /## Example\n\n```js\n([\s\S]*?)```/.exec(readme)[1];
  const file = join(PROJECT, 'readme-example.mjs');
  writeFileSync(file, code);
  assert.equal(execFileSync(process.execPath, [file], { cwd: PROJECT, encoding: 'utf8' }), '[ 1n ] 1n file-1.parquet\n');
});

test('commit, tags and a restored coordinator', () => {
  const storage = new sc.MemoryStorage();
  const clock = new sc.ManualClock(5);
  const c = new sc.Coordinator({ parallelism: 2, commitUser: 'job-1', savepointAutoTag: true }, storage, { clock });
  assert.equal(c.state(), 'created');
  assert.equal(c.start().state, 'running');
  const [w0, w1] = [new sc.Writer(0), new sc.Writer(1)];
  c.event(0, 0, w0.report(1, [bytes('a')]));
  c.event(1, 0, w1.report(1, [bytes('b')], -3, true));
  const state = c.checkpoint(1);
  const outcome = c.checkpointComplete(1);
  assert.deepEqual([...outcome.committed], [1n]);
  assert.equal(outcome.committedUpTo, 1n);
  assert.equal(outcome.tagsCreated.length, 1);
  w0.committed(1);
  assert.deepEqual(new sc.Writer(0).restore(w0.state(), 1), []);
  const table = new sc.Table(storage);
  const [snap] = table.listSnapshots();
  assert.deepEqual(snap.committables.map(([s, b]) => [s, Buffer.from(b).toString()]), [[0, 'a'], [1, 'b']]);
  assert.equal(snap.timeMs, 5n);
  assert.equal(table.snapshotById(99), undefined);
  assert.equal(table.listTags()[0].snapshotId, snap.id);
  const again = new sc.Coordinator({ parallelism: 2, commitUser: 'job-1' }, storage, { clock, restore: { checkpoint: 1, state } });
  assert.deepEqual([...again.start().committed], []);
  assert.equal(table.listSnapshots().length, 1);
});

test('packCommittables writes one block: a LEB128 count, then LEB128 lengths and bytes', () => {
  assert.deepEqual([...sc.packCommittables([bytes('ab'), new Uint8Array(0)])], [2, 2, 97, 98, 0]);
  const big = sc.packCommittables([new Uint8Array(300)]);
  assert.deepEqual([...big.subarray(0, 3)], [1, 0xac, 0x02]);
  assert.equal(big.length, 303);
});

test('a batch of events is the same events one by one', () => {
  const run = (batched) => {
    const storage = new sc.MemoryStorage();
    const clock = new sc.ManualClock(5);
    const c = new sc.Coordinator({ parallelism: 3, commitUser: 'job-1', savepointAutoTag: true }, storage, { clock });
    c.start();
    const seen = [];
    for (const cp of [1, 2]) {
      const events = [0, 1, 2].map((s) => ({ subtask: s, attempt: 0, entry: { checkpoint: cp, committables: [bytes(`${s}-${cp}`)], savepoint: cp === 2 } }));
      const o = batched ? c.events(events) : events.map((e) => c.event(e.subtask, e.attempt, e.entry)).at(-1);
      seen.push([o.state, [...o.committed], o.tagsCreated, o.committedUpTo]);
      c.checkpoint(cp);
      seen.push(c.checkpointComplete(cp).tagsCreated.length);
    }
    return [seen, new sc.Table(storage).listSnapshots()];
  };
  assert.deepEqual(run(true), run(false));
  // An error names the failing event; the ones before it stay applied.
  const c = new sc.Coordinator({ parallelism: 2, commitUser: 'job-1' }, new sc.MemoryStorage());
  c.start();
  assert.equal(c.events([]).state, 'running');
  const ev = (s) => ({ subtask: s, attempt: 0, entry: { checkpoint: 1, committables: [bytes('x')] } });
  assert.throws(() => c.events([ev(0), ev(1), ev(7), ev(0)]), (e) => e instanceof sc.InvalidEventError && e.applied === 2 && e.outcome.state === 'failed');
  assert.equal(c.state(), 'failed');
});

test('one error class per kind', () => {
  const c = new sc.Coordinator(config, new sc.MemoryStorage());
  assert.throws(() => c.checkpointComplete(1), (e) => e instanceof sc.IllegalStateError && e.kind === 'illegal-state' && e instanceof sc.CoordinatorError);
  assert.throws(() => new sc.Coordinator(config, new sc.MemoryStorage()).setLimits({ maxEventBytes: 0 }), sc.InvalidConfigError);
  const d = new sc.Coordinator(config, new sc.MemoryStorage());
  d.start();
  assert.throws(() => d.event(5, 0, { checkpoint: 1, committables: [bytes('x')] }), sc.InvalidEventError);
  const bad = new sc.Coordinator(config, new sc.MemoryStorage(), { restore: { checkpoint: 1, state: new Uint8Array([255, 255]) } });
  assert.throws(() => bad.start(), sc.CorruptStateError);
  assert.deepEqual(Object.keys(sc.ERRORS).sort(), ['corrupt-state', 'declined', 'illegal-state', 'invalid-config', 'invalid-event', 'storage', 'trap']);
});

test('a storage error from get is a StorageError; anything else a storage throws traps', () => {
  class Failing extends sc.MemoryStorage {
    get(key) {
      throw new sc.BackendIOError(`disk on fire reading ${key}`);
    }
  }
  const c = new sc.Coordinator(config, new Failing());
  c.start();
  assert.throws(() => c.event(0, 0, { checkpoint: 1, committables: [bytes('a')] }), (e) => e instanceof sc.StorageError && /disk on fire/.test(e.detail));
  assert.equal(c.discarded, false);
  class Broken extends sc.MemoryStorage {
    get() {
      throw new RangeError('bug');
    }
  }
  const d = new sc.Coordinator(config, new Broken());
  d.start();
  assert.throws(() => d.event(0, 0, { checkpoint: 1, committables: [bytes('a')] }), sc.TrapError);
  assert.equal(d.discarded, true);
  assert.throws(() => d.state(), sc.TrapError);
});

test('FileSystemStorage: a table in a directory, confined keys, create-once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sink-coordinator-fs-'));
  try {
    const c = new sc.Coordinator(config, new sc.FileSystemStorage(dir), { clock: new sc.ManualClock(7n) });
    c.start();
    for (const cp of [1n, 2n]) {
      c.event(0, 0, { checkpoint: cp, committables: [bytes(`f${cp}`)] });
      c.checkpoint(cp);
      c.checkpointComplete(cp);
    }
    assert.deepEqual(new sc.Table(new sc.FileSystemStorage(dir)).listSnapshots().map((s) => s.identifier), [1n, 2n]);
    const sinkcoord = join(REPO, 'target', 'release', 'sinkcoord');
    if (existsSync(sinkcoord)) {
      const out = execFileSync(sinkcoord, ['inspect', dir, '--json'], { encoding: 'utf8' });
      assert.match(out.replace(/ /g, ''), /\[0,"f2"\]/);
    }
    const s = new sc.FileSystemStorage(join(dir, 'kv'));
    for (const bad of ['', '/abs', 'a/../b', 'a//b', 'a\\b', 'a/./b', 'x/.sinkcoord-tmp.1']) {
      assert.throws(() => s.get(bad), sc.InvalidKeyError, bad);
    }
    assert.equal(s.putIfAbsent('snapshot/1', bytes('one')), true);
    assert.equal(s.putIfAbsent('snapshot/1', bytes('two')), false);
    assert.equal(Buffer.from(s.get('snapshot/1')).toString(), 'one');
    s.put('hint/latest', bytes('1'));
    s.put('hint/latest', bytes('2'));
    assert.equal(Buffer.from(s.get('hint/latest')).toString(), '2');
    assert.deepEqual(s.list(''), ['hint/latest', 'snapshot/1']);
    assert.deepEqual(s.list('snap'), ['snapshot/1']);
    assert.deepEqual(s.list('snapshot/'), ['snapshot/1']);
    assert.deepEqual(s.list('tag/'), []);
    s.delete('snapshot/1');
    s.delete('snapshot/1');
    assert.equal(s.get('snapshot/1'), undefined);
    assert.deepEqual(readdirSync(join(dir, 'kv', 'snapshot')), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
