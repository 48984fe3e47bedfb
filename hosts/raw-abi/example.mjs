#!/usr/bin/env node
// The sink-coordinator's core module driven through the canonical ABI by
// hand, with nothing but Node's WebAssembly API: no jco, no component
// runtime. This is what a host on a core-only runtime (wazero for Go,
// Chicory or GraalWasm for the JVM) has to do; docs/embedding.md explains
// every step.
//
//   node hosts/raw-abi/example.mjs [--core CORE.wasm | COMPONENT.wasm]
//
// Without --core, the core module is extracted from the component (default
// $SINK_COORDINATOR_WASM, else dist/sink-coordinator-<version>.wasm): it is the
// component's largest core-module section. With --core, any build of the core
// module works too (e.g. the guest cdylib before componentization).
//
// It creates a coordinator (parallelism 2, commit user "job-1"), starts it,
// sends two events for checkpoint 1, completes checkpoint 1 (its outcome's
// committed-up-to becomes 1), asks `committed-up-to()`, reads the committed
// snapshot back through `table.snapshot-by-id`, takes the state bytes of
// checkpoint 2, triggers an `invalid-event` error, forwards committed-up-to
// to a `writer` (`committed`), and checks every answer; it prints what it
// saw and exits 1 if any check failed.

import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The committed artifact of the WIT package version (wit/coordinator.wit). */
function distComponent() {
  const wit = readFileSync(join(REPO, 'wit', 'coordinator.wit'), 'utf8');
  const m = /^package sink:coordinator@(\S+);/m.exec(wit);
  if (!m) throw new Error('wit/coordinator.wit declares no sink:coordinator package version');
  return join(REPO, 'dist', `sink-coordinator-${m[1]}.wasm`);
}

// ---------------------------------------------------------------------------
// Getting the core module out of the component
// ---------------------------------------------------------------------------

function readLeb(bytes, pos) {
  let result = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[pos++];
    result += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7;
  }
}

/**
 * The coordinator's core module inside a component binary: the largest
 * core-module section (id 1). wit-component writes it first, followed by two
 * tiny "shim" and "fixup" modules that only a component runtime needs.
 */
function extractCoreModule(component) {
  const header = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
  if (!header.every((b, i) => component[i] === b)) {
    throw new Error('not a component binary (expected \\0asm, version 0x0d, layer 1)');
  }
  let best = null;
  let pos = 8;
  while (pos < component.length) {
    const id = component[pos++];
    let size;
    [size, pos] = readLeb(component, pos);
    if (id === 0x01 && (best === null || size > best.length)) best = component.subarray(pos, pos + size);
    pos += size;
  }
  if (best === null) throw new Error('the component holds no core module');
  return best;
}

const args = process.argv.slice(2);
let coreBytes;
if (args[0] === '--core') {
  coreBytes = readFileSync(args[1]);
} else {
  const path = args[0] ?? process.env.SINK_COORDINATOR_WASM ?? distComponent();
  coreBytes = extractCoreModule(readFileSync(path));
}

// ---------------------------------------------------------------------------
// Linear memory helpers (little endian, as the canonical ABI requires)
// ---------------------------------------------------------------------------

let instance; // set after instantiation; imports reach the exports through it
const mem = () => new DataView(instance.exports.memory.buffer);
const bytesAt = (ptr, len) => new Uint8Array(instance.exports.memory.buffer, ptr, len).slice();
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });
const stringAt = (ptr, len) => fromUtf8.decode(bytesAt(ptr, len));

/** Allocates `size` bytes aligned to `align` in guest memory (the guest owns them). */
const alloc = (align, size) => instance.exports.cabi_realloc(0, 0, align, size);

/** Copies bytes into fresh guest memory: [ptr, len]. */
function lowerBytes(bytes) {
  const ptr = alloc(1, bytes.length);
  new Uint8Array(instance.exports.memory.buffer, ptr, bytes.length).set(bytes);
  return [ptr, bytes.length];
}
const lowerString = (s) => lowerBytes(utf8.encode(s));

/** list<list<u8>>: an array of (ptr: u32, len: u32) pairs, align 4. */
function lowerByteLists(lists) {
  const base = alloc(4, lists.length * 8);
  lists.forEach((b, i) => {
    const [p, l] = lowerBytes(b);
    mem().setUint32(base + i * 8, p, true);
    mem().setUint32(base + i * 8 + 4, l, true);
  });
  return [base, lists.length];
}

