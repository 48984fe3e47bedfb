// What a coordinator needs from its host: a Storage (the table's object
// store) and a Clock, with an in-memory and a filesystem storage and a system
// and a manual clock. A storage reports a failure by throwing BackendIOError
// or InvalidKeyError; anything else it throws traps the component.

import { randomBytes } from 'node:crypto';
import {
  closeSync, constants, fstatSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readSync,
  renameSync, unlinkSync, writeSync,
} from 'node:fs';
import { join } from 'node:path';

import { BackendError, BackendIOError, InvalidKeyError, ValueTooLargeError } from './errors.js';

/** Rust's String order: the bytes of the UTF-8 encodings. */
const byteOrder = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * A table in a Map (tests, examples): `items` holds it. It applies the key
 * rules of every backend (the same `check` as FileSystemStorage: a refused key
 * or prefix is an InvalidKeyError, nothing stored), and no value bound (it
 * only holds the values it is handed).
 */
export class MemoryStorage {
  constructor() {
    this.items = new Map();
  }
  get(key) {
    check('key', key, false);
    return this.items.get(key)?.slice();
  }
  putIfAbsent(key, value) {
    check('key', key, false);
    if (this.items.has(key)) return false;
    this.items.set(key, value.slice());
    return true;
  }
  put(key, value) {
    check('key', key, false);
    this.items.set(key, value.slice());
  }
  delete(key) {
    check('key', key, false);
    this.items.delete(key);
  }
  list(prefix) {
    check('prefix', prefix, true);
    return [...this.items.keys()].filter((k) => k.startsWith(prefix)).sort(byteOrder);
  }
}

/** Temporary files start with this; keys may not (the Rust host's prefix). */
export const TMP_PREFIX = '.sinkcoord-tmp.';

/**
 * The default bound on one value (`maxValueBytes`): 2 GiB, above the largest
 * snapshot the core's default limits let a commit write (max-snapshot-bytes
 * 1.25 GiB plus framing); the Rust host's DEFAULT_MAX_VALUE_BYTES.
 */
export const DEFAULT_MAX_VALUE_BYTES = 2 ** 31;

/**
 * The bound on a value under `hint/`: the core writes a decimal snapshot id
 * there, so a larger hint is hostile (the Rust host's MAX_HINT_BYTES).
 */
export const MAX_HINT_BYTES = 4096;

const HINT_PREFIX = 'hint/';
/** How deep `list` descends below the root (the Rust host's bound). */
const MAX_DEPTH = 64;
/** Fresh temporary names tried before a write gives up (each is random). */
const TMP_ATTEMPTS = 16;

// O_NOFOLLOW and O_NONBLOCK are POSIX; where a platform lacks them (Windows)
// the flag is 0 and the lstat/fstat checks below still refuse links and
// special files.
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL } = constants;
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;

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
// open(O_NOFOLLOW) of a link: ELOOP on Linux and macOS, EMLINK on FreeBSD.
const isLinkErrno = (e) => e.code === 'ELOOP' || e.code === 'EMLINK';
// A name longer than the file system takes cannot exist: absent, like the
// Rust host (delete of it succeeds; get, put and putIfAbsent still fail
// with the file system's error when they open or create it).
const lstat = (path) => {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch (e) {
    if (e.code === 'ENAMETOOLONG') return undefined;
    throw e;
  }
};

function kindOf(st) {
  if (st.isDirectory()) return 'directory';
  if (st.isFIFO()) return 'FIFO';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  if (st.isSocket()) return 'socket';
  return 'special file';
}

/**
 * Whether the writer of temporary file `.sinkcoord-tmp.<rest>` is gone:
 * `<rest>` is `<pid>.<digits>` and signal 0 to the pid finds no process (the
 * Rust host's rule; our own files and processes we may not signal are kept).
 */
function tempWriterIsDead(rest) {
  const m = /^(\d{1,10})\.(\d+)$/.exec(rest);
  if (!m) return false;
  const pid = Number(m[1]);
  if (pid <= 0 || pid > 2 ** 31 - 1 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return e.code === 'ESRCH';
  }
}

