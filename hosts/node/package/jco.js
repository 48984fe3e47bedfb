// The fallback runtime (SINK_COORDINATOR_NODE_RUNTIME=jco): the component
// transpiled by jco (component/, built by build.mjs), its core modules
// compiled once and instances made from them.

import { readFileSync } from 'node:fs';

import { instantiate } from './component/sink-coordinator.js';
import { BackendError } from './errors.js';
import { checkVersion } from './version.js';

export class JcoEngine {
  /** `dir` is the URL of component/ (jco's output and component.json). */
  constructor(dir) {
    this.dir = dir;
    const meta = JSON.parse(readFileSync(new URL('component.json', dir), 'utf8'));
    this.version = checkVersion(meta.exports);
    this.sha256 = meta.sha256;
    this.modules = new Map();
  }

  #coreModule = (file) => {
    let m = this.modules.get(file);
    if (!m) {
      m = new WebAssembly.Module(readFileSync(new URL(file, this.dir)));
      this.modules.set(file, m);
    }
    return m;
  };

  /** A new component instance over `storage` and `clock`: its exports; its memories into `memories`. */
  instantiate(storage, clock, check, memories) {
    // A Storage throws BackendError; jco lowers `{tag: 'err', val}` as the
    // import's `err` (anything else thrown traps the instance).
    const result = (f) => (...args) => {
      check();
      try {
        return f(...args);
      } catch (e) {
        if (e instanceof BackendError) return { tag: 'err', val: { tag: e.kind, val: e.message } };
        throw e;
      }
    };
    const s = {
      get: result((key) => storage.get(key) ?? undefined),
      putIfAbsent: result((key, value) => Boolean(storage.putIfAbsent(key, value))),
      put: result((key, value) => void storage.put(key, value)),
      delete: result((key) => void storage.delete(key)),
      list: result((prefix) => storage.list(prefix)),
    };
    const c = { nowMs: () => BigInt(clock.nowMs()) };
    // jco: the generated JS reads the unversioned import keys, the .d.ts
    // names the versioned ones; both are passed.
    const imports = {
      'sink:coordinator/storage': s,
      [`sink:coordinator/storage@${this.version}`]: s,
      'sink:coordinator/clock': c,
      [`sink:coordinator/clock@${this.version}`]: c,
    };
    // jco 1.35 on Node 20 (no JSPI): the glue wraps exports with
    // `try { WebAssembly.promising(f) } catch { f }`, each throw costing ~2 ms.
    // An identity `promising` while instantiating gives the catch branch's
    // result at once. The callbacks are synchronous, so is instantiate().
    const stub = typeof WebAssembly.promising !== 'function';
    if (stub) WebAssembly.promising = (f) => f;
    const core = (module, imp) => {
      const instance = new WebAssembly.Instance(module, imp);
      for (const v of Object.values(instance.exports)) if (v instanceof WebAssembly.Memory) memories.push(v);
      return instance;
    };
    try {
      return instantiate(this.#coreModule, imports, core);
    } finally {
      if (stub) delete WebAssembly.promising;
    }
  }
}
