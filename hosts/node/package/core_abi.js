// The canonical ABI of the sink-coordinator's core module, by hand: one
// Guest per instance reads and writes its linear memory through typed-array
// views and allocates with the guest's cabi_realloc. Layouts: docs/embedding.md
// section 4. Values come out in the shapes jco gives (camelCase records,
// `undefined` for none, BigUint64Array for list<u64>, Uint8Array for bytes),
// with record keys in WIT order, so a result prints the same on either runtime.
//
// Anything the guest hands back that breaks the ABI (a pointer outside
// memory, a discriminant out of range) throws: the call traps and the
// package drops the instance, as for any trap.

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

  /** list<list<u8>>: the (ptr, len) array after each element's own bytes. */
  lowerByteLists(lists) {
    const list = Array.isArray(lists) ? lists : Array.from(lists);
    const n = list.length;
    const base = this.alloc(4, n * 8);
    for (let i = 0; i < n; i++) {
      const p = this.lowerBytes(list[i]);
      this.dv.setUint32(base + 8 * i, p, true);
      this.dv.setUint32(base + 8 * i + 4, this.len, true);
    }
    this.len = n;
    return base;
  }

  /** An entry record (40 bytes) at `at`, its committables lowered first. */
  lowerEntryAt(at, e) {
    const checkpoint = u64(e.checkpoint);
    const p = this.lowerByteLists(e.committables);
    const dv = this.dv;
    dv.setBigUint64(at, checkpoint, true);
    dv.setUint32(at + 8, p, true);
    dv.setUint32(at + 12, this.len, true);
    if (e.watermark === undefined || e.watermark === null) {
      dv.setUint8(at + 16, 0);
    } else {
      dv.setUint8(at + 16, 1);
      dv.setBigInt64(at + 24, s64(e.watermark), true);
    }
    dv.setUint8(at + 32, flag(e.savepoint));
  }

  /**
   * A packed-event record (48 bytes) at `at`: subtask @0, attempt @4,
   * checkpoint @8, its block (already lowered at `p`, `len` bytes) @16,
   * watermark @24, savepoint @40.
   */
  lowerPackedEventAt(at, e, p, len) {
    const subtask = u32(e.subtask);
    const attempt = u32(e.attempt);
    const checkpoint = u64(e.checkpoint);
    const wm = e.watermark;
    const some = wm === undefined || wm === null ? 0 : 1;
    const watermark = some ? s64(wm) : 0n;
    const dv = this.dv;
    dv.setUint32(at, subtask, true);
    dv.setUint32(at + 4, attempt, true);
    dv.setBigUint64(at + 8, checkpoint, true);
    dv.setUint32(at + 16, p, true);
    dv.setUint32(at + 20, len, true);
    dv.setUint8(at + 24, some);
    dv.setBigInt64(at + 32, watermark, true);
    dv.setUint8(at + 40, flag(e.savepoint));
  }

  // -------------------------------------------------------------------------
  // Lifting (copies: the post-return frees what the result points to).
  // -------------------------------------------------------------------------

  bool(p) {
    const v = this.dv.getUint8(p);
    if (v > 1) throw new TypeError('invalid variant discriminant for bool');
    return v === 1;
  }

  /** The string whose (ptr, len) is at `p`. */
  str(p) {
    const ptr = this.dv.getUint32(p, true);
    const len = this.dv.getUint32(p + 4, true);
    return decoder.decode(this.u8.subarray(ptr, this.span(ptr, len, 1)));
  }

  /** The bytes whose (ptr, len) is at `p`, copied. */
  bytes(p) {
    const ptr = this.dv.getUint32(p, true);
    const len = this.dv.getUint32(p + 4, true);
    return this.u8.slice(ptr, this.span(ptr, len, 1));
  }

  strings(p) {
    return this.list(p, 8, this.str);
  }

  u64s(p) {
    const ptr = this.dv.getUint32(p, true);
    const n = this.dv.getUint32(p + 4, true);
    return new BigUint64Array(this.u8.buffer.slice(ptr, this.span(ptr, n, 8)));
  }

  /** option<u64> (or s64 with `signed`) at `p`: discriminant, value at p + 8. */
  optU64(p, signed = false) {
    const d = this.dv.getUint8(p);
    if (d === 0) return undefined;
    if (d !== 1) throw new TypeError(`invalid variant discriminant ${d} for option`);
    return signed ? this.dv.getBigInt64(p + 8, true) : this.dv.getBigUint64(p + 8, true);
  }

  lifecycle(p) {
    const v = LIFECYCLE[this.dv.getUint8(p)];
    if (v === undefined) throw new TypeError(`invalid lifecycle discriminant ${this.dv.getUint8(p)}`);
    return v;
  }

  /** error (12 bytes, align 4): kind @0, message @4. */
  error(p) {
    const kind = ERROR_KINDS[this.dv.getUint8(p)];
    if (kind === undefined) throw new TypeError(`invalid error-kind discriminant ${this.dv.getUint8(p)}`);
    return { kind, message: this.str(p + 4) };
  }

  /** outcome (48 bytes, align 8). */
  outcome(p) {
    return {
      state: this.lifecycle(p),
      committed: this.u64s(p + 4),
      tagsCreated: this.strings(p + 12),
      tagsDeleted: this.strings(p + 20),
      restartRequired: this.bool(p + 28),
      committedUpTo: this.optU64(p + 32),
    };
  }

  /** entry (40 bytes, align 8). */
  entry(p) {
    const committables = this.list(p + 8, 8, this.bytes);
    return {
      checkpoint: this.dv.getBigUint64(p, true),
      committables,
      watermark: this.optU64(p + 16, true),
      savepoint: this.bool(p + 32),
    };
  }

  entries(p) {
    return this.list(p, 40, this.entry);
  }

  /** snapshot (56 bytes, align 8); committables are tuple<u32, list<u8>> of 12 bytes. */
  snapshot(p) {
    const committables = this.list(p + 48, 12, (e) => [this.dv.getUint32(e, true), this.bytes(e + 4)]);
    return {
      id: this.dv.getBigUint64(p, true),
      commitUser: this.str(p + 8),
      identifier: this.dv.getBigUint64(p + 16, true),
      watermark: this.optU64(p + 24, true),
      timeMs: this.dv.getBigUint64(p + 40, true),
      committables,
    };
  }

  /** tag (48 bytes, align 8). */
  tag(p) {
    return {
      name: this.str(p),
      snapshotId: this.dv.getBigUint64(p + 8, true),
      identifier: this.dv.getBigUint64(p + 16, true),
      createTimeMs: this.dv.getBigUint64(p + 24, true),
      expireTimeMs: this.optU64(p + 32),
    };
  }

  /** list<T> whose (ptr, len) is at `p`, elements of `size` bytes lifted by `one`. */
  list(p, size, one) {
    const ptr = this.dv.getUint32(p, true);
    const n = this.dv.getUint32(p + 4, true);
    this.span(ptr, n, size);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = one.call(this, ptr + size * i);
    return out;
  }

  /**
   * batch-outcome (56 bytes, align 8): state @0, committed-up-to @8,
   * effects option @24 with batch-effects (align 4) @28: committed @0,
   * tags-created @8, tags-deleted @16, restart-required @24.
   */
  batchOutcome(p) {
    const d = this.dv.getUint8(p + 24);
    if (d > 1) throw new TypeError(`invalid variant discriminant ${d} for option`);
    const e = p + 28;
    return {
      state: this.lifecycle(p),
      committedUpTo: this.optU64(p + 8),
      effects: d === 0 ? undefined : {
        committed: this.u64s(e),
        tagsCreated: this.strings(e + 8),
        tagsDeleted: this.strings(e + 16),
        restartRequired: this.bool(e + 24),
      },
    };
  }

  /** batch-error (80 bytes, align 8): applied @0, batch-outcome @8, error @64. */
  batchError(p) {
    return { applied: this.dv.getUint32(p, true), outcome: this.batchOutcome(p + 8), error: this.error(p + 64) };
  }
}
