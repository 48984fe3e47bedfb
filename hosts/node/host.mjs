// The host side of the sink-coordinator component under Node + jco:
//   - MemStorage: the `storage` import (an in-memory map, put-if-absent,
//     `list` by prefix in byte order) with the fault injection of
//     TRACE-FORMAT's `storage_fault` step and a suspend switch;
//   - ManualClock: the `clock` import (TRACE-FORMAT's trace clock);
//   - Runtime: instantiates the transpiled component (jco `--instantiation`),
//     one fresh component instance per coordinator, compiled core modules
//     cached, so that a trapped instance is simply dropped and replaced.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const U64_MAX = 2n ** 64n - 1n;

/** The WIT package version of the component (wit/coordinator.wit). */
export const WIT_VERSION = '0.2.0';

/** Rust's `{:?}` of a str (the Rust host's fault messages use it). */
export function rustDebugStr(s) {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c === 0) out += '\\0';
    else if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) out += `\\u{${c.toString(16)}}`;
    else out += ch;
  }
  return out + '"';
}

/** Byte order of the UTF-8 encodings (what Rust's String ordering is). */
export function byteOrder(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * The table: a map with put-if-absent, plus TRACE-FORMAT storage faults.
 * Faults: per call kind a FIFO queue of {skip, count, mode}; only the front
 * one is active and its `skip` counts the calls made after the previous fault
 * of that kind was used up. "put" covers put and put-if-absent. "ambiguous"
 * applies the change and then reports an error; for get and list it is the
 * same as "fail". While suspended, calls go straight through and consume
 * nothing (the replayer's own reads of the table).
 */
export class MemStorage {
  constructor() {
    this.map = new Map();
    this.queues = { put: [], get: [], list: [], delete: [] };
    this.suspended = false;
  }

  pushFault(call, fault) {
    if (fault.count > 0n) this.queues[call].push({ ...fault });
  }

  /** Counts one call of `kind`; returns the fault mode to apply, or null. */
  take(kind) {
    if (this.suspended) return null;
    const queue = this.queues[kind];
    const front = queue[0];
    if (!front) return null;
    if (front.skip > 0n) {
      front.skip -= 1n;
      return null;
    }
    front.count -= 1n;
    if (front.count === 0n) queue.shift();
    return front.mode;
  }

  static injected(op, key, mode) {
    const what = mode === 'fail' ? 'failed' : 'reported an error after it was applied';
    return { tag: 'err', val: { tag: 'io', val: `injected fault: ${op} ${rustDebugStr(key)} ${what}` } };
  }

  // Plain operations, without faults (also used by the replayer).
  keys(prefix) {
    const keys = [];
    for (const k of this.map.keys()) if (k.startsWith(prefix)) keys.push(k);
    return keys.sort(byteOrder);
  }

  /**
   * The `sink:coordinator/storage` import object. jco lowers a returned
   * `{tag: 'ok' | 'err', val}` as the result itself; anything else is `ok`.
   */
  imports() {
    return {
      get: (key) => {
        if (this.take('get')) return MemStorage.injected('get', key, 'fail');
        const v = this.map.get(key);
        return v === undefined ? undefined : v.slice();
      },
      putIfAbsent: (key, value) => {
        const mode = this.take('put');
        if (mode === 'fail') return MemStorage.injected('put-if-absent', key, mode);
        let created = false;
        if (!this.map.has(key)) {
          this.map.set(key, value.slice());
          created = true;
        }
        if (mode === 'ambiguous') return MemStorage.injected('put-if-absent', key, mode);
        return created;
      },
      put: (key, value) => {
        const mode = this.take('put');
        if (mode === 'fail') return MemStorage.injected('put', key, mode);
        this.map.set(key, value.slice());
        if (mode === 'ambiguous') return MemStorage.injected('put', key, mode);
        return undefined;
      },
      delete: (key) => {
        const mode = this.take('delete');
        if (mode === 'fail') return MemStorage.injected('delete', key, mode);
        this.map.delete(key);
        if (mode === 'ambiguous') return MemStorage.injected('delete', key, mode);
        return undefined;
      },
      list: (prefix) => {
        if (this.take('list')) return MemStorage.injected('list', prefix, 'fail');
        return this.keys(prefix);
      },
    };
  }
}

/** The trace clock: `start` first, then `+ step` per reading (saturating). */
export class ManualClock {
  constructor(startMs = 0n, stepMs = 0n) {
    this.next = startMs;
    this.step = stepMs;
  }
  setNext(ms) {
    this.next = ms;
  }
  imports() {
    return {
      nowMs: () => {
        const now = this.next;
        const n = this.next + this.step;
        this.next = n > U64_MAX ? U64_MAX : n;
        return now;
      },
    };
  }
}

/** Thrown for a result's `err` (a WIT `error` record): `{kind, message}`. */
export class CallError extends Error {
  constructor(kind, message) {
    super(`${kind}: ${message}`);
    this.kind = kind;
    this.detail = message;
  }
}

/**
 * Loads a transpiled component (the output directory of transpile.mjs) and
 * creates instances of it. `instantiate` is synchronous here: the core
 * modules are compiled once and instantiated with `new WebAssembly.Instance`.
 */
export class Runtime {
  static async load(dir, name = 'sink-coordinator') {
    const mod = await import(pathToFileURL(join(dir, `${name}.js`)).href);
    return new Runtime(dir, mod.instantiate);
  }

  constructor(dir, instantiate) {
    this.dir = dir;
    this.instantiateFn = instantiate;
    this.modules = new Map();
  }

  getCoreModule = (file) => {
    let m = this.modules.get(file);
    if (!m) {
      m = new WebAssembly.Module(readFileSync(join(this.dir, file)));
      this.modules.set(file, m);
    }
    return m;
  };

  /** A fresh component instance over `storage` and `clock`: its exports. */
  instantiate(storage, clock) {
    const s = storage.imports();
    const c = clock.imports();
    // jco quirk: the .d.ts names the versioned keys, the generated JS reads
    // the unversioned ones. Pass both.
    const imports = {
      'sink:coordinator/storage': s,
      [`sink:coordinator/storage@${WIT_VERSION}`]: s,
      'sink:coordinator/clock': c,
      [`sink:coordinator/clock@${WIT_VERSION}`]: c,
    };
    // jco quirk (1.35 on Node 20): the glue wraps ~10 exports with
    // `try { WebAssembly.promising(f) } catch { f }`. Node 20 has no JSPI, so
    // each wrap throws inside a huge generator, and that costs ~2 ms a throw
    // (~25 ms per instance). For the duration of the instantiation an
    // identity `promising` gives exactly the catch branch's result, in 0.7 ms.
    const stub = typeof WebAssembly.promising !== 'function';
    if (stub) WebAssembly.promising = (f) => f;
    try {
      return this.instantiateFn(this.getCoreModule, imports, (module, imp) => new WebAssembly.Instance(module, imp));
    } finally {
      if (stub) delete WebAssembly.promising;
    }
  }
}

/** Runs `fn`; a result `err` becomes CallError, anything else is a trap. */
export function call(fn) {
  try {
    return fn();
  } catch (e) {
    const p = e && Object.hasOwn(e, 'payload') ? e.payload : undefined;
    if (p && typeof p === 'object' && typeof p.kind === 'string' && typeof p.message === 'string') {
      throw new CallError(p.kind, p.message);
    }
    throw new Trap(e);
  }
}

/** The guest trapped (or the glue failed): the instance is unusable. */
export class Trap extends Error {
  constructor(cause) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.cause = cause;
  }
}
