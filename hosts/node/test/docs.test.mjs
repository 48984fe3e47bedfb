// The examples of docs/hosts/node.md (through the installed npm package) and
// docs/hosts/core-only.md (plain WebAssembly on the committed component) run
// and print what the pages say. Run by `make hosts-test` (node --test).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { PROJECT, REPO } from '../installed.mjs';

/** The first ```js block of a page's "## Minimal example" section. */
function example(page) {
  const text = readFileSync(join(REPO, 'docs', 'hosts', page), 'utf8');
  return /## Minimal example\n[\s\S]*?```js\n([\s\S]*?)```/.exec(text)[1];
}

test('docs/hosts/node.md: the example runs in a project with the package installed', () => {
  const file = join(PROJECT, 'docs-node-example.mjs');
  writeFileSync(file, example('node.md'));
  assert.equal(execFileSync(process.execPath, [file], { cwd: PROJECT, encoding: 'utf8' }), '[ 1n ] 1n file-1.parquet\n');
});

test('docs/hosts/core-only.md: the plain WebAssembly example runs on the committed component', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sink-coordinator-core-only-'));
  try {
    const file = join(dir, 'core-only.mjs');
    writeFileSync(file, example('core-only.md'));
    const component = join(REPO, 'dist', 'sink-coordinator-0.2.10.wasm');
    assert.equal(execFileSync(process.execPath, [file, component], { cwd: dir, encoding: 'utf8' }), 'created -> running\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the package's TypeScript declarations type-check the example (tsc --strict)", () => {
  const file = join(PROJECT, 'docs-node-example.ts');
  writeFileSync(file, example('node.md'));
  const tsc = join(REPO, 'hosts', 'node', 'node_modules', 'typescript', 'bin', 'tsc');
  const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', file];
  execFileSync(process.execPath, [tsc, ...args], { cwd: PROJECT, encoding: 'utf8' });
});
