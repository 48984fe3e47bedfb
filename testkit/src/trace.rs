//! Parsing and validation of replay traces (TRACE-FORMAT v2, writer steps
//! included).
//!
//! The document is read into a small JSON tree that keeps object fields in
//! order and rejects duplicate keys, then checked rule by rule into typed
//! [`Trace`] steps. A trace breaking any rule is [`Malformed`], with a message
//! that names the step index and the field (and, for JSON syntax errors, the
//! line and column).
//!
//! Only the *shape* is checked here: values that fit their WIT types but break
//! SEMANTICS (parallelism 0, a subtask out of range, an empty commit user) are
//! passed on so that the coordinator reports them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use sink_coordinator::{Config, Entry, FinalCommitMode, RecoveryMode, END, MAX_CHECKPOINT};

use sink_coordinator_host::storage::{CallKind, Fault, FaultMode};

/// The instance name of steps without `instance`.
pub const DEFAULT_INSTANCE: &str = "main";

/// A validated trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The trace's `config`, with defaults filled in.
    pub config: Config,
    pub clock_start_ms: u64,
    pub clock_step_ms: u64,
    pub steps: Vec<Step>,
}

/// One step: an operation on the instance named `instance`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub instance: String,
    pub op: Op,
}

/// The operations of TRACE-FORMAT, with defaults applied and `start` /
/// `failover` configurations already merged over the trace's `config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Start {
        config: Config,
    },
    Event {
        subtask: u32,
        attempt: u32,
        entry: Entry,
    },
    Checkpoint {
        checkpoint: u64,
    },
    Complete {
        checkpoint: u64,
    },
    Abort {
        checkpoint: u64,
    },
    ResetSubtask {
        subtask: u32,
        checkpoint: Option<u64>,
    },
    Restored {
        subtask: u32,
        attempt: u32,
        checkpoint: u64,
        entries: Vec<Entry>,
    },
    /// `state` is the decoded `state_hex`; `finished_subtasks` is empty when
    /// `checkpoint` is `None` (the field is ignored then).
    Failover {
        checkpoint: Option<u64>,
        finished_subtasks: Vec<u32>,
        config: Config,
        state: Option<Vec<u8>>,
    },
    Close,
    Clock {
        ms: u64,
    },
    StorageFault {
        call: CallKind,
        fault: Fault,
    },
    // Writer steps (TRACE-FORMAT "Writer steps"). Writers are named by
    // (step instance, subtask) and belong to the replayer.
    /// `report(entry.checkpoint, …)` on the writer; `entry.checkpoint` is
    /// never END.
    Write {
        subtask: u32,
        entry: Entry,
        send: bool,
    },
    /// `end-input(…)` on the writer.
    EndInput {
        subtask: u32,
        committables: Vec<Vec<u8>>,
        watermark: Option<i64>,
        send: bool,
    },
    /// Delivers the oldest `count` events of the writer's outbox (`None`: all).
    Send {
        subtask: u32,
        count: Option<u64>,
    },
    /// `committed(u)` on the writer(s); `subtask` `None`: every writer of
    /// the instance, in subtask order. `checkpoint` `None`: `u` is the named
    /// coordinator's committed-up-to (nothing happens while it is none).
    WriterCommitted {
        subtask: Option<u32>,
        checkpoint: Option<u64>,
    },
    /// `subtask` `None`: every writer of the instance, in subtask order.
    WriterAbort {
        subtask: Option<u32>,
        checkpoint: u64,
    },
    WriterSnapshot {
        subtask: Option<u32>,
        checkpoint: u64,
    },
    /// `attempt` has its default (previous attempt + 1, or 0 for a writer
    /// that did not exist) already applied.
    WriterRestore {
        subtask: u32,
        checkpoint: Option<u64>,
        attempt: u32,
        send: bool,
    },
}

impl Op {
    /// The `op` string of this operation.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Start { .. } => "start",
            Op::Event { .. } => "event",
            Op::Checkpoint { .. } => "checkpoint",
            Op::Complete { .. } => "complete",
            Op::Abort { .. } => "abort",
            Op::ResetSubtask { .. } => "reset_subtask",
            Op::Restored { .. } => "restored",
            Op::Failover { .. } => "failover",
            Op::Close => "close",
            Op::Clock { .. } => "clock",
            Op::StorageFault { .. } => "storage_fault",
            Op::Write { .. } => "write",
            Op::EndInput { .. } => "end_input",
            Op::Send { .. } => "send",
            Op::WriterCommitted { .. } => "writer_committed",
            Op::WriterAbort { .. } => "writer_abort",
            Op::WriterSnapshot { .. } => "writer_snapshot",
            Op::WriterRestore { .. } => "writer_restore",
        }
    }

    /// Whether this is a writer step (TRACE-FORMAT "Writer steps").
    pub fn is_writer_op(&self) -> bool {
        matches!(
            self,
            Op::Write { .. }
                | Op::EndInput { .. }
                | Op::Send { .. }
                | Op::WriterCommitted { .. }
                | Op::WriterAbort { .. }
                | Op::WriterSnapshot { .. }
                | Op::WriterRestore { .. }
        )
    }
}

/// Why a trace is malformed, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// The step index, when the problem is inside `steps[i]`.
    pub step: Option<usize>,
    /// The step's `op`, when known.
    pub op: Option<String>,
    /// The field path, e.g. `entries[1].checkpoint` (inside the step) or
    /// `config.parallelism` (at the top level).
    pub field: Option<String>,
    pub message: String,
}

impl Malformed {
    fn new(message: impl Into<String>) -> Self {
        Malformed {
            step: None,
            op: None,
            field: None,
            message: message.into(),
        }
    }

    fn at(field: &str, message: impl Into<String>) -> Self {
        Malformed {
            field: Some(field.to_string()),
            ..Malformed::new(message)
        }
    }

    /// Places an error raised while checking step `index`.
    fn in_step(mut self, index: usize, op: Option<&str>) -> Self {
        self.step = Some(index);
        if self.op.is_none() {
            self.op = op.map(str::to_string);
        }
        self
    }
}

impl fmt::Display for Malformed {
    /// One line of at most about a kilobyte, however large the echoed input
    /// (a field name, an op, an instance name) was.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("malformed trace: ")?;
        let mut place = Vec::new();
        if let Some(step) = self.step {
            match &self.op {
                Some(op) => place.push(format!("step {step} (op {:?})", clip(op, 100))),
                None => place.push(format!("step {step}")),
            }
        }
        if let Some(field) = &self.field {
            place.push(format!("field {:?}", clip(field, 200)));
        }
        if !place.is_empty() {
            write!(f, "{}: ", place.join(", "))?;
        }
        f.write_str(&clip_middle(&self.message, 400, 200))
    }
}

