// What a coordinator needs from its host: a Storage (the table's object
// store) and a Clock, with an in-memory and a filesystem storage and a system
// and a manual clock. A storage reports a failure by throwing BackendIOError
// or InvalidKeyError; anything else it throws traps the component.

import {
  closeSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

import { BackendIOError, InvalidKeyError } from './errors.js';

/** Rust's String order: the bytes of the UTF-8 encodings. */
const byteOrder = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** A table in a Map (tests, examples): `items` holds it. */
export class MemoryStorage {
  constructor() {
    this.items = new Map();
  }
  get(key) {
    return this.items.get(key)?.slice();
  }
  putIfAbsent(key, value) {
    if (this.items.has(key)) return false;
    this.items.set(key, value.slice());
    return true;
  }
  put(key, value) {
    this.items.set(key, value.slice());
  }
  delete(key) {
    this.items.delete(key);
  }
  list(prefix) {
    return [...this.items.keys()].filter((k) => k.startsWith(prefix)).sort(byteOrder);
  }
}

/** Temporary files start with this; keys may not (the Rust host's prefix). */
export const TMP_PREFIX = '.sinkcoord-tmp.';
let tmpCounter = 0;

function check(what, s, lastMayBePartial) {
  if (!s && !lastMayBePartial) throw new InvalidKeyError('empty key');
  let problem = null;
  if (s.includes('\\')) problem = 'contains a backslash';
  else if (s.includes('\0')) problem = 'contains NUL';
  else if (s.startsWith('/')) problem = 'is absolute';
  const segments = s.split('/');
  for (const seg of lastMayBePartial ? segments.slice(0, -1) : segments) {
    if (problem) break;
    if (!seg) problem = 'has an empty segment';
    else if (seg === '.' || seg === '..') problem = `has a "${seg}" segment`;
    else if (seg.startsWith(TMP_PREFIX)) problem = `uses the reserved name prefix "${TMP_PREFIX}"`;
  }
  if (problem) throw new InvalidKeyError(`${what} "${s}" ${problem}`);
  return segments;
}

const missing = (e) => e.code === 'ENOENT' || e.code === 'ENOTDIR';

function syncDir(dir) {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A table in a local directory: key `a/b` is the file `ROOT/a/b`, the Rust
 * host's LocalDirStorage layout (`sinkcoord inspect` reads it). Keys are
 * confined under the root; writes go through a temporary file that is
 * fsynced before it becomes visible (`link` for create-once, `rename` for
 * overwrite).
 */
export class FileSystemStorage {
  constructor(root) {
    this.root = root;
    mkdirSync(root, { recursive: true });
  }
  #path(key) {
    return join(this.root, ...check('key', key, false));
  }
  #tmp(path, value) {
    mkdirSync(dirname(path), { recursive: true });
    const tmp = join(dirname(path), `${TMP_PREFIX}${process.pid}.${tmpCounter++}`);
    const fd = openSync(tmp, 'wx');
    try {
      writeSync(fd, value);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return tmp;
  }
  get(key) {
    const path = this.#path(key);
    try {
      return new Uint8Array(readFileSync(path));
    } catch (e) {
      if (missing(e)) return undefined;
      throw new BackendIOError(`cannot read "${key}": ${e.message}`);
    }
  }
  putIfAbsent(key, value) {
    const path = this.#path(key);
    try {
      const tmp = this.#tmp(path, value);
      let created = true;
      try {
        linkSync(tmp, path);
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
        created = false;
      } finally {
        unlinkSync(tmp);
      }
      if (created) syncDir(dirname(path));
      return created;
    } catch (e) {
      throw new BackendIOError(`cannot create "${key}": ${e.message}`);
    }
  }
  put(key, value) {
    const path = this.#path(key);
    try {
      renameSync(this.#tmp(path, value), path);
      syncDir(dirname(path));
    } catch (e) {
      throw new BackendIOError(`cannot write "${key}": ${e.message}`);
    }
  }
  delete(key) {
    const path = this.#path(key);
    try {
      unlinkSync(path);
    } catch (e) {
      if (!missing(e)) throw new BackendIOError(`cannot delete "${key}": ${e.message}`);
    }
  }
  list(prefix) {
    const segments = check('prefix', prefix, true);
    const keys = [];
    const walk = (dir, base) => {
      let entries;
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch (e) {
        if (missing(e)) return;
        throw new BackendIOError(`cannot list "${prefix}": ${e.message}`);
      }
      for (const ent of entries) {
        if (ent.name.startsWith(TMP_PREFIX)) continue;
        const key = base + ent.name;
        if (ent.isDirectory()) walk(join(dir, ent.name), `${key}/`);
        else if (key.startsWith(prefix)) keys.push(key);
      }
    };
    const dirs = segments.slice(0, -1);
    walk(join(this.root, ...dirs), dirs.length ? `${dirs.join('/')}/` : '');
    return keys.sort(byteOrder);
  }
}

/** The system's wall clock (milliseconds since the epoch, a bigint). */
export class SystemClock {
  nowMs() {
    return BigInt(Date.now());
  }
}

/** A clock that reads `ms` (tests, examples, deterministic replays). */
export class ManualClock {
  constructor(ms = 0n) {
    this.ms = BigInt(ms);
  }
  nowMs() {
    return this.ms;
  }
}
