#!/usr/bin/env node
// Builds the package's component/ directory: the repository's committed
// artifact (dist/sink-coordinator-<WIT version>.wasm, or the file given)
// transpiled by jco (`--instantiation async`, TypeScript declarations), and
// component.json (version, sha256, export names). A component of a version
// the package does not run is refused (IncompatibleComponent). Run by
// `npm pack` (prepack) and hosts/node/package.sh; jco and semver come from
// hosts/node/node_modules (run `npm ci` in hosts/node first; build.mjs says so
// when they are missing).
//
//   node hosts/node/package/build.mjs [COMPONENT.wasm] [--out DIR]

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '..', '..', '..');
export const NAME = 'sink-coordinator';

/** The committed artifact of the WIT package version (wit/coordinator.wit). */
export function distComponent() {
  const wit = readFileSync(join(REPO, 'wit', 'coordinator.wit'), 'utf8');
  const m = /^package sink:coordinator@(\S+);/m.exec(wit);
  if (!m) throw new Error('wit/coordinator.wit declares no sink:coordinator package version');
  return join(REPO, 'dist', `sink-coordinator-${m[1]}.wasm`);
}

/** `import(spec)`, or an error saying how to install what it needs. */
async function importOrHint(spec) {
  try {
    return await import(spec);
  } catch (e) {
    if (e.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    throw new Error(`${e.message}: run \`npm ci\` in hosts/node first (jco and semver, which transpiling the component needs)`);
  }
}

/** Transpiles `component` into `out` (replaced whole); returns its version. */
export async function build(component = distComponent(), out = join(HERE, 'component')) {
  const bytes = readFileSync(component);
  // Imported here, not at the top: without hosts/node/node_modules the
  // message names the missing step instead of a bare ERR_MODULE_NOT_FOUND.
  const { checkVersion } = await importOrHint('./version.js');
  const { transpile } = await importOrHint('@bytecodealliance/jco');
  const { files, exports } = await transpile(bytes, { name: NAME, instantiation: 'async', quiet: true });
  const names = exports.map(([name]) => name);
  const version = checkVersion(names);
  const tmp = `${out}.tmp${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(tmp, file)), { recursive: true });
    writeFileSync(join(tmp, file), content);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  writeFileSync(join(tmp, 'component.json'), `${JSON.stringify({ version, sha256, exports: names }, null, 2)}\n`);
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  return version;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let out;
  let comp;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out') out = resolve(args[++i]);
    else comp = resolve(args[i]);
  }
  try {
    const version = await build(comp, out);
    console.error(`build.mjs: component ${version} transpiled`);
  } catch (e) {
    console.error(`build.mjs: ${e.message}`);
    process.exit(1);
  }
}
