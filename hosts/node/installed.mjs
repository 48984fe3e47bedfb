// The installed npm package `sink-coordinator`, resolved the way a project
// that depends on it resolves it: from $SINK_COORDINATOR_NODE_PROJECT
// (default <repo>/target/node-package/project, made by package.sh).

import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PROJECT = process.env.SINK_COORDINATOR_NODE_PROJECT || join(REPO, 'target', 'node-package', 'project');

/** The installed package's module. */
export async function loadInstalled() {
  let entry;
  try {
    entry = createRequire(join(PROJECT, 'package.json')).resolve('sink-coordinator');
  } catch (e) {
    throw new Error(`the sink-coordinator package is not installed in ${PROJECT} (run hosts/node/package.sh): ${e.message}`);
  }
  return import(pathToFileURL(entry).href);
}

/**
 * Runs body(dir, installed) on a copy of the installed package's modules
 * (its .js files and package.json; `installed` is the package's folder) in a
 * new folder `prefix`XXXXXX inside the project, whose node_modules has the
 * package's dependencies; the folder is removed afterwards.
 */
export async function withPackageCopy(prefix, body) {
  const dir = mkdtempSync(join(PROJECT, prefix));
  try {
    const installed = join(PROJECT, 'node_modules', 'sink-coordinator');
    for (const f of readdirSync(installed).filter((f) => f.endsWith('.js') || f === 'package.json')) {
      copyFileSync(join(installed, f), join(dir, f));
    }
    return await body(dir, installed);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
