// The package's two runtimes (SINK_COORDINATOR_NODE_RUNTIME): the core
// module with the hand-written canonical ABI (core.js, the default) and the
// jco transpilation (the fallback) give the same results byte for byte, and
// the core module's version is checked at load as the component's is. Run
// by `make hosts-test` (node --test).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { extractCoreModule } from '../package/build.mjs';
import { loadInstalled, REPO, withPackageCopy } from '../installed.mjs';

const sc = await loadInstalled();
const SCENARIO = join(REPO, 'hosts', 'node', 'runtime_scenario.mjs');

/** The scenario's output with SINK_COORDINATOR_NODE_RUNTIME = `runtime` (unset for undefined). */
function scenario(runtime) {
  const env = { ...process.env };
  delete env.SINK_COORDINATOR_NODE_RUNTIME;
  if (runtime !== undefined) env.SINK_COORDINATOR_NODE_RUNTIME = runtime;
  const r = spawnSync(process.execPath, [SCENARIO], { env, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  return { engine: JSON.parse(lines.pop()).engine, results: lines.join('\n') };
}

test('the same scenario on the core and jco runtimes: byte-identical results and table', () => {
  const core = scenario('core');
  const jco = scenario('jco');
  const dflt = scenario(undefined);
  assert.equal(core.engine, 'core');
  assert.equal(jco.engine, 'jco');
  assert.equal(dflt.engine, 'core', 'core is the default');
  assert.ok(core.results.split('\n').length > 50);
  assert.match(core.results, /^table snapshot\/00000000000000000002 /m);
  assert.equal(core.results, jco.results);
  assert.equal(dflt.results, core.results);
});

test('SINK_COORDINATOR_NODE_RUNTIME refuses another value', () => {
  const before = process.env.SINK_COORDINATOR_NODE_RUNTIME;
  try {
    process.env.SINK_COORDINATOR_NODE_RUNTIME = 'wasmtime';
    assert.throws(() => new sc.Runtime(), { name: 'RangeError', message: 'SINK_COORDINATOR_NODE_RUNTIME must be core or jco, got "wasmtime"' });
    for (const name of ['core', 'jco']) {
      process.env.SINK_COORDINATOR_NODE_RUNTIME = name;
      const runtime = new sc.Runtime();
      assert.equal(runtime.version, sc.Runtime.default().version, 'both run the packaged version');
      assert.equal(runtime.sha256, sc.Runtime.default().sha256, 'both name the component the package was built from');
      const c = new sc.Coordinator({ parallelism: 1, commitUser: name }, new sc.MemoryStorage(), { runtime });
      assert.equal(c.start().state, 'running');
    }
  } finally {
    if (before === undefined) delete process.env.SINK_COORDINATOR_NODE_RUNTIME;
    else process.env.SINK_COORDINATOR_NODE_RUNTIME = before;
  }
});

test('the core module of another version is refused at load (IncompatibleComponent)', async () => {
  // The installed package's modules beside a core/ made from the 0.1.0
  // component, inside the project (whose node_modules has semver).
  await withPackageCopy('sink-coordinator-core-0.1.0-', async (dir, installed) => {
    for (const d of ['component', 'core']) {
      mkdirSync(join(dir, d));
      for (const f of readdirSync(join(installed, d), { withFileTypes: true })) {
        if (f.isFile()) copyFileSync(join(installed, d, f.name), join(dir, d, f.name));
      }
    }
    const interfaces = join(installed, 'component', 'interfaces');
    mkdirSync(join(dir, 'component', 'interfaces'));
    for (const f of readdirSync(interfaces)) copyFileSync(join(interfaces, f), join(dir, 'component', 'interfaces', f));
    const old = extractCoreModule(readFileSync(join(REPO, 'dist', 'sink-coordinator-0.1.0.wasm')));
    writeFileSync(join(dir, 'core', 'sink-coordinator.core.wasm'), old);
    const pkg = await import(pathToFileURL(join(dir, 'index.js')).href);
    assert.throws(() => new pkg.Runtime(), (e) => e instanceof pkg.IncompatibleComponent
      && /this host runs sink:coordinator >=0\.2\.1, <0\.3\.0, the component is sink:coordinator@0\.1\.0/.test(e.message)
      && e.found.join() === '0.1.0');
  });
});