// ---------------------------------------------------------------------------
// The imports: storage, clock, and the resource intrinsics
// ---------------------------------------------------------------------------

const table = new Map(); // the storage: key -> Uint8Array
let clockMs = 1000n;

// result<T, storage-error> written at `ret`: byte 0 = 0 (ok) / 1 (err);
// payload at offset 4 (the largest alignment of T and storage-error is 4).
const writeOk = (ret) => mem().setUint8(ret, 0);

const storageImports = {
  // get(key) -> result<option<list<u8>>, storage-error>
  get(keyPtr, keyLen, ret) {
    const value = table.get(stringAt(keyPtr, keyLen));
    writeOk(ret);
    if (value === undefined) {
      mem().setUint8(ret + 4, 0); // none
    } else {
      const [p, l] = lowerBytes(value); // allocated with cabi_realloc: the guest frees it
      mem().setUint8(ret + 4, 1); // some
      mem().setUint32(ret + 8, p, true);
      mem().setUint32(ret + 12, l, true);
    }
  },
  // put-if-absent(key, value) -> result<bool, storage-error>
  'put-if-absent'(keyPtr, keyLen, valPtr, valLen, ret) {
    const key = stringAt(keyPtr, keyLen);
    const created = !table.has(key);
    if (created) table.set(key, bytesAt(valPtr, valLen));
    writeOk(ret);
    mem().setUint8(ret + 4, created ? 1 : 0);
  },
  // put(key, value) -> result<_, storage-error>
  put(keyPtr, keyLen, valPtr, valLen, ret) {
    table.set(stringAt(keyPtr, keyLen), bytesAt(valPtr, valLen));
    writeOk(ret);
  },
  // delete(key) -> result<_, storage-error>
  delete(keyPtr, keyLen, ret) {
    table.delete(stringAt(keyPtr, keyLen));
    writeOk(ret);
  },
  // list(prefix) -> result<list<string>, storage-error>, keys in byte order
  list(prefixPtr, prefixLen, ret) {
    const prefix = stringAt(prefixPtr, prefixLen);
    const keys = [...table.keys()].filter((k) => k.startsWith(prefix)).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const base = alloc(4, keys.length * 8);
    keys.forEach((k, i) => {
      const [p, l] = lowerString(k);
      mem().setUint32(base + i * 8, p, true);
      mem().setUint32(base + i * 8 + 4, l, true);
    });
    writeOk(ret);
    mem().setUint32(ret + 4, base, true);
    mem().setUint32(ret + 8, keys.length, true);
  },
};

// How a storage error would be returned (unused in this example):
//   mem().setUint8(ret, 1); mem().setUint8(ret + 4, 0 /* io */ or 1 /* invalid-key */);
//   const [p, l] = lowerString(message); mem().setUint32(ret + 8, p, true); mem().setUint32(ret + 12, l, true);

// Resources exported by the component: the guest creates a handle for a
// representation (`rep`, its own pointer) with [resource-new] and returns the
// handle from the constructor; methods take `self` as the rep; dropping an
// owned handle runs the [dtor] export with the rep.
function resourceTable(dtorExport) {
  const reps = new Map();
  let next = 1;
  return {
    reps,
    new: (rep) => {
      const handle = next++;
      reps.set(handle, rep);
      return handle;
    },
    drop: (handle) => {
      const rep = reps.get(handle);
      reps.delete(handle);
      instance.exports[dtorExport](rep);
    },
  };
}
// Every import module and export name carries the WIT package version.
const V = '0.2.10';
const coordinators = resourceTable(`sink:coordinator/coordinator@${V}#[dtor]coordinator`);
const writers = resourceTable(`sink:coordinator/writer@${V}#[dtor]writer`);

const imports = {
  [`sink:coordinator/storage@${V}`]: storageImports,
  [`sink:coordinator/clock@${V}`]: { 'now-ms': () => clockMs }, // u64 as i64: a BigInt
  [`[export]sink:coordinator/coordinator@${V}`]: {
    '[resource-new]coordinator': coordinators.new,
    '[resource-drop]coordinator': coordinators.drop,
  },
  [`[export]sink:coordinator/writer@${V}`]: {
    '[resource-new]writer': writers.new,
    '[resource-drop]writer': writers.drop,
  },
};

instance = new WebAssembly.Instance(new WebAssembly.Module(coreBytes), imports);
const X = instance.exports;
const C = `sink:coordinator/coordinator@${V}#`;
const T = `sink:coordinator/table@${V}#`;
const W = `sink:coordinator/writer@${V}#`;

