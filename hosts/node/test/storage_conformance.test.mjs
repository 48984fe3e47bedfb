// The storage conformance suite of every host (tests/storage/cases.json,
// tests/storage/README.md) against the installed package's FileSystemStorage
// (every case) and MemoryStorage (the cases without bounds or a file system:
// it is a Map for tests and examples, with the key rules). Every case runs
// even after another fails; the test fails with one line per failed step. Run by
// `make hosts-test` (node --test hosts/node/test/). SINKCOORD_STORAGE_CASES
// names another cases file (to check that a broken expectation fails).
// A `full-disk` case runs on a tmpfs of options.full_disk_bytes mounted at
// the table root (root on Linux), unmounted after it; where the mount fails
// the case is skipped with one line saying why.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync, ftruncateSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

import { loadInstalled, PROJECT, REPO } from '../installed.mjs';

const sc = await loadInstalled();
const ENTRY = pathToFileURL(createRequire(join(PROJECT, 'package.json')).resolve('sink-coordinator')).href;
const SUITE = JSON.parse(
  readFileSync(process.env.SINKCOORD_STORAGE_CASES || join(REPO, 'tests', 'storage', 'cases.json'), 'utf8'),
);
assert.equal(SUITE.version, 1, 'cases.json version');
const OPTIONS = SUITE.options;
// The temporary-file prefix of every host's directory storage (not exported by the package).
const TMP_PREFIX = '.sinkcoord-tmp.';

/** A suite value: a string's UTF-8, or byte i of {size, seed} = (seed + i + (i >> 8)) & 0xff. */
function valueOf(v) {
  if (typeof v === 'string') return new TextEncoder().encode(v);
  const out = new Uint8Array(v.size);
  for (let i = 0; i < v.size; i++) out[i] = (v.seed + i + Math.floor(i / 256)) & 0xff;
  return out;
}

const show = (b) => (b.length <= 40 ? JSON.stringify(new TextDecoder().decode(b)) : `<${b.length} bytes>`);
const same = (a, b) => a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

/** A thrown storage error as the suite names it (anything else is not a storage error). */
function kindOf(e) {
  if (e instanceof sc.ValueTooLargeError) return 'value-too-large';
  if (e instanceof sc.InvalidKeyError) return 'invalid-key';
  if (e instanceof sc.BackendIOError) return 'io';
  return `non-storage ${e?.constructor?.name}`;
}

/** One call's outcome against the step's expectation; a failure's text or null. */
function compare(call, expect, render) {
  let got;
  try {
    got = call();
  } catch (e) {
    if (expect.error && kindOf(e) === expect.error) return null;
    return `got ${kindOf(e)} error: ${e.message}`;
  }
  if (expect.error) return `expected a ${expect.error} error, got ${render(got)}`;
  return null;
}

function tempFiles(dir, found) {
  for (const ent of readdirSync(dir, { withFileTypes: true })) {
    if (ent.isDirectory()) tempFiles(join(dir, ent.name), found);
    else if (ent.isFile() && ent.name.startsWith(TMP_PREFIX)) found.push(join(dir, ent.name));
  }
}

/** A planted path with `{pid}` replaced by this process's id. */
const withPid = (p) => p.replaceAll('{pid}', String(process.pid));

function plant(root, s) {
  const outside = join(dirname(root), 'outside');
  const target = { 'outside-file': 'file', 'outside-dir': 'dir', 'outside-missing': 'missing' }[s.target];
  if (s.op === 'plant-temp-links') {
    for (const d of s.dirs) {
      mkdirSync(join(root, d), { recursive: true });
      for (let n = 0; n < s.count; n++) symlinkSync(join(outside, target), join(root, d, `${TMP_PREFIX}${process.pid}.${n}`));
    }
    return;
  }
  const path = join(root, withPid(s.path));
  mkdirSync(dirname(path), { recursive: true });
  switch (s.kind) {
    case 'symlink': symlinkSync(join(outside, target), path); break;
    case 'dir': mkdirSync(path); break;
    case 'file': writeFileSync(path, valueOf(s.value)); break;
    case 'sparse': { const fd = openSync(path, 'w'); ftruncateSync(fd, s.size); closeSync(fd); break; }
    case 'fifo': assert.equal(spawnSync('mkfifo', [path]).status, 0, `mkfifo ${path}`); break;
    default: throw new Error(`unknown kind ${s.kind}`);
  }
}

