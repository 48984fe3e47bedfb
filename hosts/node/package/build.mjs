#!/usr/bin/env node
// Builds the package's component/ and core/ directories from the repository's
// committed artifact (dist/sink-coordinator-<WIT version>.wasm, or the file
// given): component/ is its transpilation by jco (`--instantiation async`,
// TypeScript declarations) and component.json (version, sha256, export
// names), the fallback runtime; core/ is its core module (the default
// runtime, core.js), the committed dist/…<version>.core.wasm beside it,
// which must be the component's own core module, and core.json. A component
// of a version the package does not run is refused (IncompatibleComponent). Run by
// `npm pack` (prepack) and hosts/node/package.sh; jco and semver come from
// hosts/node/node_modules (run `npm ci` in hosts/node first; build.mjs says so
// when they are missing).
//
//   node hosts/node/package/build.mjs [COMPONENT.wasm] [--out DIR]
//
// --out DIR writes DIR (the jco output) and DIR/../core.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

function readLeb(bytes, pos) {
  let result = 0;
  let shift = 0;
  for (;;) {
    if (pos >= bytes.length) throw new Error('the component ends inside a section header');
    const b = bytes[pos++];
    result += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7;
  }
}

/**
 * The coordinator's core module inside a component binary: its largest
 * core-module section (id 1). wit-component writes it first, then two tiny
 * shim and fixup modules that only a component runtime needs.
 */
export function extractCoreModule(component) {
  const header = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
  if (!header.every((b, i) => component[i] === b)) throw new Error('not a component binary (expected \\0asm, version 0x0d, layer 1)');
  let best = null;
  let pos = 8;
  while (pos < component.length) {
    const id = component[pos++];
    let size;
    [size, pos] = readLeb(component, pos);
    if (pos + size > component.length) throw new Error('the component ends inside a section');
    if (id === 0x01 && (best === null || size > best.length)) best = component.subarray(pos, pos + size);
    pos += size;
  }
  if (best === null) throw new Error('the component holds no core module');
  return best;
}

/**
 * The core module for `component`: its committed sibling X.core.wasm when
 * there is one (what the other core hosts load), else extracted; the
 * sibling must be the component's own core module.
 */
function coreModule(component, bytes) {
  const extracted = extractCoreModule(bytes);
  const sibling = component.replace(/\.wasm$/, '.core.wasm');
  if (sibling !== component && existsSync(sibling)) {
    if (!Buffer.from(extracted).equals(readFileSync(sibling))) {
      throw new Error(`${sibling} is not the core module of ${component}`);
    }
  }
  return extracted;
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

/**
 * Transpiles `component` into `out` and writes its core module into
 * `coreOut` (each replaced whole); returns its version.
 */
export async function build(component = distComponent(), out = join(HERE, 'component'), coreOut = join(dirname(out), 'core')) {
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
  const core = coreModule(component, bytes);
  const coreTmp = `${coreOut}.tmp${process.pid}`;
  rmSync(coreTmp, { recursive: true, force: true });
  mkdirSync(coreTmp, { recursive: true });
  writeFileSync(join(coreTmp, 'sink-coordinator.core.wasm'), core);
  const coreSha256 = createHash('sha256').update(core).digest('hex');
  // sha256 stays the component's: Runtime.sha256 names the artifact the
  // package was built from, whichever runtime runs it.
  writeFileSync(join(coreTmp, 'core.json'), `${JSON.stringify({ version, sha256, coreSha256 }, null, 2)}\n`);
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  rmSync(coreOut, { recursive: true, force: true });
  renameSync(coreTmp, coreOut);
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
