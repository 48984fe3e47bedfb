// The canonical ABI of the sink-coordinator's core module, by hand: one
// Guest per instance reads and writes its linear memory through typed-array
// views and allocates with the guest's cabi_realloc. Layouts: docs/embedding.md
// section 4; the offsets and sizes are layout.js's, generated from the WIT. Values come out in the shapes jco gives (camelCase records,
// `undefined` for none, BigUint64Array for list<u64>, Uint8Array for bytes),
// with record keys in WIT order, so a result prints the same on either runtime.
//
// Anything the guest hands back that breaks the ABI (a pointer outside
// memory, a discriminant out of range) throws: the call traps and the
// package drops the instance, as for any trap.

import * as L from './layout.js';

export const LIFECYCLE = Object.freeze(['created', 'restoring', 'running', 'closed', 'failed']);
export const ERROR_KINDS = Object.freeze([
  'declined', 'storage', 'illegal-state', 'invalid-event', 'invalid-config', 'corrupt-state',
]);

// Not fatal, as jco's lift: the guest writes only UTF-8, and a host that
// replaced bad bytes the way jco does keeps the runtimes' results equal.
const decoder = new TextDecoder();
const encoder = new TextEncoder();

// The argument conversions jco applies, so that both runtimes take (and
// refuse) the same JavaScript values.
export const u32 = (v) => v >>> 0;
export const u64 = (v) => BigInt.asUintN(64, BigInt(v));
export const s64 = (v) => BigInt.asIntN(64, BigInt(v));
export const flag = (v) => (v ? 1 : 0);

/** A WIT enum case's index, or the TypeError jco throws for another value. */
export function enumCase(cases, value, type) {
  const i = cases.indexOf(value);
  if (i < 0) throw new TypeError(`"${value}" is not one of the cases of ${type}`);
  return i;
}

// The committables block of a `packed-event` (WIT 0.2.2): an unsigned
// LEB128 count, then per committable an unsigned LEB128 length and its
// bytes. Lengths of a JavaScript byte array stay below 2^53: division, not
// `>>>`.
const lebLength = (n) => {
  let k = 1;
  for (; n >= 0x80; n = Math.floor(n / 0x80)) k++;
  return k;
};
const lebWrite = (out, pos, n) => {
  for (; n >= 0x80; n = Math.floor(n / 0x80)) out[pos++] = (n % 0x80) | 0x80;
  out[pos++] = n;
  return pos;
};
/** The block's size for the committables `list` (an array). */
export const blockLength = (list) => {
  let size = lebLength(list.length);
  for (const c of list) size += lebLength(c.length) + c.length;
  return size;
};
/** Writes the block of `list` into `out` at `pos`; returns the end. */
export const writeBlock = (out, pos, list) => {
  pos = lebWrite(out, pos, list.length);
  for (const c of list) {
    pos = lebWrite(out, pos, c.length);
    out.set(c, pos);
    pos += c.length;
  }
  return pos;
};

/** Bytes as a Uint8Array over the same memory (no copy), or a TypeError. */
function byteView(v) {
  if (v instanceof Uint8Array) return v;
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (Array.isArray(v)) {
    for (const b of v) {
      if (typeof b !== 'number' || !Number.isInteger(b) || b < 0 || b > 255) throw new TypeError(`invalid u8 value [${b}]`);
    }
    return Uint8Array.from(v);
  }
  throw new TypeError(`expected bytes (a Uint8Array), got ${v === null ? 'null' : typeof v}`);
}

/** The guest side of one instance: its memory, allocator and post-return functions. */
export class Guest {
  /** The instance's exports (set by bind). */
  x = null;
  memory = null;
  #buffer = null;
  /** Views of the memory's current buffer: replaced whenever the memory grew. */
  u8 = null;
  dv = null;

