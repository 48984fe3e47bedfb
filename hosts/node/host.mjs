// The host side of the sink-coordinator component under Node + jco:
//   - MemStorage, ManualClock: plain `storage` and `clock` imports (bench.mjs);
//   - Runtime: instantiates the transpiled component (jco `--instantiation`),
//     one fresh component instance per coordinator, compiled core modules
//     cached, so that a trapped instance is simply dropped and replaced.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { checkVersion } from './version.mjs';

/** The WIT package version of the component (wit/coordinator.wit). */
export const WIT_VERSION = '0.2.0';

/** A plain in-memory `storage` import (for bench.mjs; run.mjs scripts its own). */
export class MemStorage {
  constructor() {
    this.map = new Map();
  }
  imports() {
    return {
      get: (key) => this.map.get(key)?.slice(),
      putIfAbsent: (key, value) => !this.map.has(key) && Boolean(this.map.set(key, value.slice())),
      put: (key, value) => void this.map.set(key, value.slice()),
      delete: (key) => void this.map.delete(key),
      list: (prefix) => [...this.map.keys()].filter((k) => k.startsWith(prefix)).sort(),
    };
  }
}

/** A fixed `clock` import (for bench.mjs). */
export class ManualClock {
  constructor(ms = 0n) {
    this.ms = ms;
  }
  imports() {
    return { nowMs: () => this.ms };
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
    // transpile.mjs records the export names; a directory transpiled from a
    // component of another version is refused (version.mjs).
    const exportsFile = join(dir, 'exports.json');
    if (existsSync(exportsFile)) checkVersion(JSON.parse(readFileSync(exportsFile, 'utf8')));
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
