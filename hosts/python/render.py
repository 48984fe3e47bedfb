"""The canonical text of a replay result (TRACE-FORMAT "Result"), byte for
byte the layout of the Rust tool (testkit/src/render.rs): 2-space indent, one
step / snapshot / tag object per line, ", " and ": " inside a line,
serde_json string escaping, END printed as "end", a trailing newline."""

from __future__ import annotations

import json
from typing import Any, Callable, List

from tracefile import END


def json_str(s: str) -> str:
    # With ensure_ascii=False, json.dumps escapes exactly like serde_json:
    # `"` `\` \b \f \n \r \t, other controls below 0x20 as \u00xx (lowercase),
    # everything else (DEL and non-ASCII included) as is.
    return json.dumps(s, ensure_ascii=False)


def checkpoint(c: int) -> str:
    return '"end"' if c == END else str(c)


def option(v: Any) -> str:
    return "null" if v is None else str(v)


def _list(items: List[Any], item: Callable[[Any], str]) -> str:
    if not items:
        return "[]"
    return "[\n" + ",\n".join("    " + item(v) for v in items) + "\n  ]"


def step(s: dict) -> str:
    out = (
        f'{{"state": {json_str(s["state"])}, "committed": [{", ".join(checkpoint(c) for c in s["committed"])}], '
        f'"tags_created": [{", ".join(json_str(t) for t in s["tags_created"])}], '
        f'"tags_deleted": [{", ".join(json_str(t) for t in s["tags_deleted"])}], '
        f'"restart_required": {"true" if s["restart_required"] else "false"}, '
        f'"committed_up_to": {"null" if s["committed_up_to"] is None else checkpoint(s["committed_up_to"])}'
    )
    if s.get("state_bytes") is not None:
        out += f', "state_bytes": {s["state_bytes"]}'
    if s.get("error") is not None:
        kind, message = s["error"]
        out += f', "error": {{"kind": {json_str(kind)}, "message": {json_str(message)}}}'
    return out + "}"


def snapshot(s: Any) -> str:
    committables = ", ".join(
        f"[{subtask}, {json_str(bytes(data).decode('utf-8', errors='replace'))}]" for subtask, data in s.committables
    )
    return (
        f'{{"id": {s.id}, "commit_user": {json_str(getattr(s, "commit-user"))}, '
        f'"identifier": {checkpoint(s.identifier)}, "watermark": {option(s.watermark)}, '
        f'"time_ms": {getattr(s, "time-ms")}, "committables": [{committables}]}}'
    )


def tag(t: Any) -> str:
    return (
        f'{{"name": {json_str(t.name)}, "snapshot_id": {getattr(t, "snapshot-id")}, '
        f'"identifier": {checkpoint(t.identifier)}, "create_time_ms": {getattr(t, "create-time-ms")}, '
        f'"expire_time_ms": {option(getattr(t, "expire-time-ms"))}}}'
    )


def render(result: dict) -> str:
    return (
        '{\n  "steps": '
        + _list(result["steps"], step)
        + ',\n  "snapshots": '
        + _list(result["snapshots"], snapshot)
        + ',\n  "tags": '
        + _list(result["tags"], tag)
        + "\n}\n"
    )


def render_states(states: List[dict]) -> str:
    return "".join(
        f'{{"step": {s["step"]}, "instance": {json_str(s["instance"])}, "checkpoint": {checkpoint(s["checkpoint"])}, '
        f'"state_hex": "{s["hex"]}"}}\n'
        for s in states
    )