  bind(instance) {
    this.x = instance.exports;
    this.memory = this.x.memory;
    if (!(this.memory instanceof WebAssembly.Memory) || typeof this.x.cabi_realloc !== 'function') {
      throw new Error('the core module exports no memory or no cabi_realloc');
    }
    this.refresh();
  }

  /**
   * Called after anything that may run guest code: a grown memory detaches
   * the old buffer, and views over it read as empty.
   */
  refresh() {
    // Growing a (non-shared) memory detaches its old buffer, whose length
    // then reads 0: checking that is much cheaper than `memory.buffer`, a
    // call into the engine, which this would make once per allocation.
    if (this.#buffer !== null && this.#buffer.byteLength !== 0) return;
    const b = this.memory.buffer;
    this.#buffer = b;
    this.u8 = new Uint8Array(b);
    this.dv = new DataView(b);
  }

  /** `n * size` bytes at `ptr`, which must lie inside memory: the end offset. */
  span(ptr, n, size) {
    const end = ptr + n * size;
    if (end > this.u8.length) throw new RangeError(`the guest's list at ${ptr} (${n} × ${size} bytes) is outside memory`);
    return end;
  }

  // -------------------------------------------------------------------------
  // Lowering. Everything handed to the guest is its own allocation of the
  // exact size and alignment: the guest frees each list with that layout.
  // -------------------------------------------------------------------------

  alloc(align, size) {
    // What cabi_realloc returns for zero bytes (a dangling, aligned pointer),
    // without the crossing.
    if (size === 0) return align;
    if (size > 0xffffffff) throw new RangeError(`${size} bytes do not fit a 32-bit guest`);
    const p = this.x.cabi_realloc(0, 0, align, size) >>> 0;
    this.refresh();
    if (p === 0 || p % align !== 0 || p + size > this.u8.length) {
      throw new Error(`cabi_realloc returned ${p} for ${size} bytes (align ${align}): outside memory`);
    }
    return p;
  }

  /** Copies bytes into a new allocation; its pointer (the length is the input's). */
  lowerBytes(v) {
    const src = byteView(v);
    const p = this.alloc(1, src.length);
    this.u8.set(src, p);
    this.len = src.length;
    return p;
  }

  /** A string into a new allocation (UTF-8); its pointer, the byte length in `this.len`. */
  lowerString(s) {
    if (typeof s !== 'string') throw new TypeError(`expected a string, received [${typeof s}]`);
    const n = Buffer.byteLength(s, 'utf8');
    const p = this.alloc(1, n);
    if (n > 0) encoder.encodeInto(s, this.u8.subarray(p, p + n));
    this.len = n;
    return p;
  }

  /** list<u32> (align 4): from a Uint32Array as one copy, else element by element. */
  lowerU32s(v) {
    const list = v instanceof Uint32Array ? v : Array.from(v, (x) => {
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > 0xffffffff) throw new TypeError(`invalid u32 value [${x}]`);
      return x;
    });
    const p = this.alloc(4, list.length * 4);
    for (let i = 0; i < list.length; i++) this.dv.setUint32(p + 4 * i, list[i], true);
    this.len = list.length;
    return p;
  }

  /** A list or string descriptor (ptr, len) at `at`. */
  setList(at, ptr, len) {
    this.dv.setUint32(at + L.LIST.ptr, ptr, true);
    this.dv.setUint32(at + L.LIST.len, len, true);
  }

  /** list<list<u8>>: the descriptor array after each element's own bytes. */
  lowerByteLists(lists) {
    const list = Array.isArray(lists) ? lists : Array.from(lists);
    const n = list.length;
    const base = this.alloc(L.LIST.align, n * L.LIST.size);
    for (let i = 0; i < n; i++) {
      const p = this.lowerBytes(list[i]);
      this.setList(base + L.LIST.size * i, p, this.len);
    }
    this.len = n;
    return base;
  }