/// At most `max` bytes of `s` (cut on a char boundary, marked when cut):
/// messages echo input, and input may be huge.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

/// `s` with its middle cut out when longer than `head + tail` bytes.
fn clip_middle(s: &str, head: usize, tail: usize) -> String {
    if s.len() <= head + tail + 50 {
        return s.to_string();
    }
    let mut h = head;
    while !s.is_char_boundary(h) {
        h -= 1;
    }
    let mut t = s.len() - tail;
    while !s.is_char_boundary(t) {
        t += 1;
    }
    format!("{} ... ({} bytes omitted) ... {}", &s[..h], t - h, &s[t..])
}

impl std::error::Error for Malformed {}

// ---------------------------------------------------------------------------
// A JSON tree that keeps field order and rejects duplicate keys
// ---------------------------------------------------------------------------

/// A JSON value. serde_json's own `Value` silently keeps the last of two
/// equal keys; a trace with an ambiguous step must be rejected instead.
#[derive(Clone, Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    /// Every JSON integer that fits i64 or u64.
    Int(i128),
    /// Fractions and exponents, and integers beyond i128, with the literal
    /// as written (clipped), once [`attach_literals`] has run.
    Float(f64, Option<String>),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Int(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Float(v, None))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields: Vec<(String, Json)> = Vec::new();
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                // serde_json appends the line and column to this message.
                return Err(A::Error::custom(format!(
                    "duplicate field {:?}",
                    clip(&key, 100)
                )));
            }
            let value = map.next_value()?;
            fields.push((key, value));
        }
        Ok(Json::Object(fields))
    }
}

impl Json {
    /// A short description of a value for error messages.
    fn describe(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Int(i) => i.to_string(),
            Json::Float(_, Some(lit)) if is_integer_literal(lit) => {
                format!("the integer {lit}, which is out of range")
            }
            Json::Float(_, Some(lit)) => format!("the non-integer number {lit}"),
            Json::Float(x, None) => format!("the non-integer number {x}"),
            Json::Str(s) => {
                let shown: String = s.chars().take(40).collect();
                let ellipsis = if shown.len() < s.len() { "..." } else { "" };
                format!("the string {:?}{ellipsis}", shown)
            }
            Json::Array(_) => "a list".into(),
            Json::Object(_) => "an object".into(),
        }
    }
}

// ---------------------------------------------------------------------------
// Field access with exact errors
// ---------------------------------------------------------------------------

/// An object being checked; `path` is the prefix of its fields' names.
struct Obj<'a> {
    fields: &'a [(String, Json)],
    path: String,
}

impl<'a> Obj<'a> {
    fn new(value: &'a Json, path: &str, what: &str) -> Result<Self, Malformed> {
        match value {
            Json::Object(fields) => Ok(Obj {
                fields,
                path: path.to_string(),
            }),
            other => Err(Malformed::at_opt(
                path,
                format!("expected {what} (an object), got {}", other.describe()),
            )),
        }
    }

    fn field_path(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        }
    }

    /// Rejects every field not in `allowed`.
    fn only(&self, allowed: &[&str], context: &str) -> Result<(), Malformed> {
        for (name, _) in self.fields {
            if !allowed.contains(&name.as_str()) {
                return Err(Malformed::at(
                    &self.field_path(name),
                    format!(
                        "unknown field {:?} {context} (allowed: {})",
                        clip(name, 100),
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn get(&self, name: &str) -> Option<&'a Json> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    fn required(&self, name: &str) -> Result<Field<'a>, Malformed> {
        match self.get(name) {
            Some(value) => Ok(Field {
                value,
                path: self.field_path(name),
            }),
            None => Err(Malformed::at(
                &self.field_path(name),
                format!("missing required field {name:?}"),
            )),
        }
    }

    fn optional(&self, name: &str) -> Option<Field<'a>> {
        self.get(name).map(|value| Field {
            value,
            path: self.field_path(name),
        })
    }
}

impl Malformed {
    /// `at` for a path that may be empty (the document itself).
    fn at_opt(path: &str, message: impl Into<String>) -> Self {
        if path.is_empty() {
            Malformed::new(message)
        } else {
            Malformed::at(path, message)
        }
    }
}

/// One field's value and its path, with typed accessors.
struct Field<'a> {
    value: &'a Json,
    path: String,
}

impl<'a> Field<'a> {
    fn err(&self, expected: &str) -> Malformed {
        Malformed::at(
            &self.path,
            format!("expected {expected}, got {}", self.value.describe()),
        )
    }

    fn int_in(&self, lo: i128, hi: i128, expected: &str) -> Result<i128, Malformed> {
        match self.value {
            Json::Int(i) if (lo..=hi).contains(i) => Ok(*i),
            _ => Err(self.err(expected)),
        }
    }

    fn u32(&self) -> Result<u32, Malformed> {
        let v = self.int_in(0, u32::MAX.into(), "an integer in 0..=4294967295")?;
        u32::try_from(v).map_err(|_| self.err("an integer in 0..=4294967295"))
    }

    fn u64(&self) -> Result<u64, Malformed> {
        let v = self.int_in(0, u64::MAX.into(), "an integer in 0..=18446744073709551615")?;
        u64::try_from(v).map_err(|_| self.err("an integer in 0..=18446744073709551615"))
    }

    fn i64(&self) -> Result<i64, Malformed> {
        let expected = "an integer in -9223372036854775808..=9223372036854775807";
        let v = self.int_in(i64::MIN.into(), i64::MAX.into(), expected)?;
        i64::try_from(v).map_err(|_| self.err(expected))
    }

    fn bool(&self) -> Result<bool, Malformed> {
        match self.value {
            Json::Bool(b) => Ok(*b),
            _ => Err(self.err("true or false")),
        }
    }

    fn str(&self) -> Result<&'a str, Malformed> {
        match self.value {
            Json::Str(s) => Ok(s),
            _ => Err(self.err("a string")),
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.value, Json::Null)
    }

    fn array(&self) -> Result<Vec<Field<'a>>, Malformed> {
        match self.value {
            Json::Array(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, value)| Field {
                    value,
                    path: format!("{}[{i}]", self.path),
                })
                .collect()),
            _ => Err(self.err("a list")),
        }
    }

    fn object(&self, what: &str) -> Result<Obj<'a>, Malformed> {
        Obj::new(self.value, &self.path, what)
    }

    /// A checkpoint id: `0 ..= 2^63-2`, or `"end"` where `end_allowed`.
    fn checkpoint(&self, end_allowed: bool) -> Result<u64, Malformed> {
        let expected = if end_allowed {
            "a checkpoint number in 0..=9223372036854775806 or \"end\""
        } else {
            "a checkpoint number in 0..=9223372036854775806 (\"end\" is not allowed here)"
        };
        match self.value {
            Json::Int(i) if (0..=i128::from(MAX_CHECKPOINT)).contains(i) => {
                u64::try_from(*i).map_err(|_| self.err(expected))
            }
            Json::Str(s) if end_allowed && s == "end" => Ok(END),
            _ => Err(self.err(expected)),
        }
    }

    /// A checkpoint number or `null` (never `"end"`).
    fn checkpoint_or_null(&self) -> Result<Option<u64>, Malformed> {
        if self.is_null() {
            return Ok(None);
        }
        match self.value {
            Json::Int(i) if (0..=i128::from(MAX_CHECKPOINT)).contains(i) => u64::try_from(*i)
                .map(Some)
                .map_err(|_| self.err("a checkpoint number or null")),
            _ => Err(self.err("a checkpoint number in 0..=9223372036854775806 or null")),
        }
    }
}

