// Coordinator.setTableFormat (component 0.2.5) on Paimon tables, through the
// installed package: the golden job of every host
// (tests/paimon/golden/two-checkpoints.json, written by the native core's
// guest/tests/paimon_golden.rs) leaves the same table byte for byte; the
// package built from the 0.2.4 artifact refuses Paimon with the Rust host's
// message; a bad committable is a fatal invalid-event; run.mjs's
// set-table-format line. Run by `make hosts-test` (node --test).

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { build } from '../package/build.mjs';
import { loadInstalled, PROJECT, REPO, withPackageCopy } from '../installed.mjs';

const sc = await loadInstalled();
const golden = JSON.parse(readFileSync(join(REPO, 'tests', 'paimon', 'golden', 'two-checkpoints.json'), 'utf8'));
const unhex = (h) => new Uint8Array(Buffer.from(h, 'hex'));
const hex = (b) => Buffer.from(b).toString('hex');
const NO_SET_TABLE_FORMAT = 'table-format paimon: the component has no set-table-format (it needs WIT 0.2.5 or later)';
const SCRIPT =
  '{"call": "coordinator", "h": 1, "args": [{"parallelism": 2, "commit-user": "job", "checkpointing": true, ' +
  '"final-commit": "on-checkpoint", "force-create-snapshot": false, "savepoint-auto-tag": false, ' +
  '"tag-time-retained-ms": null, "recovery": "restart"}, null]}\n' +
  '{"call": "set-table-format", "h": 1, "args": ["paimon"]}\n';

/** A coordinator over `storage` holding the golden schema, set to Paimon. */
function paimonCoordinator(storage) {
  storage.putIfAbsent(golden.schema.key, unhex(golden.schema.value));
  const { parallelism, 'commit-user': commitUser, 'savepoint-auto-tag': savepointAutoTag } = golden.config;
  const c = new sc.Coordinator({ parallelism, commitUser, savepointAutoTag }, storage, {
    clock: new sc.ManualClock(BigInt(golden['clock-ms'])),
  });
  c.setTableFormat('paimon');
  return c;
}

/** Every key and value of a MemoryStorage, values in hex. */
function tableOf(storage) {
  return Object.fromEntries(storage.list('').map((k) => [k, hex(storage.get(k))]));
}

/**
 * Runs the golden job: each event one `event` call, or (batched) each
 * checkpoint's events as one `events` batch (events-packed: the committables
 * cross as one block). Returns the table.
 */
function goldenJob(batched) {
  assert.equal(golden.format, 'paimon');
  const storage = new sc.MemoryStorage();
  const c = paimonCoordinator(storage);
  let batch = [];
  golden.steps.forEach((s, i) => {
    switch (s.call) {
      case 'start':
        c.start();
        break;
      case 'event': {
        const entry = {
          checkpoint: s.checkpoint,
          committables: s.committables.map(unhex),
          watermark: s.watermark ?? undefined,
          savepoint: s.savepoint,
        };
        if (batched) batch.push({ subtask: s.subtask, attempt: s.attempt, entry });
        else c.event(s.subtask, s.attempt, entry);
        break;
      }
      case 'checkpoint-complete': {
        if (batch.length) c.events(batch);
        batch = [];
        const out = c.checkpointComplete(s.checkpoint);
        assert.deepEqual([...out.committed].map(Number), s.committed, `step ${i}`);
        assert.deepEqual(out.tagsCreated, s['tags-created'], `step ${i}`);
        break;
      }
      default:
        assert.fail(`step ${i}: unknown call ${s.call}`);
    }
  });
  return tableOf(storage);
}

for (const batched of [false, true]) {
  test(`the golden Paimon job writes the golden table, byte for byte (${batched ? 'events-packed' : 'event'})`, () => {
    const got = goldenJob(batched);
    assert.deepEqual(Object.keys(got).sort(), Object.keys(golden.table).sort(), "the table's keys");
    for (const [k, v] of Object.entries(golden.table)) assert.equal(got[k], v, k);
  });
}