  /** An entry record at `at`, its committables lowered first. */
  lowerEntryAt(at, e) {
    const checkpoint = u64(e.checkpoint);
    const p = this.lowerByteLists(e.committables);
    const dv = this.dv;
    dv.setBigUint64(at + L.ENTRY.checkpoint, checkpoint, true);
    this.setList(at + L.ENTRY.committables, p, this.len);
    const wm = at + L.ENTRY.watermark;
    if (e.watermark === undefined || e.watermark === null) {
      dv.setUint8(wm, 0);
    } else {
      dv.setUint8(wm, 1);
      dv.setBigInt64(wm + L.OPTION_S64.payload, s64(e.watermark), true);
    }
    dv.setUint8(at + L.ENTRY.savepoint, flag(e.savepoint));
  }

  /**
   * A packed-event record at `at`, its block already lowered at `p` (`len`
   * bytes).
   */
  lowerPackedEventAt(at, e, p, len) {
    const subtask = u32(e.subtask);
    const attempt = u32(e.attempt);
    const checkpoint = u64(e.checkpoint);
    const wm = e.watermark;
    const some = wm === undefined || wm === null ? 0 : 1;
    const watermark = some ? s64(wm) : 0n;
    const dv = this.dv;
    dv.setUint32(at + L.PACKED_EVENT.subtask, subtask, true);
    dv.setUint32(at + L.PACKED_EVENT.attempt, attempt, true);
    dv.setBigUint64(at + L.PACKED_EVENT.checkpoint, checkpoint, true);
    this.setList(at + L.PACKED_EVENT.committables, p, len);
    dv.setUint8(at + L.PACKED_EVENT.watermark, some);
    dv.setBigInt64(at + L.PACKED_EVENT.watermark + L.OPTION_S64.payload, watermark, true);
    dv.setUint8(at + L.PACKED_EVENT.savepoint, flag(e.savepoint));
  }

  // -------------------------------------------------------------------------
  // Lifting (copies: the post-return frees what the result points to).
  // -------------------------------------------------------------------------

  bool(p) {
    const v = this.dv.getUint8(p);
    if (v > 1) throw new TypeError('invalid variant discriminant for bool');
    return v === 1;
  }

  /** The string whose descriptor is at `p`. */
  str(p) {
    const ptr = this.dv.getUint32(p + L.LIST.ptr, true);
    const len = this.dv.getUint32(p + L.LIST.len, true);
    return decoder.decode(this.u8.subarray(ptr, this.span(ptr, len, 1)));
  }

  /** The bytes whose descriptor is at `p`, copied. */
  bytes(p) {
    const ptr = this.dv.getUint32(p + L.LIST.ptr, true);
    const len = this.dv.getUint32(p + L.LIST.len, true);
    return this.u8.slice(ptr, this.span(ptr, len, 1));
  }

  strings(p) {
    return this.list(p, L.LIST.size, this.str);
  }

  u64s(p) {
    const ptr = this.dv.getUint32(p + L.LIST.ptr, true);
    const n = this.dv.getUint32(p + L.LIST.len, true);
    return new BigUint64Array(this.u8.buffer.slice(ptr, this.span(ptr, n, 8)));
  }

  /** option<u64> (or, with `signed`, option<s64>: the same layout) at `p`. */
  optU64(p, signed = false) {
    const d = this.dv.getUint8(p);
    if (d === 0) return undefined;
    if (d !== 1) throw new TypeError(`invalid variant discriminant ${d} for option`);
    const v = p + L.OPTION_U64.payload;
    return signed ? this.dv.getBigInt64(v, true) : this.dv.getBigUint64(v, true);
  }

  lifecycle(p) {
    const v = LIFECYCLE[this.dv.getUint8(p)];
    if (v === undefined) throw new TypeError(`invalid lifecycle discriminant ${this.dv.getUint8(p)}`);
    return v;
  }

  /** error. */
  error(p) {
    const d = this.dv.getUint8(p + L.ERROR.kind);
    const kind = ERROR_KINDS[d];
    if (kind === undefined) throw new TypeError(`invalid error-kind discriminant ${d}`);
    return { kind, message: this.str(p + L.ERROR.message) };
  }