// ---------------------------------------------------------------------------
// Lifting results
// ---------------------------------------------------------------------------

const LIFECYCLE = ['created', 'restoring', 'running', 'closed', 'failed'];
const ERROR_KIND = ['declined', 'storage', 'illegal-state', 'invalid-event', 'invalid-config', 'corrupt-state'];

function liftStrings(ptr, len) {
  const out = [];
  for (let i = 0; i < len; i++) out.push(stringAt(mem().getUint32(ptr + i * 8, true), mem().getUint32(ptr + i * 8 + 4, true)));
  return out;
}

/** error record at `p`: kind (u8) @0, message (ptr, len) @4, @8. */
const liftError = (p) => ({ kind: ERROR_KIND[mem().getUint8(p)], message: stringAt(mem().getUint32(p + 4, true), mem().getUint32(p + 8, true)) });

/** option<u64> at `p`: discriminant (u8) @0, value (u64) @8; null for none. */
const liftOptionU64 = (p) => (mem().getUint8(p) === 0 ? null : mem().getBigUint64(p + 8, true));

/**
 * result<outcome, error> at `ret`; then the function's cabi_post_* frees the
 * guest's lists. outcome (size 48, align 8: its last field, option<u64>, has
 * a u64): state u8 @0, committed (ptr, len) @4, @8, tags-created @12, @16,
 * tags-deleted @20, @24, restart-required u8 @28, committed-up-to
 * option<u64> @32 (value @40). The result's payload (outcome or error) is at
 * offset 8, the outcome's alignment.
 */
function liftOutcomeResult(name, ret) {
  const m = mem();
  const p = ret + 8;
  let value;
  if (m.getUint8(ret) === 0) {
    const committedPtr = m.getUint32(p + 4, true);
    const committedLen = m.getUint32(p + 8, true);
    const committed = [];
    for (let i = 0; i < committedLen; i++) committed.push(m.getBigUint64(committedPtr + i * 8, true));
    value = {
      ok: {
        state: LIFECYCLE[m.getUint8(p)],
        committed,
        tagsCreated: liftStrings(m.getUint32(p + 12, true), m.getUint32(p + 16, true)),
        tagsDeleted: liftStrings(m.getUint32(p + 20, true), m.getUint32(p + 24, true)),
        restartRequired: m.getUint8(p + 28) === 1,
        committedUpTo: liftOptionU64(p + 32),
      },
    };
  } else {
    value = { err: liftError(p) };
  }
  X[`cabi_post_${C}${name}`](ret);
  return value;
}

// ---------------------------------------------------------------------------
// The calls
// ---------------------------------------------------------------------------

