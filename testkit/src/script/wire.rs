//! The JSON spelling of the component's values in call scripts and raw
//! results.
//!
//! Arguments are written in a self-describing form so that a host converts
//! them without knowing the WIT types: `{"u64": "N"}`, `{"s64": "N"}` and
//! `{"bytes": "HEX"}` (64-bit numbers as decimal strings, because
//! JavaScript's `JSON.parse` loses their precision), `null` for an absent
//! option, records as objects with the WIT's kebab-case field names, enums as
//! their WIT names, `u32` and `bool` as JSON numbers and booleans.
//!
//! Results come back as the host's runtime hands them out, converted
//! generically: records with kebab-case keys, 64-bit numbers as numbers or
//! decimal strings, `list<u8>` as hex, absent options as `null`.

use serde_json::{json, Map, Value};
use sink_coordinator::{
    Config, Entry, ErrorKind, FinalCommitMode, Lifecycle, Outcome, RecoveryMode, RestorePoint,
    Snapshot, Tag,
};

/// A `u64` argument.
pub fn u64_arg(n: u64) -> Value {
    json!({ "u64": n.to_string() })
}

fn s64_arg(n: i64) -> Value {
    json!({ "s64": n.to_string() })
}

/// A `list<u8>` argument.
pub fn bytes_arg(b: &[u8]) -> Value {
    json!({ "bytes": to_hex(b) })
}

/// An `option<T>` argument.
pub fn option_arg<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
    v.map_or(Value::Null, f)
}

/// A `list<list<u8>>` argument.
pub fn committables_arg<B: AsRef<[u8]>>(c: impl IntoIterator<Item = B>) -> Value {
    Value::Array(c.into_iter().map(|b| bytes_arg(b.as_ref())).collect())
}

/// An `option<s64>` watermark argument.
pub fn watermark_arg(w: Option<i64>) -> Value {
    option_arg(w, s64_arg)
}

/// The `config` record.
pub fn config_arg(c: &Config) -> Value {
    json!({
        "parallelism": c.parallelism,
        "commit-user": c.commit_user,
        "checkpointing": c.checkpointing,
        "final-commit": match c.final_commit {
            FinalCommitMode::OnCheckpoint => "on-checkpoint",
            FinalCommitMode::OnEndInput => "on-end-input",
        },
        "force-create-snapshot": c.force_create_snapshot,
        "savepoint-auto-tag": c.savepoint_auto_tag,
        "tag-time-retained-ms": option_arg(c.tag_time_retained_ms, u64_arg),
        "recovery": match c.recovery {
            RecoveryMode::Restart => "restart",
            RecoveryMode::Continue => "continue",
        },
    })
}

/// The `option<restore-point>` argument.
pub fn restore_arg(r: Option<&RestorePoint>) -> Value {
    option_arg(r, |r| {
        json!({
            "checkpoint": u64_arg(r.checkpoint),
            "state": bytes_arg(&r.state),
            "finished-subtasks": r.finished_subtasks,
        })
    })
}

/// The `entry` record.
pub fn entry_arg(e: &Entry) -> Value {
    json!({
        "checkpoint": u64_arg(e.checkpoint),
        "committables": committables_arg(&e.committables),
        "watermark": watermark_arg(e.watermark),
        "savepoint": e.savepoint,
    })
}

/// Lowercase hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a raw result could not be read: names the field.
pub type WireResult<T> = Result<T, String>;

fn from_hex(s: &str) -> WireResult<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(format!("{s:?} is not hex")),
    };
    if !s.len().is_multiple_of(2) {
        return Err(format!("{s:?} has an odd number of hex digits"));
    }
    s.as_bytes()
        .chunks(2)
        .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

fn field<'v>(v: &'v Value, name: &str) -> WireResult<&'v Value> {
    v.as_object()
        .and_then(|o: &Map<String, Value>| o.get(name))
        .ok_or_else(|| format!("no field {name:?} in {v}"))
}

