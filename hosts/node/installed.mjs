// The installed npm package `sink-coordinator`, resolved the way a project
// that depends on it resolves it: from $SINK_COORDINATOR_NODE_PROJECT
// (default <repo>/target/node-package/project, made by package.sh).

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
