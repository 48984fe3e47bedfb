#!/usr/bin/env node
// The realistic job of issue 10 (BENCHMARKS.md) through the installed npm
// package (its default runtime, the core module; SINK_COORDINATOR_NODE_RUNTIME=jco
// measures the jco fallback), for `make bench`'s "Node ÷ Rust" row:
//   node hosts/node/bench_job.mjs [--writers P] [--cycles N] [--per-event]
// One cycle: every writer's event for checkpoint c (4 committables of 200 B
// each, built before the clock starts, as testkit/src/perf.rs does), the
// coordinator's state taken, c completed and committed as one snapshot. The
// events of a cycle go as one `events` batch (a host receives them in a
// burst per checkpoint), or one `event` call each with --per-event.
// Prints one JSON line: {"host":"node","cycle_ns":…,"event_ns":…,…}; the
// figure is the median of 5 rounds of N cycles. Nothing is asserted about
// time.

import { loadInstalled } from './installed.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i < 0 ? dflt : Number(args[i + 1]);
};
const P = opt('--writers', 256);
const N = opt('--cycles', 40);
const perEvent = args.includes('--per-event');
const COMMITTABLES = 4;
const BYTES = 200;
const KEPT_SNAPSHOTS = 4;

const sc = await loadInstalled();

/** In-memory storage keeping only the latest snapshot records (as the Rust bench's). */
class BenchStorage {
  constructor() {
    this.map = new Map();
    this.snapshots = [];
  }
  get(key) {
    return this.map.get(key);
  }
  putIfAbsent(key, value) {
    if (this.map.has(key)) return false;
    this.map.set(key, Uint8Array.from(value));
    if (key.startsWith('snapshot/')) {
      this.snapshots.push(key);
      if (this.snapshots.length > KEPT_SNAPSHOTS) this.map.delete(this.snapshots.shift());
    }
    return true;
  }
  put(key, value) {
    this.map.set(key, Uint8Array.from(value));
  }
  delete(key) {
    this.map.delete(key);
  }
  list(prefix) {
    return [...this.map.keys()].filter((k) => k.startsWith(prefix)).sort();
  }
}

const enc = new TextEncoder();
/** Writer s's entry for checkpoint c: distinct 200-byte committables and a watermark. */
function entry(s, c) {
  const committables = [];
  for (let i = 0; i < COMMITTABLES; i++) {
    const b = new Uint8Array(BYTES).fill(0x78);
    b.set(enc.encode(`${s}/${c}/${i}`));
    committables.push(b);
  }
  return { checkpoint: BigInt(c), committables, watermark: BigInt(c * 1000), savepoint: false };
}

const c = new sc.Coordinator({ parallelism: P, commitUser: 'bench' }, new BenchStorage(), {
  clock: new sc.ManualClock(0n),
});
c.start();
const batched = !perEvent && typeof c.events === 'function';
let cp = 0;
function cycle(entries) {
  cp += 1;
  if (batched) {
    c.events(entries.map((e, s) => ({ subtask: s, attempt: 0, entry: e })));
  } else {
    for (let s = 0; s < P; s++) c.event(s, 0, entries[s]);
  }
  c.checkpoint(BigInt(cp));
  const out = c.checkpointComplete(BigInt(cp));
  if (out.committed.length !== 1) throw new Error(`checkpoint ${cp}: ${out.committed.length} snapshots`);
}
const build = () => Array.from({ length: P }, (_, s) => entry(s, cp + 1));

for (let i = 0; i < 5; i++) cycle(build()); // warm up
const rounds = [];
for (let r = 0; r < 5; r++) {
  let ns = 0n;
  for (let i = 0; i < N; i++) {
    const entries = build();
    const t = process.hrtime.bigint();
    cycle(entries);
    ns += process.hrtime.bigint() - t;
  }
  rounds.push(Number(ns) / N);
}
rounds.sort((a, b) => a - b);
const cycleNs = rounds[2];
console.log(JSON.stringify({
  host: 'node',
  runtime: `node ${process.version}`,
  batched,
  writers: P,
  cycles: N * 5,
  cycle_ns: Math.round(cycleNs),
  event_ns: Math.round(cycleNs / P),
}));
