#!/usr/bin/env node
// Executes a resolved call script (`sinkcoord script TRACE`, format in
// hosts/README.md) through the *installed* npm package `sink-coordinator`
// (its API: Coordinator, Writer, Table, a Storage and a Clock) and prints
// each call's raw result, one JSON line per call line: {"ok": VALUE} or
// {"err": {"kind", "message"}}. `sinkcoord script --render RAW TRACE` turns
// them into the result document. The trace semantics (parsing, outboxes,
// faults, rendering) live in the Rust test kit; this script only turns the
// script's arguments into the package's values and back, and serves storage
// and clock from the script, checking every import call against it.
//
//   node hosts/node/run.mjs [--component FILE] SCRIPT
//
// The package is resolved from the project $SINK_COORDINATOR_NODE_PROJECT
// (default <repo>/target/node-package/project, made by package.sh).
// --component FILE must be the component the package was built from (its
// SHA-256 is compared): the package carries its transpilation, not a loader.
//
// Exit codes: 0 executed (even if calls returned errors), 1 the component's
// calls differ from the script, it trapped, or the host failed; 2 usage.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { loadInstalled } from './installed.mjs';

const USAGE = 'usage: node run.mjs [--component FILE] SCRIPT';
const fail = (code, message) => {
  process.stderr.write(`run.mjs: ${message}\n`);
  process.exit(code);
};

const argv = process.argv.slice(2);
let component = null;
if (argv[0] === '--component') component = argv.splice(0, 2)[1];
if (argv.length !== 1 || argv[0].startsWith('-')) fail(2, USAGE);
const lines = readFileSync(argv[0], 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));

let sc;
try {
  sc = await loadInstalled();
} catch (e) {
  fail(1, e.message);
}

const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const camel = (k) => k.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
const kebab = (k) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** A script argument as jco takes it (wire form: testkit/src/script/wire.rs). */
function decode(v) {
  if (v === null) return undefined;
  if (Array.isArray(v)) return v.map(decode);
  if (typeof v !== 'object') return v;
  if ('u64' in v) return BigInt(v.u64);
  if ('s64' in v) return BigInt(v.s64);
  if ('bytes' in v) return new Uint8Array(Buffer.from(v.bytes, 'hex'));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [camel(k), decode(x)]));
}

/** A value jco returned, in the raw result form. */
function encode(v) {
  if (v === undefined || v === null) return null;
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return hex(v);
  if (ArrayBuffer.isView(v) || Array.isArray(v)) return Array.from(v, encode);
  if (typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [kebab(k), encode(x)]));
}

// The position in the script; a divergence stops everything (an import that
// throws traps the instance, so the message is kept here).
let pos = 0;
let divergence = null;
const show = (l) => (l === undefined ? 'the end of the script' : JSON.stringify(l));
function diverge(message) {
  divergence ??= `script line ${pos + 1}: ${message}`;
  throw new Error(divergence);
}

/** The next line must be this import call; returns it. */
function expect(kind, call) {
  const line = lines[pos];
  const same = line !== undefined && Object.keys(call).every((k) => line[k] === call[k]);
  if (!same || line[kind] === undefined) diverge(`the component calls ${JSON.stringify(call)}, the script has ${show(line)}`);
  pos++;
  return line;
}

const map = new Map();
const byteOrder = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const storageError = (f) => new (f.kind === 'invalid-key' ? sc.InvalidKeyError : sc.BackendIOError)(f.message);
/** A write: applied unless the script's fault says it was not. */
function write(op, key, value, apply) {
  const { fault } = expect('storage', value ? { storage: op, key, value: hex(value) } : { storage: op, key });
  if (fault && !fault.applied) throw storageError(fault);
  const r = apply();
  if (fault) throw storageError(fault);
  return r;
}
/** The package's Storage and Clock, served from the script. */
const storage = {
  get: (key) => {
    const { fault } = expect('storage', { storage: 'get', key });
    if (fault) throw storageError(fault);
    return map.get(key)?.slice();
  },
  putIfAbsent: (key, value) =>
    write('put-if-absent', key, value, () => !map.has(key) && Boolean(map.set(key, value.slice()))),
  put: (key, value) => write('put', key, value, () => void map.set(key, value.slice())),
  delete: (key) => write('delete', key, null, () => void map.delete(key)),
  list: (prefix) => {
    const { fault } = expect('storage', { storage: 'list', key: prefix });
    if (fault) throw storageError(fault);
    return [...map.keys()].filter((k) => k.startsWith(prefix)).sort(byteOrder);
  },
};
const clock = { nowMs: () => BigInt(expect('clock', {}).clock.u64) };

let runtime;
try {
  runtime = sc.Runtime.default();
  if (component) {
    const sha256 = createHash('sha256').update(readFileSync(component)).digest('hex');
    if (sha256 !== runtime.sha256) {
      fail(1, `the installed package was built from the component ${runtime.sha256}, not ${component} (${sha256}): rebuild it (hosts/node/package.sh)`);
    }
  }
} catch (e) {
  fail(1, e.message);
}
const handles = new Map();
const table = new sc.Table(storage, { clock, runtime });

function invoke(line, args) {
  switch (line.call) {
    case 'coordinator':
      handles.set(line.h, new sc.Coordinator(args[0], storage, { clock, restore: args[1], runtime }));
      return undefined;
    case 'writer':
      handles.set(line.h, new sc.Writer(args[0], { storage, clock, runtime }));
      return undefined;
    default: {
      const target = line.h === undefined ? table : handles.get(line.h);
      if (!target) diverge(`no handle ${line.h}`);
      return target[camel(line.call)](...args);
    }
  }
}

const out = [];
while (pos < lines.length) {
  const line = lines[pos++];
  if (line.call === undefined) {
    pos--;
    fail(1, `script line ${pos + 1}: the component did not make the import call ${show(line)}`);
  }
  let raw;
  try {
    raw = { ok: encode(invoke(line, line.args.map(decode))) };
  } catch (e) {
    if (divergence) fail(1, divergence);
    if (e instanceof sc.TrapError) fail(1, `script line ${pos}: ${line.call} trapped: ${e.message}`);
    // Thrown before the component is entered (an argument the package refuses, an unknown call).
    if (!(e instanceof sc.CoordinatorError)) fail(1, `script line ${pos}: ${line.call} failed: ${e?.message ?? e}`);
    raw = { err: { kind: e.kind, message: e.detail } };
  }
  out.push(`${JSON.stringify(raw)}\n`);
}
process.stdout.write(out.join(''));