test('a bad committable on a Paimon table is a fatal invalid-event naming the subtask and checkpoint', () => {
  const storage = new sc.MemoryStorage();
  const c = paimonCoordinator(storage);
  c.start();
  assert.throws(
    () => c.event(1, 0, { checkpoint: 7n, committables: [new Uint8Array([0])] }),
    (e) => e instanceof sc.InvalidEventError && e.detail.startsWith('event of subtask 1 for checkpoint 7: committable 0: '),
  );
  assert.equal(c.state(), 'failed');
  assert.deepEqual(storage.list(''), ['schema/schema-0']);
});

test('the tableFormat option sets the format when the coordinator is created', () => {
  const storage = new sc.MemoryStorage();
  storage.putIfAbsent(golden.schema.key, unhex(golden.schema.value));
  const c = new sc.Coordinator({ parallelism: 2, commitUser: 'job' }, storage, { clock: new sc.ManualClock(1n), tableFormat: 'paimon' });
  c.start();
  assert.throws(() => c.event(0, 0, { checkpoint: 1n, committables: [new TextEncoder().encode('file-1')] }), sc.InvalidEventError);
  assert.throws(() => new sc.Coordinator({ parallelism: 1, commitUser: 'job' }, storage, { tableFormat: 'delta' }), TypeError);
});

test('the format is chosen only while created; an unknown one is a TypeError', () => {
  const c = new sc.Coordinator({ parallelism: 1, commitUser: 'job' }, new sc.MemoryStorage(), { clock: new sc.ManualClock(1n) });
  assert.throws(() => c.setTableFormat('iceberg'), { name: 'TypeError', message: 'unknown table format "iceberg" (native or paimon)' });
  c.start();
  assert.throws(() => c.setTableFormat('paimon'), sc.IllegalStateError);
});

test('the package built from the 0.2.4 artifact takes native and refuses paimon', async () => {
  // The installed package's modules beside a 0.2.4 transpilation, inside the
  // project (whose node_modules has the package's dependency semver).
  await withPackageCopy('sink-coordinator-0.2.4-', async (dir) => {
    assert.equal(await build(join(REPO, 'dist', 'sink-coordinator-0.2.4.wasm'), join(dir, 'component')), '0.2.4');
    const old = await import(pathToFileURL(join(dir, 'index.js')).href);
    const c = new old.Coordinator({ parallelism: 1, commitUser: 'job' }, new old.MemoryStorage(), { clock: new old.ManualClock(1n) });
    c.setTableFormat('native');
    assert.throws(() => c.setTableFormat('paimon'), (e) => e instanceof old.InvalidConfigError && e.detail === NO_SET_TABLE_FORMAT);
    assert.equal(c.start().state, 'running', 'the refusal left the coordinator usable');
    const opts = (tableFormat) => ({ clock: new old.ManualClock(1n), tableFormat });
    new old.Coordinator({ parallelism: 1, commitUser: 'job' }, new old.MemoryStorage(), opts('native'));
    assert.throws(
      () => new old.Coordinator({ parallelism: 1, commitUser: 'job' }, new old.MemoryStorage(), opts('paimon')),
      (e) => e instanceof old.InvalidConfigError && e.detail === NO_SET_TABLE_FORMAT,
    );
  });
});

test('run.mjs executes a set-table-format line', () => {
  const dir = mkdtempSync(join(PROJECT, 'script-'));
  try {
    const script = join(dir, 'format.script');
    writeFileSync(script, SCRIPT);
    const run = join(REPO, 'hosts', 'node', 'run.mjs');
    assert.equal(execFileSync(process.execPath, [run, script], { encoding: 'utf8' }), '{"ok":null}\n{"ok":null}\n');
    writeFileSync(script, SCRIPT.replace('["paimon"]', '["iceberg"]'));
    const bad = spawnSync(process.execPath, [run, script], { encoding: 'utf8' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /script line 2: set-table-format failed: unknown table format "iceberg"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
