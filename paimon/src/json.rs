//! A small JSON reader and writer, enough for Paimon's metadata files.
//!
//! Not serde_json: serde's error path formats unexpected strings with `{:?}`, which
//! pulls the Unicode escape tables into the wasm component, and its number handling pulls
//! in float parsing and printing. Here numbers are integers (Paimon's metadata has no
//! fractional field this crate reads; other numbers parse as `Number::Other` and are
//! skipped), objects keep their key order, and output is byte-for-byte deterministic.

use alloc::string::String;
use alloc::vec::Vec;

/// Nesting deeper than this is refused (bounded recursion on untrusted input).
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    /// A number that is not an i64 (fraction, exponent, out of range): value not kept.
    OtherNumber,
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of `key` in an object (the last one if repeated, as most parsers do).
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Int(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }
}

/// Why a document is not JSON (position-free: callers map it to their own error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonError;

pub fn parse(bytes: &[u8]) -> Result<Json, JsonError> {
    let mut p = Parser { b: bytes, i: 0 };
    let v = p.value(0)?;
    p.ws();
    if p.i != bytes.len() {
        return Err(JsonError);
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> Result<(), JsonError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(JsonError)
        }
    }
    fn lit(&mut self, s: &[u8], v: Json) -> Result<Json, JsonError> {
        if self.b.get(self.i..self.i + s.len()) == Some(s) {
            self.i += s.len();
            Ok(v)
        } else {
            Err(JsonError)
        }
    }
    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(JsonError);
        }
        self.ws();
        match self.peek().ok_or(JsonError)? {
            b'n' => self.lit(b"null", Json::Null),
            b't' => self.lit(b"true", Json::Bool(true)),
            b'f' => self.lit(b"false", Json::Bool(false)),
            b'"' => Ok(Json::Str(self.string()?)),
            b'[' => {
                self.i += 1;
                let mut out = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Json::Array(out));
                }
                loop {
                    out.push(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Array(out));
                        }
                        _ => return Err(JsonError),
                    }
                }
            }
            b'{' => {
                self.i += 1;
                let mut out = Vec::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Json::Object(out));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    let v = self.value(depth + 1)?;
                    out.push((k, v));
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Object(out));
                        }
                        _ => return Err(JsonError),
                    }
                }
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(JsonError),
        }
    }
    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let digits = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if self.i == digits || (self.b[digits] == b'0' && self.i - digits > 1) {
            return Err(JsonError);
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.i += 1;
            let f = self.i;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
            if self.i == f {
                return Err(JsonError);
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integral = false;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            let e = self.i;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
            if self.i == e {
                return Err(JsonError);
            }
        }
        if !integral {
            return Ok(Json::OtherNumber);
        }
        // ASCII only, so this is valid UTF-8.
        let text = core::str::from_utf8(&self.b[start..self.i]).map_err(|_| JsonError)?;
        Ok(crate::parse_i64(text).map_or(Json::OtherNumber, Json::Int))
    }
    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let c = self.peek().ok_or(JsonError)?;
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(JsonError),
            };
            v = v * 16 + d as u32;
            self.i += 1;
        }
        Ok(v)
    }
    fn string(&mut self) -> Result<String, JsonError> {
        self.eat(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek().ok_or(JsonError)?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek().ok_or(JsonError)?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                self.eat(b'\\')?;
                                self.eat(b'u')?;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(JsonError);
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(cp).ok_or(JsonError)?
                        }
                        _ => return Err(JsonError),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1f => return Err(JsonError),
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| JsonError)
    }
}

/// Writes `v` compactly: no spaces, keys in the given order.
pub fn write(out: &mut Vec<u8>, v: &Json) {
    match v {
        Json::Null | Json::OtherNumber => out.extend_from_slice(b"null"),
        Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::Int(x) => {
            let mut s = String::new();
            crate::push_i64(&mut s, *x);
            out.extend_from_slice(s.as_bytes());
        }
        Json::Str(s) => write_str(out, s),
        Json::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, x);
            }
            out.push(b']');
        }
        Json::Object(m) => {
            out.push(b'{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write(out, x);
            }
            out.push(b'}');
        }
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// Builds an object from `(key, value)` pairs, skipping `None` values.
pub fn object(fields: Vec<(&str, Option<Json>)>) -> Json {
    Json::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| Some((String::from(k), v?)))
            .collect(),
    )
}

pub fn str(s: &str) -> Json {
    Json::Str(String::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn parses_and_writes() {
        let doc = br#" { "a" : [1, -2, 3.5, 1e3, 99999999999999999999, true, false, null],
                        "s" : "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o" : { } } "#;
        let v = parse(doc).unwrap();
        assert_eq!(
            v.get("a").unwrap().as_array().unwrap(),
            &[
                Json::Int(1),
                Json::Int(-2),
                Json::OtherNumber,
                Json::OtherNumber,
                Json::OtherNumber,
                Json::Bool(true),
                Json::Bool(false),
                Json::Null
            ]
        );
        assert_eq!(
            v.get("s").unwrap().as_str().unwrap(),
            "q\"\\/\u{8}\u{c}\n\r\té😀"
        );
        let mut out = Vec::new();
        write(&mut out, &v);
        assert_eq!(
            core::str::from_utf8(&out).unwrap(),
            r#"{"a":[1,-2,null,null,null,true,false,null],"s":"q\"\\/\u0008\u000c\n\r\té😀","o":{}}"#
        );
        assert_eq!(parse(&out).unwrap().get("s"), v.get("s"));
        assert_eq!(parse(b"9223372036854775807").unwrap(), Json::Int(i64::MAX));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            &b""[..],
            b"{",
            b"[1,]",
            b"{\"a\" 1}",
            b"01",
            b"1.",
            b"\"\x01\"",
            b"\"\\x\"",
            b"\"\\ud800\"",
            b"tru",
            b"1 2",
            b"-",
            b"\"\xff\"",
        ] {
            assert_eq!(parse(bad), Err(JsonError), "{:?}", bad);
        }
        let deep = vec![b'['; MAX_DEPTH + 2];
        assert_eq!(parse(&deep), Err(JsonError));
    }
}