let failures = 0;
function check(what, actual, expected) {
  const a = JSON.stringify(actual, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
  const e = JSON.stringify(expected, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
  const ok = a === e;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}: ${a}${ok ? '' : `  (expected ${e})`}`);
  if (!ok) failures++;
}

// constructor(config, restore: option<restore-point>) -> own<coordinator>:
// 16 flat parameters, exactly MAX_FLAT_PARAMS.
const [userPtr, userLen] = lowerString('job-1');
const handle = X[`${C}[constructor]coordinator`](
  2, //        config.parallelism: u32
  userPtr, // config.commit-user: string (ptr, len)
  userLen,
  1, //        config.checkpointing: bool
  0, //        config.final-commit: enum (0 = on-checkpoint)
  0, //        config.force-create-snapshot: bool
  0, //        config.savepoint-auto-tag: bool
  0, //        config.tag-time-retained-ms: option<u64> discriminant (0 = none) ...
  0n, //       ... and payload (i64, ignored for none)
  0, //        config.recovery: enum (0 = restart)
  0, //        restore: option discriminant (0 = none); then the restore-point's
  0n, //       checkpoint (i64), state (ptr, len), finished-subtasks (ptr, len)
  0,
  0,
  0,
  0,
);
const self = coordinators.reps.get(handle); // methods take `borrow<coordinator>` = the rep
check('constructor returns a handle', typeof handle === 'number' && self !== undefined, true);

const state = () => LIFECYCLE[X[`${C}[method]coordinator.state`](self)]; // enum returned flat
check('state() after construction', state(), 'created');

check('start()', liftOutcomeResult('[method]coordinator.start', X[`${C}[method]coordinator.start`](self)), {
  ok: { state: 'running', committed: [], tagsCreated: [], tagsDeleted: [], restartRequired: false, committedUpTo: null },
});

// event(subtask, attempt, entry{checkpoint, committables, watermark: option<s64>, savepoint})
function event(subtask, checkpoint, committables, watermark) {
  const [listPtr, listLen] = lowerByteLists(committables.map((c) => utf8.encode(c)));
  const ret = X[`${C}[method]coordinator.event`](
    self,
    subtask,
    0, //              attempt
    checkpoint, //     entry.checkpoint: u64 as i64
    listPtr, //        entry.committables: list<list<u8>>
    listLen,
    watermark === null ? 0 : 1, // entry.watermark: option<s64>
    watermark ?? 0n,
    0, //              entry.savepoint: bool
  );
  return liftOutcomeResult('[method]coordinator.event', ret);
}
const running = {
  ok: { state: 'running', committed: [], tagsCreated: [], tagsDeleted: [], restartRequired: false, committedUpTo: null },
};
check('event(0, cp 1, ["v1"], wm 100)', event(0, 1n, ['v1'], 100n), running);
check('event(1, cp 1, ["v2"], wm 200)', event(1, 1n, ['v2'], 200n), running);

check(
  'checkpoint-complete(1)',
  liftOutcomeResult('[method]coordinator.checkpoint-complete', X[`${C}[method]coordinator.checkpoint-complete`](self, 1n)),
  { ok: { state: 'running', committed: [1n], tagsCreated: [], tagsDeleted: [], restartRequired: false, committedUpTo: 1n } },
);

// committed-up-to() -> option<u64>: two flat results are more than one, so
// the function returns a pointer to them (discriminant @0, value @8); no
// cabi_post (nothing to free).
const committedUpTo = () => liftOptionU64(X[`${C}[method]coordinator.committed-up-to`](self));
check('committed-up-to()', committedUpTo(), 1n);

// table.snapshot-by-id(1) -> result<option<snapshot>, error>: the result's
// payload (ok or err) is at offset 8 (snapshot has u64 fields: alignment 8);
// the option's payload at 8 more, i.e. the snapshot starts at 16. snapshot: id u64 @0, commit-user (ptr, len) @8, identifier
// u64 @16, watermark option<s64> @24 (payload @32), time-ms u64 @40,
// committables list<tuple<u32, list<u8>>> @48 (elements: 12 bytes, align 4).
{
  const ret = X[`${T}snapshot-by-id`](1n);
  const m = mem();
  let got;
  if (m.getUint8(ret) !== 0) {
    got = { err: liftError(ret + 8) }; // error is at the result's payload offset, 8 here
  } else if (m.getUint8(ret + 8) === 0) {
    got = { ok: null };
  } else {
    const s = ret + 16;
    const committables = [];
    const cPtr = m.getUint32(s + 48, true);
    for (let i = 0; i < m.getUint32(s + 52, true); i++) {
      const e = cPtr + i * 12;
      committables.push([m.getUint32(e, true), stringAt(m.getUint32(e + 4, true), m.getUint32(e + 8, true))]);
    }
    got = {
      ok: {
        id: m.getBigUint64(s, true),
        commitUser: stringAt(m.getUint32(s + 8, true), m.getUint32(s + 12, true)),
        identifier: m.getBigUint64(s + 16, true),
        watermark: m.getUint8(s + 24) ? m.getBigInt64(s + 32, true) : null,
        timeMs: m.getBigUint64(s + 40, true),
        committables,
      },
    };
  }
  X[`cabi_post_${T}snapshot-by-id`](ret);
  check('table.snapshot-by-id(1)', got, {
    ok: { id: 1n, commitUser: 'job-1', identifier: 1n, watermark: 100n, timeMs: 1000n, committables: [[0, 'v1'], [1, 'v2']] },
  });
}

// checkpoint(2) -> result<list<u8>, error>: ok payload (ptr, len) at 4, 8.
{
  const ret = X[`${C}[method]coordinator.checkpoint`](self, 2n);
  const m = mem();
  const got = m.getUint8(ret) === 0 ? { ok: Buffer.from(bytesAt(m.getUint32(ret + 4, true), m.getUint32(ret + 8, true))).toString('hex') } : { err: liftError(ret + 4) };
  X[`cabi_post_${C}[method]coordinator.checkpoint`](ret);
  // format version 2, "job-1" (postcard: length 5 + bytes), parallelism 2, no ended slots
  check('checkpoint(2) state bytes', got, { ok: '02056a6f622d310200' });
}

check('event(5, cp 2): subtask out of range', event(5, 2n, [], null), {
  err: { kind: 'invalid-event', message: 'event: subtask 5 is outside parallelism 2' },
});
check('state() after a fatal error', state(), 'failed');

// Dropping the owned handle: the host runs the destructor with the rep.
coordinators.drop(handle);
check('storage keys', [...table.keys()].sort(), ['hint/latest-snapshot', 'snapshot/00000000000000000001']);

// ---------------------------------------------------------------------------
// The writer helper: report, state bytes, and the host forwarding the
// coordinator's committed-up-to with `committed(u)`
// ---------------------------------------------------------------------------

/** A new writer for `subtask`: its rep (what methods take). */
const newWriter = (subtask) => writers.reps.get(X[`${W}[constructor]writer`](subtask));

/**
 * entry at `p` (size 40, align 8): checkpoint u64 @0, committables
 * list<list<u8>> (ptr, len) @8, @12, watermark option<s64> @16 (value @24),
 * savepoint u8 @32.
 */
function liftEntry(p) {
  const m = mem();
  const committables = [];
  const cPtr = m.getUint32(p + 8, true);
  for (let i = 0; i < m.getUint32(p + 12, true); i++) {
    committables.push(stringAt(m.getUint32(cPtr + i * 8, true), m.getUint32(cPtr + i * 8 + 4, true)));
  }
  return {
    checkpoint: m.getBigUint64(p, true),
    committables,
    watermark: m.getUint8(p + 16) ? m.getBigInt64(p + 24, true) : null,
    savepoint: m.getUint8(p + 32) === 1,
  };
}

// report(checkpoint, committables, watermark, savepoint) -> result<entry, error>:
// the payload at 8 (entry has u64 fields).
function report(w, checkpoint, committables, watermark) {
  const [listPtr, listLen] = lowerByteLists(committables.map((c) => utf8.encode(c)));
  const ret = X[`${W}[method]writer.report`](w, checkpoint, listPtr, listLen, watermark === null ? 0 : 1, watermark ?? 0n, 0);
  const got = mem().getUint8(ret) === 0 ? { ok: liftEntry(ret + 8) } : { err: liftError(ret + 8) };
  X[`cabi_post_${W}[method]writer.report`](ret);
  return got;
}

// state() -> list<u8>: (ptr, len) at ret + 0, ret + 4.
function writerState(w) {
  const ret = X[`${W}[method]writer.state`](w);
  const bytes = bytesAt(mem().getUint32(ret, true), mem().getUint32(ret + 4, true));
  X[`cabi_post_${W}[method]writer.state`](ret);
  return bytes;
}

// committed(u) -> result<_, error>: the error (align 4) at ret + 4.
function writerCommitted(w, u) {
  const ret = X[`${W}[method]writer.committed`](w, u);
  const got = mem().getUint8(ret) === 0 ? { ok: null } : { err: liftError(ret + 4) };
  X[`cabi_post_${W}[method]writer.committed`](ret);
  return got;
}

// restore(state, checkpoint) -> result<list<entry>, error>: (ptr, len) at
// ret + 4 (a list's alignment is 4), elements 40 bytes each.
function restore(w, bytes, checkpoint) {
  const [p, l] = lowerBytes(bytes);
  const ret = X[`${W}[method]writer.restore`](w, p, l, checkpoint);
  const m = mem();
  let got;
  if (m.getUint8(ret) === 0) {
    const entries = [];
    for (let i = 0; i < m.getUint32(ret + 8, true); i++) entries.push(liftEntry(m.getUint32(ret + 4, true) + i * 40));
    got = { ok: entries };
  } else {
    got = { err: liftError(ret + 4) };
  }
  X[`cabi_post_${W}[method]writer.restore`](ret);
  return got;
}

const w = newWriter(0);
const entry1 = { checkpoint: 1n, committables: ['v1'], watermark: 100n, savepoint: false };
check('writer report(1, ["v1"], wm 100)', report(w, 1n, ['v1'], 100n), { ok: entry1 });
const before = writerState(w);
check('writer committed(1)', writerCommitted(w, 1n), { ok: null });
const after = writerState(w);
// A writer restored from the state before `committed(1)` still replays
// entry 1; from the state after it, nothing.
check('restore(state before committed(1), 1)', restore(newWriter(0), before, 1n), { ok: [entry1] });
check('restore(state after committed(1), 1)', restore(newWriter(0), after, 1n), { ok: [] });

if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
