// A directory table that starts failing mid-run (issue 26: "mid-run storage
// failure tested natively only"): after two commits every storage call
// fails, and the coordinator's call is a typed StorageError (the handle
// stays usable); once the storage is back the same call commits. Then a
// create-once that lands but reports an error (an ambiguous write: the
// answer was lost) is resolved by the retry without a duplicate. Run by
// `make hosts-test`.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadInstalled } from '../installed.mjs';

const sc = await loadInstalled();
const bytes = (s) => new TextEncoder().encode(s);

/** A storage over `inner` that fails every call while `down`, or applies one create and then fails (`loseAck`). */
class Flaky {
  constructor(inner) {
    this.inner = inner;
    this.down = false;
    this.loseAck = false;
    this.failures = 0;
  }
  #call(op, key, apply) {
    if (this.down) {
      this.failures++;
      throw new sc.BackendIOError(`storage down: ${op} ${key}`);
    }
    const result = apply();
    if (this.loseAck && op === 'putIfAbsent') {
      this.loseAck = false;
      this.failures++;
      throw new sc.BackendIOError(`connection lost after ${op} ${key} was applied`);
    }
    return result;
  }
  get(k) { return this.#call('get', k, () => this.inner.get(k)); }
  putIfAbsent(k, v) { return this.#call('putIfAbsent', k, () => this.inner.putIfAbsent(k, v)); }
  put(k, v) { return this.#call('put', k, () => this.inner.put(k, v)); }
  delete(k) { return this.#call('delete', k, () => this.inner.delete(k)); }
  list(p) { return this.#call('list', p, () => this.inner.list(p)); }
}

test('a directory storage failing mid-run: a StorageError, and the next call recovers without a duplicate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sink-coordinator-midrun-'));
  try {
    const storage = new Flaky(new sc.FileSystemStorage(dir));
    const c = new sc.Coordinator({ parallelism: 1, commitUser: 'job-1' }, storage, { clock: new sc.ManualClock(7n) });
    c.start();
    const commit = (cp) => {
      c.event(0, 0, { checkpoint: cp, committables: [bytes(`c${cp}`)] });
      c.checkpoint(cp);
      return c.checkpointComplete(cp);
    };
    const committed = (o) => [...o.committed];
    assert.deepEqual(committed(commit(1n)), [1n]);
    assert.deepEqual(committed(commit(2n)), [2n]);

    // The storage goes down mid-run: a typed, retryable error, not a trap.
    c.event(0, 0, { checkpoint: 3n, committables: [bytes('c3')] });
    c.checkpoint(3n);
    storage.down = true;
    assert.throws(() => c.checkpointComplete(3n), (e) => e instanceof sc.StorageError && /storage down/.test(e.detail));
    assert.throws(() => c.checkpointComplete(3n), sc.StorageError);
    assert.equal(c.discarded, false);
    storage.down = false;
    assert.deepEqual(committed(c.checkpointComplete(3n)), [3n]);

    // A create that lands but answers with an error: the retry finds its own commit.
    c.event(0, 0, { checkpoint: 4n, committables: [bytes('c4')] });
    c.checkpoint(4n);
    storage.loseAck = true;
    assert.throws(() => c.checkpointComplete(4n), sc.StorageError);
    c.checkpointComplete(4n);
    assert.deepEqual(committed(commit(5n)), [5n]);
    assert.ok(storage.failures >= 3);

    const snapshots = new sc.Table(new sc.FileSystemStorage(dir)).listSnapshots();
    assert.deepEqual(snapshots.map((s) => s.identifier), [1n, 2n, 3n, 4n, 5n]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
