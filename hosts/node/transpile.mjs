#!/usr/bin/env node
// Transpiles the sink-coordinator component with jco into a cache directory
// keyed by the component's SHA-256, so that replays of the same build reuse it:
//
//   node hosts/node/transpile.mjs [COMPONENT.wasm] [--out DIR]
//
// COMPONENT defaults to $SINK_COORDINATOR_WASM, else the committed
// <repo>/dist/sink-coordinator-<WIT version>.wasm.
// Prints the output directory; a component of a WIT version this host does
// not run (version.mjs) is refused with one message, exit 1. The output (`sink-coordinator.js` plus the
// `*.core*.wasm` files) is jco's `--instantiation async` form: an
// `instantiate(getCoreModule, imports, instantiateCore)` function, so a
// trapped instance can be replaced by a fresh one from the cached modules.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { checkVersion } from './version.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '..', '..');
export const NAME = 'sink-coordinator';

/** The committed artifact of the WIT package version (wit/coordinator.wit). */
export function distComponent() {
  const wit = readFileSync(join(REPO, 'wit', 'coordinator.wit'), 'utf8');
  const m = /^package sink:coordinator@(\S+);/m.exec(wit);
  if (!m) throw new Error('wit/coordinator.wit declares no sink:coordinator package version');
  return join(REPO, 'dist', `sink-coordinator-${m[1]}.wasm`);
}

/** The component path: the argument, else $SINK_COORDINATOR_WASM, else dist/. */
export function componentPath(arg) {
  if (arg) return resolve(arg);
  if (process.env.SINK_COORDINATOR_WASM) return resolve(process.env.SINK_COORDINATOR_WASM);
  return distComponent();
}

/** The version check's record of a transpilation: its export names. */
const EXPORTS = 'exports.json';

/**
 * Transpiles `component` unless a transpilation of the same bytes exists;
 * returns the directory holding `sink-coordinator.js`. A component of a WIT
 * version this host does not run is refused first (IncompatibleComponent,
 * version.mjs), whether it was transpiled before or not.
 */
export async function ensureTranspiled(component, outDir) {
  let bytes;
  try {
    bytes = readFileSync(component);
  } catch (e) {
    throw new Error(`cannot read the component ${component}: ${e.message} (build it with \`make wasm\`)`);
  }
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const dir = outDir ? resolve(outDir) : join(HERE, '.cache', hash);
  if (existsSync(join(dir, `${NAME}.js`)) && existsSync(join(dir, EXPORTS))) {
    checkVersion(JSON.parse(readFileSync(join(dir, EXPORTS), 'utf8')));
    return dir;
  }
  let transpile;
  try {
    ({ transpile } = await import('@bytecodealliance/jco'));
  } catch (e) {
    throw new Error(`jco is not installed (${e.message}): run \`npm ci\` in hosts/node (or hosts/setup.sh)`);
  }
  const { files, exports } = await transpile(bytes, { name: NAME, instantiation: 'async', noTypescript: true, quiet: true });
  const names = exports.map(([name]) => name);
  checkVersion(names);
  const tmp = `${dir}.tmp${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(tmp, file)), { recursive: true });
    writeFileSync(join(tmp, file), content);
  }
  writeFileSync(join(tmp, EXPORTS), `${JSON.stringify(names)}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let out = null;
  let comp = null;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out') out = args[++i];
    else comp = args[i];
  }
  try {
    console.log(await ensureTranspiled(componentPath(comp), out));
  } catch (e) {
    console.error(`transpile: ${e.message}`);
    process.exit(1);
  }
}
