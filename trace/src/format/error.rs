//! [`Malformed`]: why a trace is malformed, and where; and its construction
//! from serde's errors.

use std::fmt;

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
    /// What is wrong.
    pub message: String,
}

impl Malformed {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Malformed {
            step: None,
            op: None,
            field: None,
            message: message.into(),
        }
    }

    pub(crate) fn at(field: &str, message: impl Into<String>) -> Self {
        Malformed {
            field: Some(field.to_string()),
            ..Malformed::new(message)
        }
    }

    /// Places an error raised while checking step `index`.
    pub(crate) fn in_step(mut self, index: usize, op: Option<&str>) -> Self {
        self.step = Some(index);
        if self.op.is_none() {
            self.op = op.map(str::to_string);
        }
        self
    }

    /// An error of deserializing a value, located by `serde_path_to_error`.
    ///
    /// serde reports a missing, unknown or repeated field in the message of
    /// the *enclosing* object (`missing field \`subtask\``); the field is
    /// moved into the path so that every message names the field itself.
    pub(crate) fn from_serde(
        path: &serde_path_to_error::Path,
        inner: &serde_json::Error,
        context: &str,
    ) -> Self {
        let mut segments = segments(path);
        // serde_path_to_error already has an unknown key in the path.
        if let Some(name) = field_name(&inner.to_string(), "unknown field `") {
            if segments.last().map(String::as_str) == Some(name) {
                segments.pop();
            }
        }
        let base = join_segments(&segments);
        // serde_json appends " at line L column C" to a data error; inside a
        // step the position is the step's, which the step index says better.
        let text = inner.to_string();
        let suffix = format!(" at line {} column {}", inner.line(), inner.column());
        let text = text.strip_suffix(&suffix).unwrap_or(&text);
        let join = |name: &str| {
            if base.is_empty() {
                name.to_string()
            } else {
                format!("{base}.{name}")
            }
        };
        if let Some(name) = field_name(text, "missing field `") {
            return Malformed::at(&join(name), format!("missing required field {name:?}"));
        }
        if let Some(name) = field_name(text, "duplicate field `") {
            return Malformed::at(
                &join(name),
                format!("duplicate field {:?}", clip(name, 100)),
            );
        }
        if let Some(name) = field_name(text, "unknown field `") {
            let place = if base.is_empty() {
                context.to_string()
            } else {
                format!("in {base}")
            };
            return Malformed::at(
                &join(name),
                format!(
                    "unknown field {:?} {place} (allowed: {})",
                    clip(name, 100),
                    allowed_fields(text)
                ),
            );
        }
        if base.is_empty() {
            Malformed::new(text)
        } else {
            Malformed::at(&base, text)
        }
    }
}

/// The path's keys, each list index glued to its list (`entries[1]`).
fn segments(path: &serde_path_to_error::Path) -> Vec<String> {
    use serde_path_to_error::Segment;
    let mut out: Vec<String> = Vec::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => match out.last_mut() {
                Some(last) => last.push_str(&format!("[{index}]")),
                None => out.push(format!("[{index}]")),
            },
            Segment::Map { key } => out.push(key.clone()),
            Segment::Enum { variant } => out.push(variant.clone()),
            Segment::Unknown => out.push("?".into()),
        }
    }
    out
}

/// `a.b[2].c`.
fn join_segments(segments: &[String]) -> String {
    segments.join(".")
}

/// The field name of serde's `missing field `x``, `duplicate field `x``
/// and `unknown field `x`, expected ...` messages (`de::Error`'s provided
/// methods spell them so in every serde 1.x). A 100 MB name is returned
/// whole and clipped when shown.
fn field_name<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(prefix)?;
    for tail in ["`, expected ", "`, there are no fields"] {
        if let Some(end) = rest.rfind(tail) {
            return Some(&rest[..end]);
        }
    }
    rest.strip_suffix('`')
}

/// The field list of serde's `unknown field` message, as `a, b, c`.
fn allowed_fields(text: &str) -> String {
    let Some(at) = text.rfind("`, expected ") else {
        return "none".into();
    };
    let list = &text[at + "`, expected ".len()..];
    let list = list.strip_prefix("one of ").unwrap_or(list);
    list.replace('`', "").replace(" or ", ", ")
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
        f.write_str(&clip_middle(&self.message, 400, 200).replace('\n', " "))
    }
}

impl std::error::Error for Malformed {}

/// At most `max` bytes of `s` (cut on a char boundary, marked when cut):
/// messages echo input, and input may be huge.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let end = s.floor_char_boundary(max);
    format!("{}... ({} bytes)", &s[..end], s.len())
}

/// `s` with its middle cut out when longer than `head + tail` bytes.
fn clip_middle(s: &str, head: usize, tail: usize) -> String {
    if s.len() <= head + tail + 50 {
        return s.to_string();
    }
    let h = s.floor_char_boundary(head);
    let t = s.ceil_char_boundary(s.len() - tail);
    format!("{} ... ({} bytes omitted) ... {}", &s[..h], t - h, &s[t..])
}
