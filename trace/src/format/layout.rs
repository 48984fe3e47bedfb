//! The canonical JSON layout of the documents this kit writes (results,
//! `inspect --json` tables, recorded traces), as a `serde_json` formatter:
//! the top-level object has one key per line (2-space indent), a list that
//! is a top-level value has one item per line (4 spaces), everything else
//! is on one line with `", "` and `": "`; a trailing newline.
//!
//! TRACE-FORMAT results are compared byte for byte across hosts, so this
//! layout is part of the contract (`render.rs`' test pins it).

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

/// Writes `value` in the canonical layout; `lines: false` puts the whole
/// document on one line (the `--states` lines).
pub fn to_canonical<T: Serialize + ?Sized>(value: &T, lines: bool) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        Canonical {
            lines,
            stack: Vec::new(),
        },
    );
    // The documents are plain data (no maps with non-string keys), so
    // serializing them cannot fail; an error would leave a visible stub.
    if value.serialize(&mut ser).is_err() {
        return String::from("null\n");
    }
    out.push(b'\n');
    String::from_utf8(out).unwrap_or_default()
}

struct Canonical {
    lines: bool,
    /// The open containers: whether each puts its items on lines of their
    /// own, and whether it has had an item.
    stack: Vec<(bool, bool)>,
}

impl Canonical {
    fn open<W: ?Sized + io::Write>(&mut self, w: &mut W, array: bool) -> io::Result<()> {
        let depth = self.stack.len();
        let broken = self.lines && ((depth == 0 && !array) || (depth == 1 && array));
        self.stack.push((broken, false));
        w.write_all(if array { b"[" } else { b"{" })
    }

    fn item<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        let depth = self.stack.len();
        let Some(top) = self.stack.last_mut() else {
            return Ok(());
        };
        top.1 = true;
        if top.0 {
            w.write_all(if first { b"\n" } else { b",\n" })?;
            w.write_all("  ".repeat(depth).as_bytes())
        } else if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn close<W: ?Sized + io::Write>(&mut self, w: &mut W, array: bool) -> io::Result<()> {
        if let Some((broken, had_items)) = self.stack.pop() {
            if broken && had_items {
                w.write_all(b"\n")?;
                w.write_all("  ".repeat(self.stack.len()).as_bytes())?;
            }
        }
        w.write_all(if array { b"]" } else { b"}" })
    }
}

impl Formatter for Canonical {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, true)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, true)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        Ok(())
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, false)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, false)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        Ok(())
    }
}
