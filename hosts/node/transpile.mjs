#!/usr/bin/env node
// Transpiles the sink-coordinator component with jco into a cache directory
// keyed by the component's SHA-256, so that replays of the same build reuse it:
//
//   node hosts/node/transpile.mjs [COMPONENT.wasm] [--out DIR]
//
// COMPONENT defaults to $SINK_COORDINATOR_WASM, else the committed
// <repo>/dist/sink-coordinator-<WIT version>.wasm.
// Prints the output directory. The output (`sink-coordinator.js` plus the
// `*.core*.wasm` files) is jco's `--instantiation async` form: an
// `instantiate(getCoreModule, imports, instantiateCore)` function, so a
// trapped instance can be replaced by a fresh one from the cached modules.

import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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

function jcoBin() {
  const bin = join(HERE, 'node_modules', '@bytecodealliance', 'jco', 'dist', 'jco.js');
  if (!existsSync(bin)) {
    throw new Error(`jco is not installed (${bin} is missing): run \`npm ci\` in hosts/node (or hosts/setup.sh)`);
  }
  return bin;
}

/**
 * Transpiles `component` unless a transpilation of the same bytes exists;
 * returns the directory holding `sink-coordinator.js`.
 */
export function ensureTranspiled(component, outDir) {
  let bytes;
  try {
    bytes = readFileSync(component);
  } catch (e) {
    throw new Error(`cannot read the component ${component}: ${e.message} (build it with \`make wasm\`)`);
  }
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const dir = outDir ? resolve(outDir) : join(HERE, '.cache', hash);
  if (existsSync(join(dir, `${NAME}.js`))) return dir;
  const tmp = `${dir}.tmp${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  execFileSync(
    process.execPath,
    [jcoBin(), 'transpile', component, '-o', tmp, '--name', NAME, '--instantiation', 'async', '--no-typescript', '--quiet'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
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
    console.log(ensureTranspiled(componentPath(comp), out));
  } catch (e) {
    console.error(`transpile: ${e.message}`);
    process.exit(1);
  }
}