// A racer: its own FileSystemStorage on the table, released for each key
// together with the others through a shared counter.
const RACER = `
const { workerData, parentPort } = await import('node:worker_threads');
const sc = await import(workerData.entry);
const st = new sc.FileSystemStorage(workerData.root, { maxValueBytes: workerData.max });
const gate = new Int32Array(workerData.gate);
const won = [];
for (let k = 0; k < workerData.keys; k++) {
  // A barrier: the last racer to arrive at key k opens it for everyone.
  if (Atomics.add(gate, 0, 1) + 1 === workerData.racers * (k + 1)) Atomics.notify(gate, 0);
  while (Atomics.load(gate, 0) < workerData.racers * (k + 1)) Atomics.wait(gate, 0, Atomics.load(gate, 0), 50);
  won.push(st.putIfAbsent(workerData.prefix + k, new TextEncoder().encode('racer-' + workerData.r)));
}
parentPort.postMessage(won);
`;

async function race(table, s) {
  let results;
  if (table.root) {
    const gate = new SharedArrayBuffer(4);
    results = await Promise.all(Array.from({ length: s.racers }, (_, r) => new Promise((resolve, reject) => {
      const w = new Worker(RACER, {
        eval: true,
        type: 'module',
        workerData: { entry: ENTRY, root: table.root, max: OPTIONS.max_value_bytes, gate, keys: s.keys, racers: s.racers, prefix: s.prefix, r },
      });
      w.once('message', resolve);
      w.once('error', reject);
    })));
  } else {
    // One thread: the handles (one Map) take turns on each key.
    const handles = Array.from({ length: s.racers }, () => table.open());
    results = handles.map(() => []);
    for (let k = 0; k < s.keys; k++) {
      handles.forEach((h, r) => results[r].push(h.putIfAbsent(s.prefix + k, new TextEncoder().encode(`racer-${r}`))));
    }
  }
  const st = table.open();
  for (let k = 0; k < s.keys; k++) {
    const winners = results.map((w, r) => (w[k] ? r : -1)).filter((r) => r >= 0);
    const stored = st.get(s.prefix + k);
    if (winners.length !== 1 || !stored || !same(stored, valueOf(`racer-${winners[0]}`))) {
      return `key ${k}: winners ${JSON.stringify(winners)}, stored ${stored && show(stored)}`;
    }
  }
  return null;
}

async function step(table, h, s) {
  const e = s.expect ?? {};
  switch (s.op) {
    case 'get': {
      let v;
      return compare(() => { v = h.st.get(s.key); return v; }, e, (x) => (x === undefined ? 'missing' : show(x)))
        ?? (e.error ? null
          : e.missing ? (v === undefined ? null : `expected missing, got ${show(v)}`)
            : v === undefined ? `expected ${show(valueOf(e.value))}, got missing`
              : same(v, valueOf(e.value)) ? null : `expected ${show(valueOf(e.value))}, got ${show(v)}`);
    }
    case 'put-if-absent': {
      let created;
      return compare(() => { created = h.st.putIfAbsent(s.key, valueOf(s.value)); return created; }, e, (c) => `created=${c}`)
        ?? (e.error || created === e.created ? null : `expected created=${e.created}, got created=${created}`);
    }
    case 'put':
      return compare(() => h.st.put(s.key, valueOf(s.value)), e, () => 'ok');
    case 'delete':
      return compare(() => h.st.delete(s.key), e, () => 'ok');
    case 'list': {
      let keys;
      return compare(() => { keys = h.st.list(s.prefix); return keys; }, e, (k) => JSON.stringify(k))
        ?? (e.error || JSON.stringify(keys) === JSON.stringify(e.keys)
          ? null : `expected ${JSON.stringify(e.keys)}, got ${JSON.stringify(keys)}`);
    }
    case 'reopen':
      h.st = table.open();
      return null;
    case 'race':
      return race(table, s);
    case 'plant':
    case 'plant-temp-links':
      plant(table.root, s);
      return null;
    case 'check-outside': {
      if (!table.root) return null;
      const outside = join(dirname(table.root), 'outside');
      const file = readFileSync(join(outside, 'file'), 'utf8');
      const entries = readdirSync(join(outside, 'dir')).length;
      const created = lstatSync(join(outside, 'missing'), { throwIfNoEntry: false }) !== undefined;
      return file === OPTIONS.outside_file_content && entries === 0 && !created
        ? null : `outside the table changed: file ${JSON.stringify(file)}, ${entries} entries in dir, missing created: ${created}`;
    }
    case 'check-temp': {
      for (const [field, want] of [['present', true], ['absent', false]]) {
        for (const p of e[field] ?? []) {
          if ((lstatSync(join(table.root, withPid(p)), { throwIfNoEntry: false }) !== undefined) !== want) return `${withPid(p)} should be ${field}`;
        }
      }
      return null;
    }
    case 'check-no-temp': {
      if (!table.root) return null;
      const found = [];
      tempFiles(table.root, found);
      return found.length ? `temporary files left: ${found.join(', ')}` : null;
    }
    default:
      return `unknown op ${s.op}`;
  }
}