/** Removes dead writers' temporary files in `dir` and below (never through links); best effort. */
function sweepTempFiles(dir, base, depth, removed) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const ent of entries) {
    if (ent.name.startsWith(TMP_PREFIX)) {
      if (ent.isFile() && tempWriterIsDead(ent.name.slice(TMP_PREFIX.length))) {
        try {
          unlinkSync(join(dir, ent.name));
          removed.push(base + ent.name);
        } catch { /* gone, or not ours to remove */ }
      }
    } else if (ent.isDirectory() && depth < MAX_DEPTH) {
      sweepTempFiles(join(dir, ent.name), `${base}${ent.name}/`, depth + 1, removed);
    }
  }
}

/** fsyncs a directory (its entries: a new, renamed or removed name). */
function syncDir(dir, follow) {
  const fd = openSync(dir, O_RDONLY | O_DIRECTORY | (follow ? 0 : O_NOFOLLOW));
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes all of `value` at `fd`: writeSync may write less than asked. */
function writeAll(fd, value) {
  let off = 0;
  while (off < value.length) {
    const n = writeSync(fd, value, off, value.length - off);
    // A regular file reports a full disk as ENOSPC on the next call; a
    // zero count would loop forever, so it is an error too.
    if (!(n > 0)) throw new Error(`short write: ${off} of ${value.length} bytes written`);
    off += n;
  }
}

/**
 * Reads the whole regular file at `fd` of `size` bytes (its fstat), never
 * more than `limit` bytes: if it grew meanwhile, at most limit + 1 bytes
 * are read and the value is refused.
 */
function readBounded(fd, key, size, limit) {
  let buf = new Uint8Array(size);
  let n = 0;
  for (;;) {
    if (n === buf.length) {
      const room = Math.min(limit + 1, Math.max(2 * n, 65536)) - n;
      if (room <= 0) break;
      const bigger = new Uint8Array(n + room);
      bigger.set(buf.subarray(0, n));
      buf = bigger;
    }
    const got = readSync(fd, buf, n, buf.length - n, null);
    if (got === 0) break;
    n += got;
    if (n > limit) throw new ValueTooLargeError(key, n, limit);
  }
  return n === buf.length ? buf : buf.slice(0, n);
}

/**
 * A table in a local directory: key `a/b` is the file `ROOT/a/b`, the Rust
 * host's LocalDirStorage layout (`sinkcoord inspect` reads it), with its
 * rules:
 * - keys are confined under the root, and no link under the root is
 *   followed: a symbolic link at a key or at one of its directories is an
 *   InvalidKeyError naming it (the root itself may be a link: it is the
 *   operator's choice);
 * - a FIFO, device, socket or directory at a key is an InvalidKeyError, found
 *   without blocking (the file is opened O_NONBLOCK and checked with fstat);
 * - a value larger than `maxValueBytes` (default 2 GiB; 4 KiB under
 *   `hint/`) is a ValueTooLargeError, before a byte of it is read or written;
 * - writes go through a temporary file (random name, created O_EXCL |
 *   O_NOFOLLOW, written whole, fsynced) that becomes visible with `link`
 *   (create-once) or `rename` (overwrite) or is removed on failure; the
 *   directory is fsynced after every new, replaced or removed name, and
 *   after creating a directory its parent;
 * - opening the table removes the temporary files of writers that died
 *   (`removedTempFiles`).
 * Node has no openat(2): directories are checked with lstat one level at a
 * time, so a link swapped in between a check and the open is not caught;
 * the final open never follows a link.
 */
export class FileSystemStorage {
  constructor(root, { maxValueBytes = DEFAULT_MAX_VALUE_BYTES } = {}) {
    const max = typeof maxValueBytes === 'bigint' ? Number(maxValueBytes) : maxValueBytes;
    if (!Number.isSafeInteger(max) || max < 0) {
      throw new RangeError(`maxValueBytes must be a non-negative safe integer, not ${maxValueBytes}`);
    }
    this.root = root;
    /** The largest value read or written (values under `hint/`: at most MAX_HINT_BYTES). */
    this.maxValueBytes = max;
    mkdirSync(root, { recursive: true });
    const removed = [];
    sweepTempFiles(root, '', 0, removed);
    /**
     * The temporary files (paths below the root) that opening the table
     * removed: those of writers whose process no longer exists, as the Rust
     * host's LocalDirStorage.open does.
     */
    this.removedTempFiles = removed.sort(byteOrder);
  }

  #limit(key) {
    return key.startsWith(HINT_PREFIX) ? Math.min(this.maxValueBytes, MAX_HINT_BYTES) : this.maxValueBytes;
  }

  #linkError(what, key, path) {
    return new InvalidKeyError(
      `${what} "${key}": "${path}" under the table root ${this.root} is a symbolic link (links are not followed)`,
    );
  }

  #specialError(key, st) {
    return new InvalidKeyError(
      `key "${key}": "${key}" under the table root ${this.root} is not a regular file (${kindOf(st)})`,
    );
  }

  /**
   * The directory `dirs` below the root, checked one level at a time
   * without following links; with `create`, missing levels are made and
   * their parent fsynced. `undefined` when a level is missing (or a file).
   */
  #dir(what, key, dirs, create) {
    let path = this.root;
    for (let i = 0; i < dirs.length; i++) {
      const parent = path;
      path = join(path, dirs[i]);
      let st = lstat(path);
      if (!st && create) {
        try {
          mkdirSync(path, 0o755);
          // The new directory's own name must survive a crash too.
          syncDir(parent, i === 0);
        } catch (e) {
          if (e.code !== 'EEXIST') throw e;
        }
        st = lstat(path);
      }
      if (!st) return undefined;
      if (st.isSymbolicLink()) throw this.#linkError(what, key, dirs.slice(0, i + 1).join('/'));
      if (!st.isDirectory()) {
        if (!create) return undefined; // a file in the way: no key lives below it
        throw new Error(`"${dirs.slice(0, i + 1).join('/')}" is not a directory`);
      }
    }
    return path;
  }

  /** The key's directory and file path (`dir` undefined when missing). */
  #locate(key, create) {
    const segments = check('key', key, false);
    const dir = this.#dir('key', key, segments.slice(0, -1), create);
    return { dir, path: dir === undefined ? undefined : join(dir, segments[segments.length - 1]) };
  }

  #tryLocate(op, key) {
    try {
      return this.#locate(key, false);
    } catch (e) {
      throw FileSystemStorage.#wrap(op, key, e);
    }
  }

  /** The error to throw: a BackendError as is, anything else as BackendIOError. */
  static #wrap(op, key, e) {
    return e instanceof BackendError ? e : new BackendIOError(`cannot ${op} "${key}": ${e.message}`);
  }

  /** Writes `value` to a fresh temporary file in `dir`, fsynced; its path. */
  #writeTemp(dir, value) {
    for (let attempt = 0; ; attempt++) {
      // Random, so another user of the directory cannot plant the name in
      // advance; O_EXCL | O_NOFOLLOW, so a planted name is never opened.
      const tmp = join(dir, `${TMP_PREFIX}${process.pid}.${randomBytes(8).readBigUInt64BE(0)}`);
      let fd;
      try {
        fd = openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
      } catch (e) {
        if (e.code === 'EEXIST' && attempt + 1 < TMP_ATTEMPTS) continue;
        throw e;
      }
      try {
        writeAll(fd, value);
        fsyncSync(fd);
      } catch (e) {
        closeSync(fd);
        // No temporary file outlives a failed write.
        try { unlinkSync(tmp); } catch { /* already gone */ }
        throw e;
      }
      closeSync(fd);
      return tmp;
    }
  }

  #checkSize(key, value) {
    check('key', key, false); // the key's own check comes first, as for every call
    const limit = this.#limit(key);
    if (value.length > limit) throw new ValueTooLargeError(key, value.length, limit);
  }

  get(key) {
    const { path } = this.#tryLocate('read', key);
    if (path === undefined) return undefined;
    let fd;
    try {
      // O_NONBLOCK: opening a FIFO must not wait for a writer.
      fd = openSync(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (e) {
      if (missing(e)) return undefined;
      if (isLinkErrno(e)) throw this.#linkError('key', key, key);
      throw new BackendIOError(`cannot read "${key}": ${e.message}`);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw this.#specialError(key, st);
      const limit = this.#limit(key);
      // Checked before a byte is read: a sparse file costs no disk.
      if (st.size > limit) throw new ValueTooLargeError(key, st.size, limit);
      return readBounded(fd, key, st.size, limit);
    } catch (e) {
      throw FileSystemStorage.#wrap('read', key, e);
    } finally {
      closeSync(fd);
    }
  }

  putIfAbsent(key, value) {
    this.#checkSize(key, value);
    try {
      const { dir, path } = this.#locate(key, true);
      const tmp = this.#writeTemp(dir, value);
      let created = true;
      try {
        // link(2) fails if the name exists, a link included (not followed).
        linkSync(tmp, path);
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
        created = false;
      } finally {
        unlinkSync(tmp);
      }
      if (created) {
        syncDir(dir, dir === this.root);
        return true;
      }
      // Only a value exists: a link or special file in the way is refused.
      const st = lstat(path);
      if (st?.isSymbolicLink()) throw this.#linkError('key', key, key);
      if (st && !st.isFile()) throw this.#specialError(key, st);
      return false;
    } catch (e) {
      throw FileSystemStorage.#wrap('create', key, e);
    }
  }

  put(key, value) {
    this.#checkSize(key, value);
    try {
      const { dir, path } = this.#locate(key, true);
      // rename(2) would replace a link, not its target; refused anyway.
      if (lstat(path)?.isSymbolicLink()) throw this.#linkError('key', key, key);
      const tmp = this.#writeTemp(dir, value);
      try {
        renameSync(tmp, path);
      } catch (e) {
        try { unlinkSync(tmp); } catch { /* already gone */ }
        throw e;
      }
      syncDir(dir, dir === this.root);
    } catch (e) {
      throw FileSystemStorage.#wrap('write', key, e);
    }
  }

  delete(key) {
    try {
      const { dir, path } = this.#locate(key, false);
      if (path === undefined) return;
      const st = lstat(path);
      if (!st || st.isDirectory()) return;
      if (st.isSymbolicLink()) throw this.#linkError('key', key, key);
      try {
        unlinkSync(path);
      } catch (e) {
        if (missing(e)) return;
        throw e;
      }
      syncDir(dir, dir === this.root);
    } catch (e) {
      throw FileSystemStorage.#wrap('delete', key, e);
    }
  }

  list(prefix) {
    const segments = check('prefix', prefix, true);
    const dirs = segments.slice(0, -1);
    const keys = [];
    const walk = (dir, base, depth) => {
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
        const sub = `${key}/`;
        // Only names that are keys under the prefix, or lead to them.
        if (!key.startsWith(prefix) && !prefix.startsWith(sub)) continue;
        if (ent.isSymbolicLink()) throw this.#linkError('prefix', prefix, key);
        if (ent.isDirectory()) {
          if (!sub.startsWith(prefix) && !prefix.startsWith(sub)) continue;
          if (depth >= MAX_DEPTH) {
            throw new BackendIOError(
              `cannot list "${prefix}": directories nested deeper than ${MAX_DEPTH} levels under the table root`,
            );
          }
          walk(join(dir, ent.name), sub, depth + 1);
        } else if (ent.isFile() && key.startsWith(prefix)) {
          keys.push(key);
        }
      }
    };
    try {
      const dir = this.#dir('prefix', prefix, dirs, false);
      if (dir !== undefined) walk(dir, dirs.length ? `${dirs.join('/')}/` : '', 0);
    } catch (e) {
      throw FileSystemStorage.#wrap('list', prefix, e);
    }
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
