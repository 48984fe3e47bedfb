// FileSystemStorage of the installed package against a hostile directory
// (issue 26): short writes and a full disk publish nothing and leave no
// temporary file; links, FIFOs, devices and directories at a key are refused
// at once; a value above maxValueBytes (a sparse file too) is refused before
// it is read. Each case failed on the storage before the fix (figures in
// docs/hosts/node.md, "FileSystemStorage"). Run by `make hosts-test`.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { loadInstalled, PROJECT } from '../installed.mjs';

const sc = await loadInstalled();
const ENTRY = pathToFileURL(createRequire(join(PROJECT, 'package.json')).resolve('sink-coordinator')).href;
const bytes = (s) => new TextEncoder().encode(s);

function withDir(f) {
  const dir = mkdtempSync(join(tmpdir(), 'sink-coordinator-hostile-'));
  try {
    return f(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/**
 * Runs `code` (an ES module with `sc` and `argv` in scope) in a child node,
 * started through the command `prefix` (e.g. `sh -c 'ulimit ...; exec "$@"'`);
 * its output, parsed as JSON.
 */
function child(code, { prefix = [], args = [], env = {}, timeout = 20000 } = {}) {
  const script = `const sc = await import(${JSON.stringify(ENTRY)}); const argv = process.argv.slice(1);\n${code}`;
  const cmd = [...prefix, process.execPath, '--input-type=module', '-e', script, ...args];
  const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', timeout, env: { ...process.env, ...env } });
  assert.notEqual(r.error?.code, 'ETIMEDOUT', `the child did not finish within ${timeout} ms`);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

// One 600 KiB create-once under a limit that cuts it short: the child
// reports what putIfAbsent said and which files it left.
const TORN = `
process.on('SIGXFSZ', () => {}); // a short write, not a killed process
const { readdirSync, statSync } = await import('node:fs');
const s = new sc.FileSystemStorage(argv[0]);
let result;
try {
  result = s.putIfAbsent('snapshot/1', new Uint8Array(600 * 1024).fill(7));
} catch (e) {
  result = e.constructor.name + ': ' + e.message;
}
const dir = argv[0] + '/snapshot';
console.log(JSON.stringify({ result, files: readdirSync(dir).map((f) => [f, statSync(dir + '/' + f).size]) }));
`;

test('a short write publishes nothing and leaves no temporary file (file size limit)', () => {
  withDir((dir) => {
    // ulimit -f counts 512-byte blocks in sh: 848 blocks = 424 KiB, so the
    // first write(2) of 600 KiB stops at 434,176 bytes and the next is EFBIG.
    // Before the fix: putIfAbsent true, a 434,176-byte snapshot published.
    const out = child(TORN, { prefix: ['sh', '-c', 'ulimit -f 848 && exec "$@"', 'sh'], args: [join(dir, 't')] });
    assert.match(String(out.result), /^BackendIOError: cannot create "snapshot\/1": EFBIG/);
    assert.deepEqual(out.files, []);
  });
});

test('a full disk (a 1 MiB tmpfs) publishes nothing and leaves no temporary file', (t) => {
  withDir((dir) => {
    // A mount of our own (root, or an unprivileged user and mount
    // namespace), 600 KiB of it filled: 424 KiB left for the snapshot.
    if (spawnSync('unshare', ['-rm', 'true']).status !== 0) return t.skip('unshare -rm is not available');
    const mount = 'mount -t tmpfs -o size=1m tmpfs "$MNT" && head -c 614400 /dev/zero > "$MNT/fill" && exec "$@"';
    const out = child(TORN, { prefix: ['unshare', '-rm', 'sh', '-c', mount, 'sh'], env: { MNT: dir }, args: [join(dir, 't')] });
    assert.match(String(out.result), /^BackendIOError: cannot create "snapshot\/1": ENOSPC/);
    assert.deepEqual(out.files, []);
  });
});

test('temporary names are random and opened exclusively: planted names are neither followed nor a failure', () => {
  withDir((dir) => {
    const s = new sc.FileSystemStorage(join(dir, 't'));
    writeFileSync(join(dir, 'victim'), 'keep');
    mkdirSync(join(dir, 't', 'snapshot'));
    // Every name the storage used to pick (pid and a counter from 0).
    for (let n = 0; n < 200; n++) symlinkSync(join(dir, 'victim'), join(dir, 't', 'snapshot', `.sinkcoord-tmp.${process.pid}.${n}`));
    assert.equal(s.putIfAbsent('snapshot/1', bytes('one')), true);
    s.put('snapshot/2', bytes('two'));
    assert.equal(readFileSync(join(dir, 'victim'), 'utf8'), 'keep');
    assert.equal(readdirSync(join(dir, 't', 'snapshot')).filter((f) => !f.startsWith('.')).length, 2);
    assert.deepEqual(s.list(''), ['snapshot/1', 'snapshot/2']);
  });
});

test('a symbolic link at a key or one of its directories is refused by every call, never followed', () => {
  withDir((dir) => {
    const root = join(dir, 't');
    const s = new sc.FileSystemStorage(root);
    mkdirSync(join(dir, 'outside'));
    writeFileSync(join(dir, 'outside', 'a'), 'outside');
    symlinkSync(join(dir, 'outside'), join(root, 'tag'));
    mkdirSync(join(root, 'snapshot'));
    symlinkSync(join(dir, 'outside', 'a'), join(root, 'snapshot', '1'));
    symlinkSync('/dev/zero', join(root, 'snapshot', '2'));
    for (const key of ['tag/a', 'tag/b', 'snapshot/1', 'snapshot/2']) {
      assert.throws(() => s.get(key), /symbolic link/, `get ${key}`);
      assert.throws(() => s.putIfAbsent(key, bytes('x')), sc.InvalidKeyError, `putIfAbsent ${key}`);
      assert.throws(() => s.put(key, bytes('x')), sc.InvalidKeyError, `put ${key}`);
      assert.throws(() => s.delete(key), sc.InvalidKeyError, `delete ${key}`);
    }
    assert.throws(() => s.list('tag/'), sc.InvalidKeyError);
    assert.throws(() => s.list('snapshot/'), sc.InvalidKeyError);
    assert.deepEqual(readdirSync(join(dir, 'outside')), ['a']);
    assert.equal(readFileSync(join(dir, 'outside', 'a'), 'utf8'), 'outside');
  });
});

test('a FIFO, a device or a directory at a key is refused at once, not read or waited on', (t) => {
  withDir((dir) => {
    if (!has('mkfifo')) return t.skip('no mkfifo');
    // In a child with a timeout: before the fix get() of a FIFO never returned.
    const code = `
const { execFileSync } = await import('node:child_process');
const { mkdirSync } = await import('node:fs');
const s = new sc.FileSystemStorage(argv[0]);
mkdirSync(argv[0] + '/snapshot/3', { recursive: true });
execFileSync('mkfifo', [argv[0] + '/snapshot/1']);
let device = false;
try { execFileSync('mknod', [argv[0] + '/snapshot/2', 'c', '1', '5'], { stdio: 'ignore' }); device = true; } catch {}
const out = { device };
for (const key of ['snapshot/1', 'snapshot/2', 'snapshot/3']) {
  if (key === 'snapshot/2' && !device) continue;
  const r = [];
  for (const f of [() => s.get(key), () => s.putIfAbsent(key, new Uint8Array(1))]) {
    try { r.push(String(f())); } catch (e) { r.push(e.constructor.name + ': ' + e.message); }
  }
  out[key] = r;
}
console.log(JSON.stringify(out));`;
    const t0 = Date.now();
    const out = child(code, { args: [join(dir, 't')], timeout: 10000 });
    assert.ok(Date.now() - t0 < 10000);
    const kinds = { 'snapshot/1': 'FIFO', 'snapshot/2': 'character device', 'snapshot/3': 'directory' };
    for (const [key, kind] of Object.entries(kinds)) {
      if (key === 'snapshot/2' && !out.device) continue;
      for (const r of out[key]) assert.match(r, new RegExp(`^InvalidKeyError: key "${key}".*is not a regular file \\(${kind}\\)`), r);
    }
  });
});

test('a coordinator over a table with a FIFO at its hint fails with a storage error instead of hanging', (t) => {
  withDir((dir) => {
    if (!has('mkfifo')) return t.skip('no mkfifo');
    const code = `
const { execFileSync } = await import('node:child_process');
const { mkdirSync } = await import('node:fs');
mkdirSync(argv[0] + '/hint', { recursive: true });
execFileSync('mkfifo', [argv[0] + '/hint/latest-snapshot']);
const c = new sc.Coordinator({ parallelism: 1, commitUser: 'job-1' }, new sc.FileSystemStorage(argv[0]));
let r;
try {
  c.start();
  c.event(0, 0, { checkpoint: 1, committables: [new Uint8Array([1])] });
  c.checkpoint(1);
  r = c.checkpointComplete(1);
} catch (e) {
  r = e.constructor.name + ': ' + e.message;
}
console.log(JSON.stringify(String(r)));`;
    const out = child(code, { args: [join(dir, 't')], timeout: 20000 });
    assert.match(out, /^StorageError: .*hint\/latest-snapshot.*not a regular file \(FIFO\)/);
  });
});

test('a value above maxValueBytes is refused before it is read or written; a sparse 3 GiB file costs nothing', () => {
  withDir((dir) => {
    const s = new sc.FileSystemStorage(join(dir, 't'));
    assert.equal(s.maxValueBytes, sc.DEFAULT_MAX_VALUE_BYTES);
    assert.equal(sc.DEFAULT_MAX_VALUE_BYTES, 2 ** 31);
    mkdirSync(join(dir, 't', 'snapshot'));
    mkdirSync(join(dir, 't', 'hint'));
    const sparse = (path, size) => {
      const fd = openSync(path, 'w');
      ftruncateSync(fd, size);
      closeSync(fd);
    };
    sparse(join(dir, 't', 'snapshot', '1'), 3 * 2 ** 30);
    sparse(join(dir, 't', 'snapshot', '2'), 1.5 * 2 ** 30);
    sparse(join(dir, 't', 'hint', 'latest-snapshot'), 2 ** 30);
    const rss = process.memoryUsage.rss();
    for (const [key, size, limit] of [
      ['snapshot/1', 3 * 2 ** 30, 2 ** 31],
      ['hint/latest-snapshot', 2 ** 30, sc.MAX_HINT_BYTES],
    ]) {
      let e;
      try {
        s.get(key);
      } catch (err) {
        e = err;
      }
      assert.ok(e instanceof sc.ValueTooLargeError && e instanceof sc.BackendIOError, String(e));
      assert.equal(e.kind, 'io');
      assert.deepEqual([e.key, e.size, e.limit], [key, size, limit]);
      assert.match(e.message, new RegExp(`"${key}" holds ${size} bytes, more than .* \\(${limit} bytes\\)`));
    }
    // A bound below the file: refused too, before reading 1.5 GiB.
    const small = new sc.FileSystemStorage(join(dir, 't'), { maxValueBytes: 2 ** 30 });
    assert.throws(() => small.get('snapshot/2'), sc.ValueTooLargeError);
    assert.ok(process.memoryUsage.rss() - rss < 256 * 2 ** 20, 'no file was read whole');
  });
});

test('maxValueBytes bounds writes and reads to the byte, also a file that grew', () => {
  withDir((dir) => {
    const s = new sc.FileSystemStorage(join(dir, 't'), { maxValueBytes: 8 });
    assert.equal(s.putIfAbsent('snapshot/1', bytes('12345678')), true);
    assert.equal(Buffer.from(s.get('snapshot/1')).toString(), '12345678');
    assert.throws(() => s.putIfAbsent('snapshot/2', bytes('123456789')), { name: 'ValueTooLargeError', size: 9, limit: 8 });
    assert.throws(() => s.put('tag/a', bytes('123456789')), sc.ValueTooLargeError);
    assert.deepEqual(s.list(''), ['snapshot/1']);
    assert.deepEqual(readdirSync(join(dir, 't', 'snapshot')), ['1']);
    writeFileSync(join(dir, 't', 'snapshot', '1'), '123456789');
    assert.throws(() => s.get('snapshot/1'), { name: 'ValueTooLargeError', size: 9, limit: 8 });
    assert.equal(s.get('snapshot/missing'), undefined);
    writeFileSync(join(dir, 't', 'snapshot', 'empty'), '');
    assert.deepEqual([...s.get('snapshot/empty')], []);
    for (const bad of [-1, 1.5, Number.NaN, '8']) {
      assert.throws(() => new sc.FileSystemStorage(join(dir, 't'), { maxValueBytes: bad }), RangeError, String(bad));
    }
    assert.equal(new sc.FileSystemStorage(join(dir, 't'), { maxValueBytes: 8n }).maxValueBytes, 8);
  });
});

test("opening a table removes dead writers' temporary files, as the Rust host does", () => {
  withDir((dir) => {
    const snapshots = join(dir, 't', 'snapshot');
    mkdirSync(snapshots, { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const names = [`.sinkcoord-tmp.${dead}.7`, `.sinkcoord-tmp.${process.pid}.7`, '.sinkcoord-tmp.1.7', '.sinkcoord-tmp.x.7'];
    for (const name of names) writeFileSync(join(snapshots, name), 'partial');
    const s = new sc.FileSystemStorage(join(dir, 't'));
    assert.deepEqual(s.removedTempFiles, [`snapshot/.sinkcoord-tmp.${dead}.7`]);
    assert.deepEqual(readdirSync(snapshots).sort(), names.slice(1).sort());
    assert.deepEqual(s.list(''), []);
  });
});