fn number<T: TryFrom<i128> + std::str::FromStr>(v: &Value) -> WireResult<T> {
    let parsed = match v {
        Value::Number(n) => n
            .as_u64()
            .map(i128::from)
            .or_else(|| n.as_i64().map(i128::from))
            .and_then(|n| T::try_from(n).ok()),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| format!("{v} is not a number of the expected range"))
}

fn option<T>(v: &Value, f: impl FnOnce(&Value) -> WireResult<T>) -> WireResult<Option<T>> {
    if v.is_null() {
        Ok(None)
    } else {
        f(v).map(Some)
    }
}

fn list<T>(v: &Value, f: impl FnMut(&Value) -> WireResult<T>) -> WireResult<Vec<T>> {
    v.as_array()
        .ok_or_else(|| format!("{v} is not a list"))?
        .iter()
        .map(f)
        .collect()
}

fn string(v: &Value) -> WireResult<String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{v} is not a string"))
}

fn boolean(v: &Value) -> WireResult<bool> {
    v.as_bool().ok_or_else(|| format!("{v} is not a bool"))
}

/// A returned `u64`.
pub fn u64_of(v: &Value) -> WireResult<u64> {
    number(v)
}

/// A returned `option<u64>`.
pub fn opt_u64_of(v: &Value) -> WireResult<Option<u64>> {
    option(v, number)
}

/// A returned `list<u8>` (hex).
pub fn bytes_of(v: &Value) -> WireResult<Vec<u8>> {
    from_hex(v.as_str().ok_or_else(|| format!("{v} is not hex bytes"))?)
}

/// A returned `lifecycle`.
pub fn lifecycle_of(v: &Value) -> WireResult<Lifecycle> {
    [
        Lifecycle::Created,
        Lifecycle::Restoring,
        Lifecycle::Running,
        Lifecycle::Closed,
        Lifecycle::Failed,
    ]
    .into_iter()
    .find(|l| v.as_str() == Some(l.name()))
    .ok_or_else(|| format!("{v} is not a lifecycle state"))
}

/// A returned `error-kind`.
pub fn error_kind_of(v: &Value) -> WireResult<ErrorKind> {
    [
        ErrorKind::Declined,
        ErrorKind::Storage,
        ErrorKind::IllegalState,
        ErrorKind::InvalidEvent,
        ErrorKind::InvalidConfig,
        ErrorKind::CorruptState,
    ]
    .into_iter()
    .find(|k| v.as_str() == Some(k.name()))
    .ok_or_else(|| format!("{v} is not an error kind"))
}

/// A returned `outcome`.
pub fn outcome_of(v: &Value) -> WireResult<Outcome> {
    Ok(Outcome {
        state: lifecycle_of(field(v, "state")?)?,
        committed: list(field(v, "committed")?, number)?,
        tags_created: list(field(v, "tags-created")?, string)?,
        tags_deleted: list(field(v, "tags-deleted")?, string)?,
        restart_required: boolean(field(v, "restart-required")?)?,
        committed_up_to: opt_u64_of(field(v, "committed-up-to")?)?,
    })
}

/// A returned `entry`.
pub fn entry_of(v: &Value) -> WireResult<Entry> {
    Ok(Entry {
        checkpoint: number(field(v, "checkpoint")?)?,
        committables: list(field(v, "committables")?, bytes_of)?.into(),
        watermark: option(field(v, "watermark")?, number)?,
        savepoint: boolean(field(v, "savepoint")?)?,
    })
}

/// A returned `snapshot`.
pub fn snapshot_of(v: &Value) -> WireResult<Snapshot> {
    let committable = |c: &Value| -> WireResult<(u32, Vec<u8>)> {
        match c.as_array().map(Vec::as_slice) {
            Some([subtask, bytes]) => Ok((number(subtask)?, bytes_of(bytes)?)),
            _ => Err(format!("{c} is not a (subtask, bytes) pair")),
        }
    };
    Ok(Snapshot {
        id: number(field(v, "id")?)?,
        commit_user: string(field(v, "commit-user")?)?,
        identifier: number(field(v, "identifier")?)?,
        watermark: option(field(v, "watermark")?, number)?,
        time_ms: number(field(v, "time-ms")?)?,
        committables: list(field(v, "committables")?, committable)?,
    })
}

