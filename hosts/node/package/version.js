// The component versions this package runs, checked when the component is
// transpiled (build.mjs) and again when the package loads it, before anything
// is linked: the same range and the same message as the Rust host
// (sink_coordinator_host::artifact::COMPATIBLE_VERSIONS) and the Python
// package.

import semver from 'semver';

/**
 * The WIT package versions of `sink:coordinator` this host runs: `0.2.x`
 * from 0.2.1 on (within 0.2 versions only add; this host calls `events`,
 * added in 0.2.1; 0.2.0 is not additive over 0.1.0, whose `outcome` lacks
 * `committed-up-to` and whose writer has no `committed`).
 */
export const COMPATIBLE_VERSIONS = '>=0.2.1, <0.3.0';

import { IncompatibleComponent } from './errors.js';

/** The sorted, distinct versions of the `sink:coordinator/…@V` names among `names`. */
export function exportedVersions(names) {
  const versions = new Set();
  for (const name of names) {
    const at = name.indexOf('@');
    if (at > 0 && name.startsWith('sink:coordinator/')) versions.add(name.slice(at + 1));
  }
  return [...versions].sort();
}

/**
 * The component's version if this host runs it, else throws
 * IncompatibleComponent. `names` are the component's export names (jco's
 * `transpile` returns them; the versioned ones carry the WIT package version).
 */
export function checkVersion(names) {
  const found = exportedVersions(names);
  const wanted = `this host runs sink:coordinator ${COMPATIBLE_VERSIONS}`;
  if (found.length === 0) {
    throw new IncompatibleComponent(
      `not a sink-coordinator component: it exports no sink:coordinator interface (${wanted})`, found);
  }
  if (found.length > 1) {
    throw new IncompatibleComponent(
      `incompatible component: ${wanted}, the component exports several versions (${found.join(', ')})`, found);
  }
  // semver's range syntax separates comparators by spaces, not commas.
  // Strict: `semver.valid` also takes a leading "v", which the Rust host's
  // semver crate refuses.
  if (semver.valid(found[0]) !== found[0] || !semver.satisfies(found[0], COMPATIBLE_VERSIONS.replace(',', ''))) {
    throw new IncompatibleComponent(
      `incompatible component: ${wanted}, the component is sink:coordinator@${found[0]}`, found);
  }
  return found[0];
}
