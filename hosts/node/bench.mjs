#!/usr/bin/env node
// Rough per-call timings of the installed npm package (jco), including the
// package's argument conversion:
//   node hosts/node/bench.mjs [N]
// state(): the smallest round trip; committedUpTo(): the query a host makes
// to forward committed-up-to to its writers; event(): one writer event
// (buffered, no storage call); event+complete: an event and the
// checkpoint-complete that commits it (storage reads and writes through the
// imports); writer report+committed: a writer helper buffering an entry and
// dropping it when the host forwards committed-up-to.

import { loadInstalled } from './installed.mjs';

const args = process.argv.slice(2);
const N = Number(args[0] ?? 20000);

const t0 = performance.now();
const sc = await loadInstalled();
const runtime = sc.Runtime.default();
const t1 = performance.now();
const newCoordinator = () => {
  const c = new sc.Coordinator({ parallelism: 1, commitUser: 'bench' }, new sc.MemoryStorage(), { clock: new sc.ManualClock(1000n) });
  c.start();
  return c;
};
const t2 = performance.now();
let c = newCoordinator();
const t3 = performance.now();
for (let i = 0; i < 20; i++) newCoordinator();
const t4 = performance.now();
const committable = [new TextEncoder().encode('file-0001.parquet')];

function time(label, n, fn) {
  for (let i = 0; i < Math.min(1000, n); i++) fn(i); // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  const ns = Number(process.hrtime.bigint() - start) / n;
  console.log(`${label.padEnd(30)} ${(ns / 1000).toFixed(2)} µs/call (${n} calls)`);
}

console.log(`node ${process.version}, sink-coordinator ${runtime.version} (jco 1.35.0)`);
console.log(`${'load + compile'.padEnd(30)} ${(t1 - t0).toFixed(1)} ms`);
console.log(`${'first instance + start'.padEnd(30)} ${(t3 - t2).toFixed(2)} ms (compiles the core module)`);
console.log(`${'later instance + start'.padEnd(30)} ${((t4 - t3) / 20).toFixed(2)} ms`);
time('state()', N, () => c.state());
time('committedUpTo()', N, () => c.committedUpTo());
let cp = 1n;
time('event()', N, () => c.event(0, 0, { checkpoint: cp++, committables: committable, watermark: 5n, savepoint: false }));
c = newCoordinator();
cp = 1n;
time('event() + complete()', Math.max(1, N / 10), () => {
  c.event(0, 0, { checkpoint: cp, committables: committable, watermark: 5n, savepoint: false });
  c.checkpointComplete(cp++);
});
const w = new sc.Writer(0);
cp = 1n;
time('writer report() + committed()', N, () => {
  w.report(cp, committable, 5n, false);
  w.committed(cp++);
});