  /** outcome. */
  outcome(p) {
    return {
      state: this.lifecycle(p + L.OUTCOME.state),
      committed: this.u64s(p + L.OUTCOME.committed),
      tagsCreated: this.strings(p + L.OUTCOME.tagsCreated),
      tagsDeleted: this.strings(p + L.OUTCOME.tagsDeleted),
      restartRequired: this.bool(p + L.OUTCOME.restartRequired),
      committedUpTo: this.optU64(p + L.OUTCOME.committedUpTo),
    };
  }

  /** entry. */
  entry(p) {
    const committables = this.list(p + L.ENTRY.committables, L.LIST.size, this.bytes);
    return {
      checkpoint: this.dv.getBigUint64(p + L.ENTRY.checkpoint, true),
      committables,
      watermark: this.optU64(p + L.ENTRY.watermark, true),
      savepoint: this.bool(p + L.ENTRY.savepoint),
    };
  }

  entries(p) {
    return this.list(p, L.ENTRY.size, this.entry);
  }

  /** snapshot; its committables are tuple<u32, list<u8>>. */
  snapshot(p) {
    const T = L.TUPLE_U32_LIST_U8;
    const committables = this.list(p + L.SNAPSHOT.committables, T.size,
      (e) => [this.dv.getUint32(e + T.f0, true), this.bytes(e + T.f1)]);
    return {
      id: this.dv.getBigUint64(p + L.SNAPSHOT.id, true),
      commitUser: this.str(p + L.SNAPSHOT.commitUser),
      identifier: this.dv.getBigUint64(p + L.SNAPSHOT.identifier, true),
      watermark: this.optU64(p + L.SNAPSHOT.watermark, true),
      timeMs: this.dv.getBigUint64(p + L.SNAPSHOT.timeMs, true),
      committables,
    };
  }

  /** tag. */
  tag(p) {
    return {
      name: this.str(p + L.TAG.name),
      snapshotId: this.dv.getBigUint64(p + L.TAG.snapshotId, true),
      identifier: this.dv.getBigUint64(p + L.TAG.identifier, true),
      createTimeMs: this.dv.getBigUint64(p + L.TAG.createTimeMs, true),
      expireTimeMs: this.optU64(p + L.TAG.expireTimeMs),
    };
  }

  /** list<T> whose descriptor is at `p`, elements of `size` bytes lifted by `one`. */
  list(p, size, one) {
    const ptr = this.dv.getUint32(p + L.LIST.ptr, true);
    const n = this.dv.getUint32(p + L.LIST.len, true);
    this.span(ptr, n, size);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = one.call(this, ptr + size * i);
    return out;
  }

  /** batch-outcome: its effects are an option<batch-effects>. */
  batchOutcome(p) {
    const opt = p + L.BATCH_OUTCOME.effects;
    const d = this.dv.getUint8(opt);
    if (d > 1) throw new TypeError(`invalid variant discriminant ${d} for option`);
    const e = opt + L.OPTION_BATCH_EFFECTS.payload;
    const E = L.BATCH_EFFECTS;
    return {
      state: this.lifecycle(p + L.BATCH_OUTCOME.state),
      committedUpTo: this.optU64(p + L.BATCH_OUTCOME.committedUpTo),
      effects: d === 0 ? undefined : {
        committed: this.u64s(e + E.committed),
        tagsCreated: this.strings(e + E.tagsCreated),
        tagsDeleted: this.strings(e + E.tagsDeleted),
        restartRequired: this.bool(e + E.restartRequired),
      },
    };
  }

  /** batch-error. */
  batchError(p) {
    const B = L.BATCH_ERROR;
    return {
      applied: this.dv.getUint32(p + B.applied, true),
      outcome: this.batchOutcome(p + B.outcome),
      error: this.error(p + B.error),
    };
  }
}
