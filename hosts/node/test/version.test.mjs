// The version check: building the package from the committed 0.1.0 artifact
// is refused with one message naming the range and the version found
// (package/build.mjs), and the installed package checks its component when it
// loads it. Run by `make hosts-test` (node --test).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { build, REPO } from '../package/build.mjs';
import { IncompatibleComponent } from '../package/errors.js';
import { checkVersion } from '../package/version.js';

const MESSAGE_0_1 =
  'incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, the component is sink:coordinator@0.1.0';

test('the 0.1.0 artifact is refused with the range and the version', async () => {
  const out = mkdtempSync(join(tmpdir(), 'sink-coordinator-version-'));
  try {
    await assert.rejects(build(join(REPO, 'dist', 'sink-coordinator-0.1.0.wasm'), join(out, 'component')), (e) => {
      assert.ok(e instanceof IncompatibleComponent);
      assert.equal(e.message, MESSAGE_0_1);
      assert.deepEqual(e.found, ['0.1.0']);
      return true;
    });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('names without the interfaces, several versions, other versions', () => {
  assert.throws(() => checkVersion(['foo:bar/baz@0.2.0']), {
    message: 'not a sink-coordinator component: it exports no sink:coordinator interface (this host runs sink:coordinator >=0.2.1, <0.3.0)',
  });
  assert.throws(() => checkVersion(['sink:coordinator/table@0.1.0', 'sink:coordinator/writer@0.2.1']), /several versions \(0.1.0, 0.2.1\)/);
  for (const v of ['0.2.0', '0.3.0', '1.0.0', '0.2.1-rc.1', 'v0.2.1', 'x']) {
    assert.throws(() => checkVersion([`sink:coordinator/coordinator@${v}`]), (e) => e instanceof IncompatibleComponent && e.message.endsWith(`sink:coordinator@${v}`));
  }
  assert.equal(checkVersion(['coordinator', 'sink:coordinator/coordinator@0.2.1']), '0.2.1');
  assert.equal(checkVersion(['sink:coordinator/coordinator@0.2.9']), '0.2.9');
});
