// Committables of Paimon mode (docs/paimon.md, "The committable (encoding
// PCM v1)"): the metadata of one new data file, the bytes a writer reports
// (Writer.report) to a coordinator whose table format is Paimon.
//
// A value (Datum) is null, a number (INT, TINYINT, SMALLINT, DATE in days
// since epoch: a 32-bit integer), a bigint (BIGINT), a string (STRING,
// VARCHAR, CHAR) or a boolean. INT and BIGINT are told apart by the
// JavaScript type because the encoding tags them differently.
//
// The checks here are the ones the coordinator makes without the table (a
// plain file name, Paimon's signed 64-bit ranges), so that a bad file is a
// TypeError or RangeError at the writer instead of a fatal invalid-event.

/** Longest file name the coordinator accepts, in UTF-8 bytes. */
export const MAX_FILE_NAME_BYTES = 255;

const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
const U32_MAX = 0xffff_ffff;
const utf8 = new TextEncoder();

/** A 64-bit field as a bigint: a bigint or a safe integer number. */
function int64(what, v, min) {
  let b;
  if (typeof v === 'bigint') {
    b = v;
  } else if (typeof v === 'number') {
    // Past 2^53 a number is already rounded: the caller must say which value.
    if (!Number.isSafeInteger(v)) throw new RangeError(`${what} = ${v} is not a safe integer (pass a bigint)`);
    b = BigInt(v);
  } else {
    throw new TypeError(`${what} must be a bigint or a number, not ${typeof v}`);
  }
  if (b < min || b > I64_MAX) throw new RangeError(`${what} = ${b} is out of range [${min}, ${I64_MAX}]`);
  return b;
}

function textBytes(what, s) {
  if (typeof s !== 'string') throw new TypeError(`${what} must be a string, not ${typeof s}`);
  // TextEncoder would turn a lone surrogate into U+FFFD: refuse it instead of
  // sending other text than the caller's.
  if (!s.isWellFormed()) throw new RangeError(`${what} is not well-formed Unicode (a lone surrogate)`);
  const b = utf8.encode(s);
  if (b.length > U32_MAX) throw new RangeError(`${what} is longer than 2^32 - 1 UTF-8 bytes`);
  return b;
}

function checkDatum(what, v) {
  if (v === null || typeof v === 'boolean') return;
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || v < -0x8000_0000 || v > 0x7fff_ffff) {
      throw new RangeError(`${what} = ${v} is not a 32-bit integer (INT); a BIGINT is a bigint`);
    }
    return;
  }
  if (typeof v === 'bigint') {
    if (v < I64_MIN || v > I64_MAX) throw new RangeError(`${what} = ${v} is not a 64-bit integer (BIGINT)`);
    return;
  }
  if (typeof v === 'string') {
    textBytes(what, v);
    return;
  }
  throw new TypeError(`${what} must be null, a number, a bigint, a string or a boolean, not ${v === undefined ? 'undefined' : typeof v}`);
}

function list(what, v) {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new TypeError(`${what} must be an array`);
  if (v.length > U32_MAX) throw new RangeError(`${what} has more than 2^32 - 1 entries`);
  return v;
}

/** Appends bytes to a growing list of chunks; the length is summed once at the end. */
class Out {
  constructor() {
    this.chunks = [];
    this.length = 0;
  }
  push(b) {
    this.chunks.push(b);
    this.length += b.length;
  }
  u8(x) {
    this.push(Uint8Array.of(x));
  }
  u32(x) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, x, true);
    this.push(b);
  }
  i64(x) {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigInt64(0, x, true);
    this.push(b);
  }
  str(bytes) {
    this.u32(bytes.length);
    this.push(bytes);
  }
  val(v) {
    if (v === null) {
      this.u8(0);
    } else if (typeof v === 'number') {
      const b = new Uint8Array(5);
      b[0] = 1;
      new DataView(b.buffer).setInt32(1, v, true);
      this.push(b);
    } else if (typeof v === 'bigint') {
      this.u8(2);
      this.i64(v);
    } else if (typeof v === 'string') {
      this.u8(3);
      this.str(utf8.encode(v));
    } else {
      this.push(Uint8Array.of(4, v ? 1 : 0));
    }
  }
  bytes() {
    const out = new Uint8Array(this.length);
    let pos = 0;
    for (const c of this.chunks) {
      out.set(c, pos);
      pos += c.length;
    }
    return out;
  }
}

/**
 * The committable of `dataFile`, encoding PCM v1 (see index.d.ts, DataFile).
 * Throws TypeError for a field of the wrong type, RangeError for a value out
 * of its range or a file name that is not a plain name.
 */
export function encodeCommittable(dataFile) {
  if (dataFile === null || typeof dataFile !== 'object') throw new TypeError('encodeCommittable takes a DataFile object');
  const f = dataFile;
  const name = textBytes('fileName', f.fileName);
  if (
    name.length === 0 || name.length > MAX_FILE_NAME_BYTES || f.fileName === '.' || f.fileName === '..' ||
    name.some((b) => b === 0x2f || b === 0x5c || b < 0x20 || b === 0x7f)
  ) {
    throw new RangeError(
      `fileName ${JSON.stringify(f.fileName)} is not a plain file name (1 to ${MAX_FILE_NAME_BYTES} UTF-8 bytes, not . or .., no /, \\ or control character)`,
    );
  }
  // Paimon's fields are signed 64-bit: sizes and the schema id are never negative.
  const head = [
    int64('fileSize', f.fileSize, 0n),
    int64('rowCount', f.rowCount, 0n),
    int64('schemaId', f.schemaId, 0n),
    int64('minSequenceNumber', f.minSequenceNumber, I64_MIN),
    int64('maxSequenceNumber', f.maxSequenceNumber, I64_MIN),
    int64('creationTimeMillis', f.creationTimeMillis, I64_MIN),
  ];
  const partition = list('partition', f.partition);
  partition.forEach((v, i) => checkDatum(`partition[${i}]`, v));
  const stats = list('valueStats', f.valueStats).map((s, i) => {
    if (s === null || typeof s !== 'object') throw new TypeError(`valueStats[${i}] must be a ColumnStats object`);
    const column = textBytes(`valueStats[${i}].column`, s.column);
    checkDatum(`valueStats[${i}].min`, s.min);
    checkDatum(`valueStats[${i}].max`, s.max);
    // The encoding's -1 is "unknown", which is null/undefined here: a negative
    // count would read back as unknown, not as what was sent.
    const nullCount = s.nullCount == null ? -1n : int64(`valueStats[${i}].nullCount`, s.nullCount, 0n);
    return { column, min: s.min, max: s.max, nullCount };
  });

  const out = new Out();
  out.push(Uint8Array.of(0x50, 0x43, 0x4d, 1)); // "PCM" v1
  out.str(name);
  for (const x of head) out.i64(x);
  out.u32(partition.length);
  for (const v of partition) out.val(v);
  if (stats.length === 0) {
    out.u8(0);
  } else {
    out.u8(1);
    out.u32(stats.length);
    for (const s of stats) {
      out.str(s.column);
      out.val(s.min);
      out.val(s.max);
      out.i64(s.nullCount);
    }
  }
  return out.bytes();
}
