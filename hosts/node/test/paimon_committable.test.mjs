// encodeCommittable (package/paimon.js) against the shared vectors
// tests/paimon/committables.json, whose hex the Rust encoder fixes
// (paimon/tests/committable_vectors.rs), and its refusals. The module has no
// dependency on the component, so it is tested from the sources (the package
// re-exports it from index.js). Run by `make hosts-test` (node --test).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { MAX_FILE_NAME_BYTES, encodeCommittable } from '../package/paimon.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const vectors = JSON.parse(readFileSync(join(REPO, 'tests', 'paimon', 'committables.json'), 'utf8'));
const hex = (b) => Buffer.from(b).toString('hex');

/** A vector's value: {"int": n} is a number, {"long": "n"} a bigint. */
function datum(d) {
  const [[kind, v], ...rest] = Object.entries(d);
  assert.equal(rest.length, 0, JSON.stringify(d));
  switch (kind) {
    case 'null': return null;
    case 'int': return v;
    case 'long': return BigInt(v);
    case 'string': case 'bool': return v;
    default: throw new Error(`unknown value kind ${kind}`);
  }
}

function dataFile(j) {
  return {
    fileName: j.file_name,
    fileSize: BigInt(j.file_size),
    rowCount: BigInt(j.row_count),
    schemaId: BigInt(j.schema_id),
    minSequenceNumber: BigInt(j.min_sequence_number),
    maxSequenceNumber: BigInt(j.max_sequence_number),
    creationTimeMillis: BigInt(j.creation_time_millis),
    partition: j.partition.map(datum),
    valueStats: j.value_stats.map((s) => ({
      column: s.column,
      min: datum(s.min),
      max: datum(s.max),
      nullCount: s.null_count == null ? undefined : BigInt(s.null_count),
    })),
  };
}

test('every committable vector encodes to its hex', () => {
  assert.ok(vectors.cases.length >= 8);
  for (const c of vectors.cases) {
    const bytes = encodeCommittable(dataFile(c.data_file));
    assert.ok(bytes instanceof Uint8Array);
    assert.equal(hex(bytes), c.hex, c.name);
  }
});

test('safe-integer numbers, null counts of null and absent partitions encode as bigints would', () => {
  const c = vectors.cases.find((x) => x.name === 'minimal');
  const f = { fileName: 'data-1-0.parquet', fileSize: 1234, rowCount: 10, schemaId: 0, minSequenceNumber: 0, maxSequenceNumber: 9, creationTimeMillis: 1700000000000 };
  assert.equal(hex(encodeCommittable(f)), c.hex);
  const stats = (nullCount) => ({ ...f, valueStats: [{ column: 'id', min: 1n, max: 2n, nullCount }] });
  assert.deepEqual(encodeCommittable(stats(null)), encodeCommittable(stats(undefined)));
  assert.deepEqual(encodeCommittable(stats(3)), encodeCommittable(stats(3n)));
});

test('encodeCommittable refuses what the coordinator would refuse, with TypeError or RangeError', () => {
  const ok = { fileName: 'data-1-0.parquet', fileSize: 1n, rowCount: 1n, schemaId: 0n, minSequenceNumber: 0n, maxSequenceNumber: 0n, creationTimeMillis: 0n };
  encodeCommittable(ok);
  const refuses = (edit, error, message) => assert.throws(() => encodeCommittable({ ...ok, ...edit }), { name: error.name, message });
  for (const fileName of ['', '.', '..', 'a/b', 'a\\b', 'a\nb', 'a\x7fb', 'a'.repeat(MAX_FILE_NAME_BYTES + 1), 'é'.repeat(128)]) {
    refuses({ fileName }, RangeError, /not a plain file name/);
  }
  encodeCommittable({ ...ok, fileName: 'é'.repeat(127) + 'a' }); // 255 bytes
  refuses({ fileName: 'a\ud800' }, RangeError, /fileName is not well-formed Unicode/);
  refuses({ fileName: 7 }, TypeError, /fileName must be a string/);
  refuses({ fileSize: -1n }, RangeError, /fileSize = -1 is out of range/);
  refuses({ rowCount: 1n << 63n }, RangeError, /rowCount = 9223372036854775808 is out of range/);
  refuses({ schemaId: 2 ** 53 }, RangeError, /schemaId = 9007199254740992 is not a safe integer/);
  refuses({ minSequenceNumber: -(1n << 63n) - 1n }, RangeError, /minSequenceNumber/);
  refuses({ creationTimeMillis: '1' }, TypeError, /creationTimeMillis must be a bigint or a number/);
  refuses({ partition: [2 ** 31] }, RangeError, /partition\[0\] = 2147483648 is not a 32-bit integer/);
  refuses({ partition: [1.5] }, RangeError, /partition\[0\] = 1.5 is not a 32-bit integer/);
  refuses({ partition: [1n << 63n] }, RangeError, /not a 64-bit integer/);
  refuses({ partition: [undefined] }, TypeError, /partition\[0\] must be null, a number/);
  refuses({ partition: 'dt' }, TypeError, /partition must be an array/);
  refuses({ valueStats: [{ column: 'id', min: 1n, max: 2n, nullCount: -1n }] }, RangeError, /valueStats\[0\]\.nullCount = -1 is out of range/);
  refuses({ valueStats: [{ column: 'id', min: {}, max: 2n }] }, TypeError, /valueStats\[0\]\.min must be null/);
  refuses({ valueStats: [null] }, TypeError, /valueStats\[0\] must be a ColumnStats object/);
});