/**
 * Mounts a tmpfs of `bytes` at `dir` (the `full-disk` capability: root on
 * Linux); null, or why it cannot.
 */
function mountTmpfs(dir, bytes) {
  const args = ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir];
  try {
    execFileSync('mount', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    return null;
  } catch (e) {
    // One line: mount's message (its own lines joined), or the spawn error.
    const why = (e.stderr?.toString() ?? '').trim().replace(/\s*\n\s*/g, '; ') || e.message;
    return `mount ${args.join(' ')}: ${why}`;
  }
}

/** Detaches the tmpfs at `dir` (umount -l: even while a handle is open); null, or why it failed. */
function unmount(dir) {
  try {
    execFileSync('umount', ['-l', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    return null;
  } catch (e) {
    return `umount -l ${dir}: ${(e.stderr?.toString() ?? '').trim().replace(/\s*\n\s*/g, '; ') || e.message}`;
  }
}

/**
 * Runs every case the backend can; one line per failed step. `fresh(name,
 * requires)` makes a case's table; a table with `skip` (why) is a case the
 * backend cannot run after all (a `full-disk` case whose tmpfs cannot be
 * mounted): one line says why, and it counts as skipped. `close` returns
 * an error's text, or nothing.
 */
async function run(name, capabilities, fresh) {
  const failures = [];
  let passed = 0;
  let skipped = 0;
  for (const c of SUITE.cases) {
    if (!(c.requires ?? []).every((r) => capabilities.includes(r))) {
      skipped++;
      continue;
    }
    const table = fresh(c.name, c.requires ?? []);
    if (table.skip) {
      console.log(`storage conformance, ${c.name}: skipped: ${table.skip}`);
      skipped++;
      table.close?.();
      continue;
    }
    try {
      const h = { st: table.open() };
      const before = failures.length;
      for (const [i, s] of c.steps.entries()) {
        let why;
        try {
          why = await step(table, h, s);
        } catch (e) {
          why = `threw ${e?.constructor?.name}: ${e?.message}`;
        }
        const at = JSON.stringify(s.key ?? s.prefix ?? '');
        if (why) failures.push(`${name}: ${c.name} step ${i} (${s.op} ${at.length > 60 ? `${at.slice(0, 60)}...` : at}): ${why}`);
      }
      if (failures.length === before) passed++;
    } finally {
      const why = table.close?.();
      if (why) failures.push(`${name}: ${c.name}: ${why}`);
    }
  }
  console.log(`storage conformance, ${name}: ${passed} passed, ${failures.length} failed steps, ${skipped} skipped`);
  assert.ok(passed > 0, `${name}: no case ran`);
  if (failures.length) assert.fail(`${failures.length} failed steps:\n${failures.join('\n')}`);
}

test('FileSystemStorage passes the storage conformance suite', { timeout: 300000 }, async () => {
  await run('FileSystemStorage', ['key-rules', 'bounded', 'filesystem', 'full-disk'], (name, requires) => {
    const base = mkdtempSync(join(tmpdir(), `sinkcoord-conformance-${name}-`));
    mkdirSync(join(base, 'outside', 'dir'), { recursive: true });
    writeFileSync(join(base, 'outside', 'file'), OPTIONS.outside_file_content);
    const root = join(base, 'table');
    mkdirSync(root);
    // full-disk: a small tmpfs at the root, before the storage is opened.
    const mountError = requires.includes('full-disk') ? mountTmpfs(root, OPTIONS.full_disk_bytes) : null;
    const mounted = requires.includes('full-disk') && !mountError;
    return {
      root,
      skip: mountError && `cannot mount a tmpfs (${mountError})`,
      open: () => new sc.FileSystemStorage(root, { maxValueBytes: OPTIONS.max_value_bytes }),
      close: () => {
        const why = mounted ? unmount(root) : null;
        // Never remove through a mount that is still attached.
        if (!why) rmSync(base, { recursive: true, force: true });
        return why;
      },
    };
  });
});

test('MemoryStorage passes the storage conformance suite', async () => {
  await run('MemoryStorage', ['key-rules'], () => {
    const st = new sc.MemoryStorage();
    return { root: undefined, open: () => st };
  });
});