fn opt_u32(obj: &Obj<'_>, name: &str, default: u32) -> Result<u32, Malformed> {
    obj.optional(name).map_or(Ok(default), |f| f.u32())
}

fn opt_u64(obj: &Obj<'_>, name: &str, default: u64) -> Result<u64, Malformed> {
    obj.optional(name).map_or(Ok(default), |f| f.u64())
}

fn opt_bool(obj: &Obj<'_>, name: &str, default: bool) -> Result<bool, Malformed> {
    obj.optional(name).map_or(Ok(default), |f| f.bool())
}

/// A watermark: an i64 or `null`; omitted means `null`.
fn opt_watermark(obj: &Obj<'_>) -> Result<Option<i64>, Malformed> {
    match obj.optional("watermark") {
        None => Ok(None),
        Some(f) if f.is_null() => Ok(None),
        Some(f) => f.i64().map(Some).map_err(|_| {
            f.err("a watermark (an integer in -9223372036854775808..=9223372036854775807) or null")
        }),
    }
}

/// Committables: a list of strings (default `[]`); each string's UTF-8 bytes.
fn opt_committables(obj: &Obj<'_>) -> Result<Vec<Vec<u8>>, Malformed> {
    match obj.optional("committables") {
        None => Ok(Vec::new()),
        Some(f) => f
            .array()?
            .iter()
            .map(|c| c.str().map(|s| s.as_bytes().to_vec()))
            .collect(),
    }
}

fn opt_u32_list(obj: &Obj<'_>, name: &str) -> Result<Vec<u32>, Malformed> {
    match obj.optional(name) {
        None => Ok(Vec::new()),
        Some(f) => f.array()?.iter().map(Field::u32).collect(),
    }
}

// ---------------------------------------------------------------------------
// Number literals as written
// ---------------------------------------------------------------------------

/// serde_json hands integers beyond u64/i64 over as f64, which would print
/// 18446744073709551616 as "the non-integer number 18446744073709552000".
/// This pass pairs every number of the tree with its literal in the text
/// (both are in document order): an integer literal that fits i128 becomes
/// `Json::Int` (so range checks report it exactly, and `-0` is 0); any
/// other keeps its literal for messages.
fn attach_literals(doc: &mut Json, bytes: &[u8]) {
    let literals = number_literals(bytes);
    let mut next = literals.iter();
    attach(doc, bytes, &mut next);
}

fn attach(value: &mut Json, bytes: &[u8], next: &mut std::slice::Iter<'_, (usize, usize)>) {
    match value {
        Json::Int(_) => {
            next.next();
        }
        Json::Float(_, literal) => {
            let Some(&(start, end)) = next.next() else {
                return;
            };
            let text = std::str::from_utf8(&bytes[start..end]).unwrap_or("");
            if is_integer_literal(text) {
                if let Ok(i) = text.parse::<i128>() {
                    *value = Json::Int(i);
                    return;
                }
            }
            *literal = Some(clip(text, 60));
        }
        Json::Array(items) => items.iter_mut().for_each(|v| attach(v, bytes, next)),
        Json::Object(fields) => fields.iter_mut().for_each(|(_, v)| attach(v, bytes, next)),
        Json::Null | Json::Bool(_) | Json::Str(_) => {}
    }
}

/// `-?[0-9]+` (as opposed to a fraction or an exponent).
fn is_integer_literal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The byte spans of the number literals of a (valid) JSON text, in order.
fn number_literals(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                spans.push((start, i));
            }
            _ => i += 1,
        }
    }
    spans
}

// ---------------------------------------------------------------------------
// The document
// ---------------------------------------------------------------------------

const CONFIG_FIELDS: &[&str] = &[
    "parallelism",
    "commit_user",
    "checkpointing",
    "final_commit",
    "force_create_snapshot",
    "savepoint_auto_tag",
    "tag_time_retained_ms",
    "recovery",
];

/// Parses and validates a trace document.
pub fn parse(text: &str) -> Result<Trace, Malformed> {
    parse_slice(text.as_bytes())
}

/// Parses and validates a trace document given as bytes (which must be UTF-8).
pub fn parse_slice(bytes: &[u8]) -> Result<Trace, Malformed> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(Malformed::new(
            "the trace starts with a UTF-8 byte-order mark (bytes EF BB BF); JSON text must not \
             have one (RFC 8259): save the file as UTF-8 without a BOM",
        ));
    }
    let mut doc: Json = serde_json::from_slice(bytes).map_err(|e| {
        // serde_json appends " at line L column C"; say it once, up front.
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let what = text.strip_suffix(&suffix).unwrap_or(&text);
        Malformed::new(format!(
            "invalid JSON at line {}, column {}: {what}",
            e.line(),
            e.column()
        ))
    })?;
    attach_literals(&mut doc, bytes);
    let top = Obj::new(&doc, "", "a trace")?;
    top.only(
        &["config", "clock_start_ms", "clock_step_ms", "steps"],
        "at the top level",
    )?;

    let config_field = top.required("config")?;
    let config_obj = config_field.object("the configuration")?;
    config_obj.only(CONFIG_FIELDS, "in config")?;
    let base = Config::new(
        config_obj.required("parallelism")?.u32()?,
        config_obj.required("commit_user")?.str()?,
    );
    let config = apply_config(base, &config_obj)?;

    let clock_start_ms = opt_u64(&top, "clock_start_ms", 0)?;
    let clock_step_ms = opt_u64(&top, "clock_step_ms", 0)?;

    let steps_field = top.required("steps")?;
    let mut steps = Vec::new();
    // Names that have had a start or failover so far.
    let mut instances: BTreeSet<String> = BTreeSet::new();
    // Writers and kept writer state so far (writer-level steps).
    let mut writers = WriterBook::default();
    for (index, item) in steps_field.array()?.iter().enumerate() {
        let op_name = match &item.value {
            Json::Object(fields) => {
                fields
                    .iter()
                    .find(|(k, _)| k == "op")
                    .and_then(|(_, v)| match v {
                        Json::Str(s) => Some(s.as_str()),
                        _ => None,
                    })
            }
            _ => None,
        };
        let step = parse_step(item, &config, &writers).map_err(|e| e.in_step(index, op_name))?;
        let creates = matches!(step.op, Op::Start { .. } | Op::Failover { .. });
        if index == 0 && !creates {
            return Err(
                Malformed::at("op", "the first step must be \"start\" or \"failover\"")
                    .in_step(index, op_name),
            );
        }
        // Every step but start and failover needs its instance, writer steps
        // included (a writer exists only after a step that needed it).
        if !creates && !instances.contains(&step.instance) {
            return Err(Malformed::at(
                "instance",
                format!(
                    "no instance {:?} exists yet: its first step must be \"start\" or \"failover\"",
                    step.instance
                ),
            )
            .in_step(index, op_name));
        }
        writers
            .check(&step)
            .map_err(|e| e.in_step(index, op_name))?;
        writers.apply(&step);
        instances.insert(step.instance.clone());
        steps.push(step);
    }
    Ok(Trace {
        config,
        clock_start_ms,
        clock_step_ms,
        steps,
    })
}