/// A returned `tag`.
pub fn tag_of(v: &Value) -> WireResult<Tag> {
    Ok(Tag {
        name: string(field(v, "name")?)?,
        snapshot_id: number(field(v, "snapshot-id")?)?,
        identifier: number(field(v, "identifier")?)?,
        create_time_ms: number(field(v, "create-time-ms")?)?,
        expire_time_ms: option(field(v, "expire-time-ms")?, number)?,
    })
}

/// A returned `list<T>`.
pub fn list_of<T>(v: &Value, f: impl FnMut(&Value) -> WireResult<T>) -> WireResult<Vec<T>> {
    list(v, f)
}

/// A returned `option<T>`.
pub fn option_of<T>(v: &Value, f: impl FnOnce(&Value) -> WireResult<T>) -> WireResult<Option<T>> {
    option(v, f)
}

/// An `outcome` in the result form (what a host prints).
pub fn outcome_value(o: &Outcome) -> Value {
    json!({
        "state": o.state.name(),
        "committed": o.committed,
        "tags-created": o.tags_created,
        "tags-deleted": o.tags_deleted,
        "restart-required": o.restart_required,
        "committed-up-to": o.committed_up_to,
    })
}

/// An `entry` in the result form.
pub fn entry_value(e: &Entry) -> Value {
    json!({
        "checkpoint": e.checkpoint,
        "committables": e.committables.iter().map(to_hex).collect::<Vec<_>>(),
        "watermark": e.watermark,
        "savepoint": e.savepoint,
    })
}

/// A `snapshot` in the result form.
pub fn snapshot_value(s: &Snapshot) -> Value {
    let committables: Vec<Value> = s
        .committables
        .iter()
        .map(|(subtask, c)| json!([subtask, to_hex(c)]))
        .collect();
    json!({
        "id": s.id,
        "commit-user": s.commit_user,
        "identifier": s.identifier,
        "watermark": s.watermark,
        "time-ms": s.time_ms,
        "committables": committables,
    })
}

/// A `tag` in the result form.
pub fn tag_value(t: &Tag) -> Value {
    json!({
        "name": t.name,
        "snapshot-id": t.snapshot_id,
        "identifier": t.identifier,
        "create-time-ms": t.create_time_ms,
        "expire-time-ms": t.expire_time_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        assert_eq!(
            from_hex(&to_hex(&[0, 0xab, 0xff])).unwrap(),
            vec![0, 0xab, 0xff]
        );
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
    }

    #[test]
    fn numbers_come_as_numbers_or_strings() {
        assert_eq!(u64_of(&json!(u64::MAX)).unwrap(), u64::MAX);
        assert_eq!(u64_of(&json!("18446744073709551615")).unwrap(), u64::MAX);
        assert!(u64_of(&json!(-1)).is_err());
        assert!(u64_of(&json!(1.5)).is_err());
    }

    #[test]
    fn an_entry_round_trips() {
        let e = Entry {
            checkpoint: 7,
            committables: vec![vec![1, 2]].into(),
            watermark: Some(-3),
            savepoint: true,
        };
        // The host hands an argument back in its result form.
        let v = entry_arg(&e);
        let back = json!({
            "checkpoint": v["checkpoint"]["u64"],
            "committables": [v["committables"][0]["bytes"]],
            "watermark": v["watermark"]["s64"],
            "savepoint": true,
        });
        assert_eq!(entry_of(&back).unwrap(), e);
        assert!(entry_of(&json!({"checkpoint": 1})).is_err());
    }
}
