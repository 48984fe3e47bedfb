// The canonical text of a replay result (TRACE-FORMAT "Result"), byte for
// byte the layout of the Rust tool (testkit/src/render.rs): 2-space indent, one
// step / snapshot / tag object per line, ", " and ": " inside a line,
// serde_json string escaping, END printed as "end", a trailing newline.

import { END } from './trace.mjs';

// JSON.stringify escapes exactly like serde_json for well-formed strings:
// `"` `\` \b \f \n \r \t, other controls below 0x20 as \u00xx (lowercase),
// everything else (DEL and non-ASCII included) as is.
export const jsonStr = (s) => JSON.stringify(s);

export const checkpoint = (c) => (c === END ? '"end"' : c.toString());

const option = (v) => (v === undefined || v === null ? 'null' : v.toString());

const decoder = new TextDecoder('utf-8'); // replaces invalid bytes, like from_utf8_lossy

function list(items, item) {
  if (items.length === 0) return '[]';
  return '[\n' + items.map((v) => '    ' + item(v)).join(',\n') + '\n  ]';
}

export function step(s) {
  let out =
    `{"state": ${jsonStr(s.state)}, "committed": [${s.committed.map(checkpoint).join(', ')}], ` +
    `"tags_created": [${s.tagsCreated.map(jsonStr).join(', ')}], ` +
    `"tags_deleted": [${s.tagsDeleted.map(jsonStr).join(', ')}], ` +
    `"restart_required": ${s.restartRequired}, "committed_up_to": ${s.committedUpTo === null ? 'null' : checkpoint(s.committedUpTo)}`;
  if (s.stateBytes !== null && s.stateBytes !== undefined) out += `, "state_bytes": ${s.stateBytes}`;
  if (s.error) out += `, "error": {"kind": ${jsonStr(s.error.kind)}, "message": ${jsonStr(s.error.message)}}`;
  return out + '}';
}

export function snapshot(s) {
  const committables = s.committables.map(([subtask, bytes]) => `[${subtask}, ${jsonStr(decoder.decode(bytes))}]`);
  return (
    `{"id": ${s.id}, "commit_user": ${jsonStr(s.commitUser)}, "identifier": ${checkpoint(s.identifier)}, ` +
    `"watermark": ${option(s.watermark)}, "time_ms": ${s.timeMs}, "committables": [${committables.join(', ')}]}`
  );
}

export function tag(t) {
  return (
    `{"name": ${jsonStr(t.name)}, "snapshot_id": ${t.snapshotId}, "identifier": ${checkpoint(t.identifier)}, ` +
    `"create_time_ms": ${t.createTimeMs}, "expire_time_ms": ${option(t.expireTimeMs)}}`
  );
}

export function render(result) {
  return (
    '{\n  "steps": ' +
    list(result.steps, step) +
    ',\n  "snapshots": ' +
    list(result.snapshots, snapshot) +
    ',\n  "tags": ' +
    list(result.tags, tag) +
    '\n}\n'
  );
}