/// Applies the optional config fields of `obj` over `config`.
fn apply_config(mut config: Config, obj: &Obj<'_>) -> Result<Config, Malformed> {
    if let Some(f) = obj.optional("parallelism") {
        config.parallelism = f.u32()?;
    }
    if let Some(f) = obj.optional("commit_user") {
        config.commit_user = f.str()?.to_string();
    }
    config.checkpointing = opt_bool(obj, "checkpointing", config.checkpointing)?;
    if let Some(f) = obj.optional("final_commit") {
        config.final_commit = match f.str() {
            Ok("on-checkpoint") => FinalCommitMode::OnCheckpoint,
            Ok("on-end-input") => FinalCommitMode::OnEndInput,
            _ => return Err(f.err("\"on-checkpoint\" or \"on-end-input\"")),
        };
    }
    config.force_create_snapshot =
        opt_bool(obj, "force_create_snapshot", config.force_create_snapshot)?;
    config.savepoint_auto_tag = opt_bool(obj, "savepoint_auto_tag", config.savepoint_auto_tag)?;
    if let Some(f) = obj.optional("tag_time_retained_ms") {
        config.tag_time_retained_ms = if f.is_null() {
            None
        } else {
            Some(
                f.u64()
                    .map_err(|_| f.err("an integer in 0..=18446744073709551615 or null"))?,
            )
        };
    }
    if let Some(f) = obj.optional("recovery") {
        config.recovery = match f.str() {
            Ok("restart") => RecoveryMode::Restart,
            Ok("continue") => RecoveryMode::Continue,
            _ => return Err(f.err("\"restart\" or \"continue\"")),
        };
    }
    Ok(config)
}

/// The optional `config` override of `start` and `failover`.
fn config_override(step: &Obj<'_>, base: &Config) -> Result<Config, Malformed> {
    match step.optional("config") {
        None => Ok(base.clone()),
        Some(f) => {
            let obj = f.object("a configuration override")?;
            obj.only(CONFIG_FIELDS, "in config")?;
            apply_config(base.clone(), &obj)
        }
    }
}

const OPS: &[&str] = &[
    "start",
    "event",
    "checkpoint",
    "complete",
    "abort",
    "reset_subtask",
    "restored",
    "failover",
    "close",
    "clock",
    "storage_fault",
    "write",
    "end_input",
    "send",
    "writer_committed",
    "writer_abort",
    "writer_snapshot",
    "writer_restore",
];

fn parse_step(item: &Field<'_>, config: &Config, writers: &WriterBook) -> Result<Step, Malformed> {
    // Field paths inside a step are relative to the step.
    let obj = match item.value {
        Json::Object(fields) => Obj {
            fields,
            path: String::new(),
        },
        other => {
            return Err(Malformed::new(format!(
                "expected a step (an object), got {}",
                other.describe()
            )))
        }
    };
    let op_name = obj.required("op")?.str()?;
    let instance = match obj.optional("instance") {
        Some(f) => f.str()?.to_string(),
        None => DEFAULT_INSTANCE.to_string(),
    };
    let fields: &[&str] = match op_name {
        "start" => &["config"],
        "event" => &[
            "subtask",
            "attempt",
            "checkpoint",
            "committables",
            "watermark",
            "savepoint",
        ],
        "checkpoint" | "complete" | "abort" => &["checkpoint"],
        "reset_subtask" => &["subtask", "checkpoint"],
        "restored" => &["subtask", "attempt", "checkpoint", "entries"],
        "failover" => &["checkpoint", "finished_subtasks", "config", "state_hex"],
        "close" => &[],
        "clock" => &["ms"],
        "storage_fault" => &["call", "mode", "skip", "count"],
        "write" => &[
            "subtask",
            "checkpoint",
            "committables",
            "watermark",
            "savepoint",
            "send",
        ],
        "end_input" => &["subtask", "committables", "watermark", "send"],
        "send" => &["subtask", "count"],
        "writer_committed" | "writer_abort" | "writer_snapshot" => &["subtask", "checkpoint"],
        "writer_restore" => &["subtask", "checkpoint", "attempt", "send"],
        other => {
            return Err(Malformed::at(
                "op",
                format!("unknown op {other:?} (expected one of: {})", OPS.join(", ")),
            ));
        }
    };
    let mut allowed = vec!["op", "instance"];
    allowed.extend_from_slice(fields);
    obj.only(&allowed, &format!("for op {op_name:?}"))?;

    let op = match op_name {
        "start" => Op::Start {
            config: config_override(&obj, config)?,
        },
        "event" => Op::Event {
            subtask: obj.required("subtask")?.u32()?,
            attempt: opt_u32(&obj, "attempt", 0)?,
            entry: parse_entry(&obj)?,
        },
        "checkpoint" => Op::Checkpoint {
            checkpoint: obj.required("checkpoint")?.checkpoint(true)?,
        },
        "complete" => Op::Complete {
            checkpoint: obj.required("checkpoint")?.checkpoint(true)?,
        },
        "abort" => Op::Abort {
            checkpoint: obj.required("checkpoint")?.checkpoint(true)?,
        },
        "reset_subtask" => Op::ResetSubtask {
            subtask: obj.required("subtask")?.u32()?,
            checkpoint: obj.required("checkpoint")?.checkpoint_or_null()?,
        },
        "restored" => {
            let subtask = obj.required("subtask")?.u32()?;
            let attempt = opt_u32(&obj, "attempt", 0)?;
            let checkpoint = obj.required("checkpoint")?.checkpoint(false)?;
            let mut entries = Vec::new();
            for item in obj.required("entries")?.array()? {
                let entry_obj = item.object("an entry")?;
                entry_obj.only(
                    &["checkpoint", "committables", "watermark", "savepoint"],
                    "in an entry",
                )?;
                entries.push(parse_entry(&entry_obj)?);
            }
            Op::Restored {
                subtask,
                attempt,
                checkpoint,
                entries,
            }
        }
        "failover" => {
            let checkpoint = obj.required("checkpoint")?.checkpoint_or_null()?;
            // Checked even when ignored (checkpoint null): a list of the wrong
            // type is still a broken trace.
            let finished = opt_u32_list(&obj, "finished_subtasks")?;
            let config = config_override(&obj, config)?;
            let state = match obj.optional("state_hex") {
                None => None,
                Some(f) => {
                    if checkpoint.is_none() {
                        return Err(Malformed::at(
                            "state_hex",
                            "\"state_hex\" needs a checkpoint number, not null",
                        ));
                    }
                    Some(decode_hex(f.str()?).map_err(|m| Malformed::at("state_hex", m))?)
                }
            };
            let finished_subtasks = if checkpoint.is_some() {
                finished
            } else {
                Vec::new()
            };
            Op::Failover {
                checkpoint,
                finished_subtasks,
                config,
                state,
            }
        }
        "close" => Op::Close,
        "clock" => Op::Clock {
            ms: obj.required("ms")?.u64()?,
        },
        "storage_fault" => {
            let call_field = obj.required("call")?;
            let call = call_field
                .str()
                .ok()
                .and_then(CallKind::parse)
                .ok_or_else(|| call_field.err("\"put\", \"get\", \"list\" or \"delete\""))?;
            let mode_field = obj.required("mode")?;
            let mode = mode_field
                .str()
                .ok()
                .and_then(FaultMode::parse)
                .ok_or_else(|| mode_field.err("\"fail\" or \"ambiguous\""))?;
            let skip = opt_u64(&obj, "skip", 0)?;
            let count = opt_u64(&obj, "count", 1)?;
            if count < 1 {
                return Err(Malformed::at("count", "a fault's count must be at least 1"));
            }
            Op::StorageFault {
                call,
                fault: Fault { skip, count, mode },
            }
        }
        "write" => Op::Write {
            subtask: obj.required("subtask")?.u32()?,
            entry: Entry {
                checkpoint: obj.required("checkpoint")?.checkpoint(false)?,
                committables: opt_committables(&obj)?,
                watermark: opt_watermark(&obj)?,
                savepoint: opt_bool(&obj, "savepoint", false)?,
            },
            send: opt_bool(&obj, "send", true)?,
        },
        "end_input" => Op::EndInput {
            subtask: obj.required("subtask")?.u32()?,
            committables: opt_committables(&obj)?,
            watermark: opt_watermark(&obj)?,
            send: opt_bool(&obj, "send", true)?,
        },
        "send" => {
            let subtask = obj.required("subtask")?.u32()?;
            let count = match obj.optional("count") {
                None => None,
                Some(f) => {
                    let count = f.u64()?;
                    if count < 1 {
                        return Err(Malformed::at(
                            "count",
                            "a send's count must be at least 1 (omit it to send the whole outbox)",
                        ));
                    }
                    Some(count)
                }
            };
            Op::Send { subtask, count }
        }
        "writer_committed" => Op::WriterCommitted {
            subtask: match obj.optional("subtask") {
                None => None,
                Some(f) => Some(f.u32()?),
            },
            checkpoint: match obj.optional("checkpoint") {
                None => None,
                Some(f) => Some(f.checkpoint(true)?),
            },
        },
        "writer_abort" | "writer_snapshot" => {
            let subtask = match obj.optional("subtask") {
                None => None,
                Some(f) => Some(f.u32()?),
            };
            let checkpoint = obj.required("checkpoint")?.checkpoint(false)?;
            match op_name {
                "writer_abort" => Op::WriterAbort {
                    subtask,
                    checkpoint,
                },
                _ => Op::WriterSnapshot {
                    subtask,
                    checkpoint,
                },
            }
        }
        "writer_restore" => {
            let subtask = obj.required("subtask")?.u32()?;
            let checkpoint = obj.required("checkpoint")?.checkpoint_or_null()?;
            let attempt = match obj.optional("attempt") {
                Some(f) => f.u32()?,
                None => writers.next_attempt(&instance, subtask)?,
            };
            Op::WriterRestore {
                subtask,
                checkpoint,
                attempt,
                send: opt_bool(&obj, "send", true)?,
            }
        }
        // Every name was matched above.
        other => return Err(Malformed::at("op", format!("unknown op {other:?}"))),
    };
    Ok(Step { instance, op })
}

/// What the writer-level steps so far have created: which writers exist
/// (with their attempt) and which writer state bytes `writer_snapshot` kept.
/// All of it follows from the steps alone: writers are created by steps and
/// never removed, whatever the calls return.
#[derive(Default)]
struct WriterBook {
    /// Every writer so far, by (instance name, subtask), and its attempt.
    attempts: BTreeMap<(String, u32), u32>,
    /// (instance name, subtask, checkpoint) of every kept writer state.
    kept: BTreeSet<(String, u32, u64)>,
}

impl WriterBook {
    /// The default attempt of a `writer_restore`: the previous writer's
    /// attempt + 1, or 0 when there was no writer.
    fn next_attempt(&self, instance: &str, subtask: u32) -> Result<u32, Malformed> {
        match self.attempts.get(&(instance.to_string(), subtask)) {
            None => Ok(0),
            Some(previous) => previous.checked_add(1).ok_or_else(|| {
                Malformed::at(
                    "attempt",
                    format!(
                        "the default attempt (the previous attempt {previous} + 1) does not fit 0..=4294967295: give \"attempt\""
                    ),
                )
            }),
        }
    }

    /// The existing writers of `instance`, in subtask order.
    fn subtasks_of<'a>(&'a self, instance: &'a str) -> impl Iterator<Item = u32> + 'a {
        self.attempts
            .keys()
            .filter(move |(name, _)| name == instance)
            .map(|(_, s)| *s)
    }

    /// The writer rules a step's shape cannot show: `writer_committed`,
    /// `writer_abort` and `writer_snapshot` need an existing writer, and
    /// `writer_restore` from a number needs kept writer state bytes.
    fn check(&self, step: &Step) -> Result<(), Malformed> {
        let name = &step.instance;
        match &step.op {
            Op::WriterCommitted { subtask, .. }
            | Op::WriterAbort { subtask, .. }
            | Op::WriterSnapshot { subtask, .. } => match subtask {
                Some(s) if !self.attempts.contains_key(&(name.clone(), *s)) => {
                    Err(Malformed::at(
                        "subtask",
                        format!(
                            "no writer {s} of instance {name:?} exists yet (a writer is created by its first \"write\", \"end_input\", \"send\" or \"writer_restore\" step)"
                        ),
                    ))
                }
                None if self.subtasks_of(name).next().is_none() => Err(Malformed::at(
                    "subtask",
                    format!(
                        "instance {name:?} has no writer yet (without \"subtask\" the step applies to every writer of the instance)"
                    ),
                )),
                _ => Ok(()),
            },
            Op::WriterRestore {
                subtask,
                checkpoint: Some(c),
                ..
            } if !self.kept.contains(&(name.clone(), *subtask, *c)) => Err(Malformed::at(
                "checkpoint",
                format!(
                    "no writer state bytes were kept for checkpoint {c} of writer {subtask} of instance {name:?} (no \"writer_snapshot\" step for it)"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Records what a (checked) step creates.
    fn apply(&mut self, step: &Step) {
        let name = &step.instance;
        match &step.op {
            Op::Write { subtask, .. } | Op::EndInput { subtask, .. } | Op::Send { subtask, .. } => {
                self.attempts.entry((name.clone(), *subtask)).or_insert(0);
            }
            Op::WriterRestore {
                subtask, attempt, ..
            } => {
                self.attempts.insert((name.clone(), *subtask), *attempt);
            }
            Op::WriterSnapshot {
                subtask,
                checkpoint,
            } => {
                let subtasks: Vec<u32> = match subtask {
                    Some(s) => vec![*s],
                    None => self.subtasks_of(name).collect(),
                };
                for s in subtasks {
                    self.kept.insert((name.clone(), s, *checkpoint));
                }
            }
            _ => {}
        }
    }
}

/// An entry's fields (from an `event` step or an `entries` item).
fn parse_entry(obj: &Obj<'_>) -> Result<Entry, Malformed> {
    Ok(Entry {
        checkpoint: obj.required("checkpoint")?.checkpoint(true)?,
        committables: opt_committables(obj)?,
        watermark: opt_watermark(obj)?,
        savepoint: opt_bool(obj, "savepoint", false)?,
    })
}

/// Hex (either case) to bytes.
fn decode_hex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("not valid hex: odd number of digits ({})", s.len()));
    }
    let digit = |i: usize, c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!(
                "not valid hex: unexpected character at position {i}"
            )),
        }
    };
    s.as_bytes()
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| Ok(digit(2 * i, pair[0])? << 4 | digit(2 * i + 1, pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#""config": {"parallelism": 2, "commit_user": "job-1"}"#;

    fn with_steps(steps: &str) -> String {
        format!("{{{HEAD}, \"steps\": [{steps}]}}")
    }

    fn malformed(text: &str) -> Malformed {
        match parse(text) {
            Ok(t) => panic!("expected malformed, got {t:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn parses_defaults_and_every_op() {
        let t = parse(&with_steps(
            r#"{"op": "start"},
               {"op": "event", "subtask": 1, "checkpoint": 3, "committables": ["a", "b"], "watermark": -5, "savepoint": true},
               {"op": "event", "subtask": 0, "attempt": 2, "checkpoint": "end"},
               {"op": "checkpoint", "checkpoint": 3},
               {"op": "complete", "checkpoint": "end"},
               {"op": "abort", "checkpoint": 0},
               {"op": "reset_subtask", "subtask": 1, "checkpoint": null},
               {"op": "restored", "subtask": 1, "checkpoint": 3, "entries": [{"checkpoint": "end", "committables": ["x"]}]},
               {"op": "failover", "checkpoint": 3, "finished_subtasks": [0], "config": {"recovery": "continue"}, "state_hex": "0aFF"},
               {"op": "failover", "checkpoint": null, "finished_subtasks": [0], "instance": "b"},
               {"op": "close", "instance": "b"},
               {"op": "clock", "ms": 5},
               {"op": "storage_fault", "call": "put", "mode": "ambiguous", "skip": 2}"#,
        ))
        .unwrap();
        assert_eq!(t.config, Config::new(2, "job-1"));
        assert_eq!(t.steps.len(), 13);
        assert_eq!(
            t.steps[1].op,
            Op::Event {
                subtask: 1,
                attempt: 0,
                entry: Entry {
                    checkpoint: 3,
                    committables: vec![b"a".to_vec(), b"b".to_vec()],
                    watermark: Some(-5),
                    savepoint: true
                }
            }
        );
        assert!(
            matches!(&t.steps[2].op, Op::Event { attempt: 2, entry, .. } if entry.checkpoint == END)
        );
        match &t.steps[8].op {
            Op::Failover {
                checkpoint,
                finished_subtasks,
                config,
                state,
            } => {
                assert_eq!(*checkpoint, Some(3));
                assert_eq!(finished_subtasks, &[0]);
                assert_eq!(config.recovery, RecoveryMode::Continue);
                assert_eq!(state.as_deref(), Some(&[0x0a, 0xff][..]));
            }
            other => panic!("{other:?}"),
        }
        // finished_subtasks is ignored with a null checkpoint.
        assert!(
            matches!(&t.steps[9].op, Op::Failover { finished_subtasks, .. } if finished_subtasks.is_empty())
        );
        assert_eq!(t.steps[10].instance, "b");
        assert_eq!(
            t.steps[12].op,
            Op::StorageFault {
                call: CallKind::Put,
                fault: Fault {
                    skip: 2,
                    count: 1,
                    mode: FaultMode::Ambiguous
                }
            }
        );
    }

    #[test]
    fn parses_writer_ops_with_defaults() {
        let t = parse(&with_steps(
            r#"{"op": "start"},
               {"op": "write", "subtask": 1, "checkpoint": 3, "committables": ["a"], "watermark": 7, "savepoint": true, "send": false},
               {"op": "write", "subtask": 0, "checkpoint": 0},
               {"op": "end_input", "subtask": 1, "committables": ["e"]},
               {"op": "send", "subtask": 1},
               {"op": "send", "subtask": 1, "count": 2},
               {"op": "writer_committed"},
               {"op": "writer_abort", "subtask": 0, "checkpoint": 0},
               {"op": "writer_snapshot", "checkpoint": 3},
               {"op": "writer_restore", "subtask": 1, "checkpoint": 3},
               {"op": "writer_restore", "subtask": 1, "checkpoint": null, "send": false},
               {"op": "writer_restore", "subtask": 0, "checkpoint": 3, "attempt": 7},
               {"op": "writer_restore", "subtask": 0, "checkpoint": null},
               {"op": "writer_restore", "subtask": 4, "checkpoint": null},
               {"op": "start", "instance": "b"},
               {"op": "writer_restore", "subtask": 1, "checkpoint": null, "instance": "b"},
               {"op": "writer_committed", "subtask": 1, "checkpoint": 4},
               {"op": "writer_committed", "checkpoint": "end", "instance": "b"}"#,
        ))
        .unwrap();
        assert_eq!(
            t.steps[1].op,
            Op::Write {
                subtask: 1,
                entry: Entry {
                    checkpoint: 3,
                    committables: vec![b"a".to_vec()],
                    watermark: Some(7),
                    savepoint: true
                },
                send: false
            }
        );
        assert!(
            matches!(&t.steps[2].op, Op::Write { send: true, entry, .. } if entry.committables.is_empty() && entry.watermark.is_none() && !entry.savepoint)
        );
        assert_eq!(
            t.steps[3].op,
            Op::EndInput {
                subtask: 1,
                committables: vec![b"e".to_vec()],
                watermark: None,
                send: true
            }
        );
        assert_eq!(
            t.steps[4].op,
            Op::Send {
                subtask: 1,
                count: None
            }
        );
        assert_eq!(
            t.steps[5].op,
            Op::Send {
                subtask: 1,
                count: Some(2)
            }
        );
        assert_eq!(
            t.steps[6].op,
            Op::WriterCommitted {
                subtask: None,
                checkpoint: None
            }
        );
        assert_eq!(
            t.steps[16].op,
            Op::WriterCommitted {
                subtask: Some(1),
                checkpoint: Some(4)
            }
        );
        assert_eq!(
            t.steps[17].op,
            Op::WriterCommitted {
                subtask: None,
                checkpoint: Some(END)
            }
        );
        assert_eq!(
            t.steps[7].op,
            Op::WriterAbort {
                subtask: Some(0),
                checkpoint: 0
            }
        );
        // Attempts: writers start at 0; the default is the previous + 1; an
        // explicit attempt is kept; a writer that did not exist starts at 0;
        // writers of another instance are separate.
        let attempts: Vec<(u32, u32, bool)> = t.steps[9..]
            .iter()
            .filter_map(|s| match &s.op {
                Op::WriterRestore {
                    subtask,
                    attempt,
                    send,
                    ..
                } => Some((*subtask, *attempt, *send)),
                _ => None,
            })
            .collect();
        assert_eq!(
            attempts,
            vec![
                (1, 1, true),
                (1, 2, false),
                (0, 7, true),
                (0, 8, true),
                (4, 0, true),
                (1, 0, true)
            ]
        );
        assert!(t
            .steps
            .iter()
            .skip(1)
            .all(|s| s.op.is_writer_op() || s.op.name() == "start"));
    }

    #[test]
    fn writer_steps_report_step_and_field() {
        let cases: &[(&str, usize, &str)] = &[
            (
                r#"{"op": "write", "subtask": 0, "checkpoint": "end"}"#,
                1,
                "checkpoint",
            ),
            (
                r#"{"op": "write", "subtask": 0, "checkpoint": 1, "attempt": 0}"#,
                1,
                "attempt",
            ),
            (r#"{"op": "write", "checkpoint": 1}"#, 1, "subtask"),
            (
                r#"{"op": "end_input", "subtask": 0, "checkpoint": "end"}"#,
                1,
                "checkpoint",
            ),
            (
                r#"{"op": "end_input", "subtask": 0, "watermark": 1.5}"#,
                1,
                "watermark",
            ),
            (r#"{"op": "send", "subtask": 0, "count": 0}"#, 1, "count"),
            (r#"{"op": "send", "subtask": 0, "count": -1}"#, 1, "count"),
            (r#"{"op": "writer_committed"}"#, 1, "subtask"),
            (
                r#"{"op": "writer_committed", "checkpoint": 1}"#,
                1,
                "subtask",
            ),
            // v1's writer_complete is gone: an unknown op.
            (r#"{"op": "writer_complete", "checkpoint": 1}"#, 1, "op"),
            (
                r#"{"op": "writer_committed", "instance": "x"}"#,
                1,
                "instance",
            ),
            (
                r#"{"op": "writer_snapshot", "subtask": 0, "checkpoint": 1}"#,
                1,
                "subtask",
            ),
            (r#"{"op": "writer_abort", "subtask": 0}"#, 1, "checkpoint"),
            (
                r#"{"op": "writer_restore", "subtask": 0, "checkpoint": 1}"#,
                1,
                "checkpoint",
            ),
            (
                r#"{"op": "writer_restore", "subtask": 0, "checkpoint": "end"}"#,
                1,
                "checkpoint",
            ),
            (
                r#"{"op": "writer_restore", "subtask": 0, "checkpoint": null, "entries": []}"#,
                1,
                "entries",
            ),
            (
                r#"{"op": "write", "subtask": 0, "checkpoint": 1, "instance": "x"}"#,
                1,
                "instance",
            ),
        ];
        for (step, index, field) in cases {
            let e = malformed(&with_steps(&format!(r#"{{"op": "start"}}, {step}"#)));
            assert_eq!(
                (e.step, e.field.as_deref()),
                (Some(*index), Some(*field)),
                "{step}: {e}"
            );
            assert!(e.to_string().contains(&format!("step {index}")), "{e}");
        }
        // The writer must exist; its kept bytes must exist for that
        // (instance, subtask, checkpoint).
        let e = malformed(&with_steps(
            r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1},
               {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_committed", "subtask": 1, "checkpoint": 1}"#,
        ));
        assert_eq!(
            (e.step, e.field.as_deref()),
            (Some(3), Some("subtask")),
            "{e}"
        );
        let e = malformed(&with_steps(
            r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1},
               {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 0, "checkpoint": 2}"#,
        ));
        assert_eq!(
            (e.step, e.field.as_deref()),
            (Some(3), Some("checkpoint")),
            "{e}"
        );
        assert!(e.to_string().contains("no writer state bytes"), "{e}");
        // Kept by a snapshot of every writer; a restore keeps them.
        parse(&with_steps(
            r#"{"op": "start"}, {"op": "write", "subtask": 0, "checkpoint": 1}, {"op": "write", "subtask": 1, "checkpoint": 1},
               {"op": "writer_snapshot", "checkpoint": 1}, {"op": "writer_restore", "subtask": 1, "checkpoint": 1},
               {"op": "writer_restore", "subtask": 1, "checkpoint": 1}, {"op": "failover", "checkpoint": null},
               {"op": "writer_restore", "subtask": 0, "checkpoint": 1}"#,
        ))
        .unwrap();
        // The default attempt must fit u32.
        let e = malformed(&with_steps(
            r#"{"op": "start"}, {"op": "writer_restore", "subtask": 0, "checkpoint": null, "attempt": 4294967295},
               {"op": "writer_restore", "subtask": 0, "checkpoint": null}"#,
        ));
        assert_eq!(
            (e.step, e.field.as_deref()),
            (Some(2), Some("attempt")),
            "{e}"
        );
    }

    #[test]
    fn semantic_errors_are_not_malformed() {
        let t = parse(
            r#"{"config": {"parallelism": 0, "commit_user": ""}, "steps": [
                {"op": "start"}, {"op": "event", "subtask": 4000000000, "checkpoint": 1}]}"#,
        )
        .unwrap();
        assert_eq!(t.config.parallelism, 0);
    }

    #[test]
    fn reports_step_and_field() {
        let cases: &[(&str, Option<usize>, Option<&str>)] = &[
            (r#"{"op": "start", "bogus": 1}"#, Some(0), Some("bogus")),
            (
                r#"{"op": "start"}, {"op": "event", "checkpoint": 1}"#,
                Some(1),
                Some("subtask"),
            ),
            (
                r#"{"op": "start"}, {"op": "reset_subtask", "subtask": 0, "checkpoint": "end"}"#,
                Some(1),
                Some("checkpoint"),
            ),
            (
                r#"{"op": "start"}, {"op": "reset_subtask", "subtask": 0}"#,
                Some(1),
                Some("checkpoint"),
            ),
            (
                r#"{"op": "start"}, {"op": "storage_fault", "call": "get", "mode": "fail", "count": 0}"#,
                Some(1),
                Some("count"),
            ),
            (
                r#"{"op": "event", "subtask": 0, "checkpoint": 1}"#,
                Some(0),
                Some("op"),
            ),
            (
                r#"{"op": "start"}, {"op": "close", "instance": "other"}"#,
                Some(1),
                Some("instance"),
            ),
            (
                r#"{"op": "start"}, {"op": "event", "subtask": -1, "checkpoint": 1}"#,
                Some(1),
                Some("subtask"),
            ),
            (
                r#"{"op": "start"}, {"op": "event", "subtask": 0, "checkpoint": 9223372036854775807}"#,
                Some(1),
                Some("checkpoint"),
            ),
            (
                r#"{"op": "start"}, {"op": "event", "subtask": 0, "checkpoint": 1.5}"#,
                Some(1),
                Some("checkpoint"),
            ),
            (
                r#"{"op": "start"}, {"op": "restored", "subtask": 0, "checkpoint": 1, "entries": [{"checkpoint": 1, "attempt": 0}]}"#,
                Some(1),
                Some("entries[0].attempt"),
            ),
            (
                r#"{"op": "start"}, {"op": "restored", "subtask": 0, "checkpoint": "end", "entries": []}"#,
                Some(1),
                Some("checkpoint"),
            ),
            (
                r#"{"op": "failover", "checkpoint": null, "state_hex": "00"}"#,
                Some(0),
                Some("state_hex"),
            ),
            (
                r#"{"op": "failover", "checkpoint": 1, "state_hex": "0g"}"#,
                Some(0),
                Some("state_hex"),
            ),
            (
                r#"{"op": "start", "config": {"parallelism": 4294967296}}"#,
                Some(0),
                Some("config.parallelism"),
            ),
            (
                r#"{"op": "start"}, {"op": "clock", "ms": -1}"#,
                Some(1),
                Some("ms"),
            ),
            (
                r#"{"op": "start"}, {"op": "event", "subtask": 0, "checkpoint": 1, "committables": [1]}"#,
                Some(1),
                Some("committables[0]"),
            ),
            (r#"{"op": "start"}, {"op": "nope"}"#, Some(1), Some("op")),
            (
                r#"{"op": "start"}, {"op": "event", "subtask": 0, "attempt": null, "checkpoint": 1}"#,
                Some(1),
                Some("attempt"),
            ),
        ];
        for (steps, step, field) in cases {
            let e = malformed(&with_steps(steps));
            assert_eq!(
                (e.step, e.field.as_deref()),
                (*step, *field),
                "{steps}: {e}"
            );
            let text = e.to_string();
            if let Some(i) = step {
                assert!(text.contains(&format!("step {i}")), "{text}");
            }
        }
    }

    #[test]
    fn top_level_rules() {
        let e = malformed(r#"{"config": {"parallelism": 1}, "steps": []}"#);
        assert_eq!(e.field.as_deref(), Some("config.commit_user"));
        let e =
            malformed(r#"{"config": {"parallelism": 1, "commit_user": "u", "x": 1}, "steps": []}"#);
        assert_eq!(e.field.as_deref(), Some("config.x"));
        let e = malformed(&format!("{{{HEAD}, \"steps\": [], \"extra\": true}}"));
        assert_eq!(e.field.as_deref(), Some("extra"));
        let e = malformed(&format!("{{{HEAD}}}"));
        assert_eq!(e.field.as_deref(), Some("steps"));
        let e = malformed(&format!(
            "{{{HEAD}, \"clock_step_ms\": 1.0, \"steps\": []}}"
        ));
        assert_eq!(e.field.as_deref(), Some("clock_step_ms"));
        let e = malformed("[1, 2]");
        assert!(e.to_string().contains("expected a trace"), "{e}");
        let e = malformed(&format!(
            "{{{HEAD}, \"steps\": [{{\"op\": \"start\", \"op\": \"close\"}}]}}"
        ));
        assert!(
            e.to_string().contains("duplicate field \\\"op\\\"")
                || e.to_string().contains("duplicate field"),
            "{e}"
        );
    }

    #[test]
    fn json_syntax_errors_name_line_and_column() {
        let e = malformed("{\n  \"config\": {\n    \"parallelism\": 1,,\n");
        let text = e.to_string();
        assert!(text.contains("line 3"), "{text}");
        assert!(text.contains("column"), "{text}");
        let e = malformed("");
        assert!(e.to_string().contains("line 1"), "{e}");
        let e = malformed(&format!("{{{HEAD}, \"steps\": []}} trailing"));
        assert!(e.to_string().contains("invalid JSON"), "{e}");
    }

    #[test]
    fn hex() {
        assert_eq!(decode_hex(""), Ok(vec![]));
        assert_eq!(decode_hex("00ffA1"), Ok(vec![0, 255, 0xa1]));
        assert!(decode_hex("0").is_err());
        assert!(decode_hex("zz").is_err());
        assert!(decode_hex("é0").is_err());
    }
}
