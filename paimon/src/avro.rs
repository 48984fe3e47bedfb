//! A minimal Avro binary encoder, a generic decoder driven by a file's writer schema, and
//! Object Container File (OCF) framing. Only what Paimon's manifests need: files are
//! written with codec `null`; files of codec `zstandard` (Paimon's default
//! `manifest.compression`, which pypaimon and Paimon's Java writer use on tables they
//! created) are decoded too (`ruzstd`, a pure-Rust no_std decoder), within a bound on
//! their decompressed size; blocks of other files are copied verbatim when manifests are
//! merged, never decompressed.

use crate::json::{self, Json};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use sha2::{Digest, Sha256};

const MAGIC: [u8; 4] = [b'O', b'b', b'j', 1];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AvroError {
    /// Not an Avro object container file (bad magic, header or sync marker).
    NotAvro,
    /// The data ended early or a length is out of range.
    Truncated,
    /// The writer schema is not JSON or uses a construct this decoder does not know.
    BadSchema,
    /// Blocks are compressed with a codec this crate does not decompress.
    UnsupportedCodec(String),
    /// A string is not UTF-8.
    Utf8,
    /// A union branch index or enum symbol is out of range.
    BadIndex,
    /// A compressed block does not decompress, or decompresses to more than
    /// [`MAX_DECOMPRESSED`] bytes.
    BadCompression,
}

/// The most bytes one file's compressed blocks may decompress to, in all: far above any
/// manifest Paimon writes (`manifest.target-file-size` is 8 MiB of compressed data), and
/// a bound on what a hostile file can make the decoder allocate.
pub const MAX_DECOMPRESSED: usize = 64 << 20;

/// The largest zstd window a block may ask for. zstd needs a buffer of the window's size;
/// manifests are compressed at low levels, whose windows are at most a few MiB.
const MAX_ZSTD_WINDOW: u64 = 8 << 20;

/// The bytes of one `zstandard` block (one or more zstd frames), at most `budget` of them.
// Not inlined into its caller: with ruzstd's decoder inside, the caller grew
// past what a JVM's JIT compiles (8,000 bytecode bytes) on Chicory.
#[inline(never)]
fn unzstd(mut input: &[u8], budget: usize) -> Result<Vec<u8>, AvroError> {
    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    let mut out = Vec::new();
    let mut d = FrameDecoder::new();
    d.set_max_window_size(MAX_ZSTD_WINDOW);
    while !input.is_empty() {
        match d.init(&mut input) {
            Ok(()) => {}
            // A skippable frame carries no data.
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                let length = usize::try_from(length).map_err(|_| AvroError::BadCompression)?;
                input = input.get(length..).ok_or(AvroError::BadCompression)?;
                continue;
            }
            Err(_) => return Err(AvroError::BadCompression),
        }
        loop {
            let finished = d
                .decode_blocks(&mut input, BlockDecodingStrategy::UptoBytes(1 << 20))
                .map_err(|_| AvroError::BadCompression)?;
            if let Some(chunk) = d.collect() {
                if out.len() + chunk.len() > budget {
                    return Err(AvroError::BadCompression);
                }
                out.extend_from_slice(&chunk);
            }
            if finished {
                break;
            }
        }
    }
    Ok(out)
}

/// The blocks of `ocf` as uncompressed bytes: borrowed for codec `null`, decompressed
/// for `zstandard`; any other codec is [`AvroError::UnsupportedCodec`].
pub fn plain_blocks<'a>(
    ocf: &Ocf<'a>,
) -> Result<Vec<(i64, alloc::borrow::Cow<'a, [u8]>)>, AvroError> {
    use alloc::borrow::Cow;
    match ocf.codec.as_str() {
        "null" => Ok(ocf
            .blocks
            .iter()
            .map(|(n, b)| (*n, Cow::Borrowed(*b)))
            .collect()),
        "zstandard" => {
            let mut left = MAX_DECOMPRESSED;
            let mut out = Vec::with_capacity(ocf.blocks.len());
            for (n, b) in &ocf.blocks {
                let plain = unzstd(b, left)?;
                left -= plain.len();
                out.push((*n, Cow::Owned(plain)));
            }
            Ok(out)
        }
        other => Err(AvroError::UnsupportedCodec(other.into())),
    }
}

// ---------------------------------------------------------------- encoding

pub fn put_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, s.as_bytes());
}

/// `["null", T]` with a value: branch 1, then the value is written by the caller.
pub fn put_some(out: &mut Vec<u8>) {
    put_long(out, 1);
}

/// `["null", T]` without a value.
pub fn put_none(out: &mut Vec<u8>) {
    put_long(out, 0);
}

/// An array of strings (one block, then the end marker).
pub fn put_str_array(out: &mut Vec<u8>, items: &[String]) {
    if !items.is_empty() {
        put_long(out, items.len() as i64);
        for s in items {
            put_str(out, s);
        }
    }
    put_long(out, 0);
}

/// Builds an OCF file from already-encoded blocks `(record count, block bytes)` that share
/// `schema` and `codec`. The sync marker is the first 16 bytes of a SHA-256 over the
/// schema, the codec and every block, so the same content always gives the same bytes.
#[inline(never)] // see `unzstd`
pub fn write_ocf(schema: &str, codec: &str, blocks: &[(i64, &[u8])]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(b"sink-coordinator-paimon avro sync v1\0");
    h.update((schema.len() as u64).to_le_bytes());
    h.update(schema.as_bytes());
    h.update((codec.len() as u64).to_le_bytes());
    h.update(codec.as_bytes());
    for (n, b) in blocks {
        h.update(n.to_le_bytes());
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    }
    let digest = h.finalize();
    let mut sync = [0u8; 16];
    sync.copy_from_slice(&digest[..16]);

    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    put_long(&mut out, 2);
    put_str(&mut out, "avro.codec");
    put_str(&mut out, codec);
    put_str(&mut out, "avro.schema");
    put_str(&mut out, schema);
    put_long(&mut out, 0);
    out.extend_from_slice(&sync);
    for (n, b) in blocks {
        if *n == 0 {
            continue;
        }
        put_long(&mut out, *n);
        put_bytes(&mut out, b);
        out.extend_from_slice(&sync);
    }
    out
}

// ---------------------------------------------------------------- reading

/// Reads Avro binary values from a byte slice.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn long(&mut self) -> Result<i64, AvroError> {
        let mut z: u64 = 0;
        let mut shift = 0;
        loop {
            let b = *self.buf.get(self.pos).ok_or(AvroError::Truncated)?;
            self.pos += 1;
            if shift > 63 {
                return Err(AvroError::Truncated);
            }
            z |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], AvroError> {
        let end = self.pos.checked_add(n).ok_or(AvroError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(AvroError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], AvroError> {
        let n = self.long()?;
        if n < 0 {
            return Err(AvroError::Truncated);
        }
        self.take(n as usize)
    }

    pub fn string(&mut self) -> Result<String, AvroError> {
        let b = self.bytes()?;
        core::str::from_utf8(b)
            .map(String::from)
            .map_err(|_| AvroError::Utf8)
    }
}

/// The parts of an OCF file: its writer schema and codec, and its blocks, borrowed.
pub struct Ocf<'a> {
    pub schema: String,
    pub codec: String,
    pub blocks: Vec<(i64, &'a [u8])>,
}

#[inline(never)] // see `unzstd`
pub fn read_ocf(bytes: &[u8]) -> Result<Ocf<'_>, AvroError> {
    if bytes.len() < 4 || bytes[..4] != MAGIC {
        return Err(AvroError::NotAvro);
    }
    let mut r = Reader::new(&bytes[4..]);
    let mut schema = None;
    let mut codec = String::from("null");
    loop {
        let mut n = r.long()?;
        if n == 0 {
            break;
        }
        if n < 0 {
            n = -n;
            r.long()?; // block byte size, unused
        }
        for _ in 0..n {
            let k = r.string()?;
            let v = r.bytes()?;
            if k == "avro.schema" {
                schema = Some(core::str::from_utf8(v).map_err(|_| AvroError::Utf8)?.into());
            } else if k == "avro.codec" {
                codec = core::str::from_utf8(v).map_err(|_| AvroError::Utf8)?.into();
            }
        }
    }
    let sync = r.take(16)?;
    let mut blocks = Vec::new();
    while !r.at_end() {
        let n = r.long()?;
        let data = r.bytes()?;
        if r.take(16)? != sync || n < 0 {
            return Err(AvroError::NotAvro);
        }
        blocks.push((n, data));
    }
    Ok(Ocf {
        schema: schema.ok_or(AvroError::NotAvro)?,
        codec,
        blocks,
    })
}

/// A writer schema, resolved from its JSON (named types inlined).
#[derive(Clone, Debug)]
pub enum Schema {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    Str,
    Record(Vec<(String, Schema)>),
    Enum(usize),
    Array(Box<Schema>),
    Map(Box<Schema>),
    Union(Vec<Schema>),
    Fixed(usize),
}

impl Schema {
    pub fn parse(json: &str) -> Result<Schema, AvroError> {
        let v = json::parse(json.as_bytes()).map_err(|_| AvroError::BadSchema)?;
        let mut named = Vec::new();
        Self::from_json(&v, &mut named)
    }

    fn from_json(v: &Json, named: &mut Vec<(String, Schema)>) -> Result<Schema, AvroError> {
        match v {
            Json::Str(s) => Self::primitive(s, named),
            Json::Array(items) => Ok(Schema::Union(
                items
                    .iter()
                    .map(|i| Self::from_json(i, named))
                    .collect::<Result<_, _>>()?,
            )),
            Json::Object(_) => {
                let o = v;
                let ty = o.get("type").ok_or(AvroError::BadSchema)?;
                let t = match ty {
                    Json::Str(t) => t.as_str(),
                    other => return Self::from_json(other, named),
                };
                let s = match t {
                    "record" | "error" => {
                        let fields = o.get("fields").and_then(Json::as_array);
                        let mut out = Vec::new();
                        for f in fields.ok_or(AvroError::BadSchema)? {
                            let name = f.get("name").and_then(Json::as_str);
                            let fty = f.get("type").ok_or(AvroError::BadSchema)?;
                            let sch = Self::from_json(fty, named)?;
                            out.push((String::from(name.ok_or(AvroError::BadSchema)?), sch));
                        }
                        Schema::Record(out)
                    }
                    "enum" => Schema::Enum(
                        o.get("symbols")
                            .and_then(Json::as_array)
                            .map_or(0, |s| s.len()),
                    ),
                    "array" => Schema::Array(Box::new(Self::from_json(
                        o.get("items").ok_or(AvroError::BadSchema)?,
                        named,
                    )?)),
                    "map" => Schema::Map(Box::new(Self::from_json(
                        o.get("values").ok_or(AvroError::BadSchema)?,
                        named,
                    )?)),
                    "fixed" => {
                        let n = o.get("size").and_then(Json::as_i64);
                        let n = n.and_then(|n| usize::try_from(n).ok());
                        Schema::Fixed(n.ok_or(AvroError::BadSchema)?)
                    }
                    // A primitive with attributes, e.g. a logical type: the base type decides.
                    other => Self::primitive(other, named)?,
                };
                if let Some(name) = o.get("name").and_then(Json::as_str) {
                    named.push((String::from(name), s.clone()));
                }
                Ok(s)
            }
            _ => Err(AvroError::BadSchema),
        }
    }

    fn primitive(s: &str, named: &[(String, Schema)]) -> Result<Schema, AvroError> {
        Ok(match s {
            "null" => Schema::Null,
            "boolean" => Schema::Boolean,
            "int" => Schema::Int,
            "long" => Schema::Long,
            "float" => Schema::Float,
            "double" => Schema::Double,
            "bytes" => Schema::Bytes,
            "string" => Schema::Str,
            // A reference to a named type, by full or short name.
            other => named
                .iter()
                .rev()
                .find(|(n, _)| n == other || n.rsplit('.').next() == Some(other))
                .map(|(_, s)| s.clone())
                .ok_or(AvroError::BadSchema)?,
        })
    }
}

/// A decoded value. Unions decode to their branch's value; floats are skipped (kept as
/// raw bits) since no Paimon manifest field this crate reads is a float.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Long(i64),
    FloatBits(u64),
    Bytes(Vec<u8>),
    Str(String),
    Record(Vec<(String, Value)>),
    Array(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl Value {
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Record(fs) => fs.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

pub fn decode(r: &mut Reader<'_>, s: &Schema) -> Result<Value, AvroError> {
    Ok(match s {
        Schema::Null => Value::Null,
        Schema::Boolean => Value::Bool(r.take(1)?[0] != 0),
        Schema::Int | Schema::Long | Schema::Enum(_) => {
            let v = r.long()?;
            if let Schema::Enum(n) = s {
                if v < 0 || v as usize >= *n {
                    return Err(AvroError::BadIndex);
                }
            }
            Value::Long(v)
        }
        Schema::Float => {
            let b = r.take(4)?;
            Value::FloatBits(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64)
        }
        Schema::Double => {
            let mut w = [0u8; 8];
            w.copy_from_slice(r.take(8)?);
            Value::FloatBits(u64::from_le_bytes(w))
        }
        Schema::Bytes => Value::Bytes(r.bytes()?.to_vec()),
        Schema::Str => Value::Str(r.string()?),
        Schema::Fixed(n) => Value::Bytes(r.take(*n)?.to_vec()),
        Schema::Record(fields) => {
            let mut out = Vec::with_capacity(fields.len());
            for (name, fs) in fields {
                out.push((name.clone(), decode(r, fs)?));
            }
            Value::Record(out)
        }
        Schema::Union(branches) => {
            let i = r.long()?;
            let b = usize::try_from(i).ok().and_then(|i| branches.get(i));
            decode(r, b.ok_or(AvroError::BadIndex)?)?
        }
        Schema::Array(item) => {
            let mut out = Vec::new();
            read_blocks(r, |r| {
                out.push(decode(r, item)?);
                Ok(())
            })?;
            Value::Array(out)
        }
        Schema::Map(item) => {
            let mut out = Vec::new();
            read_blocks(r, |r| {
                let k = r.string()?;
                out.push((k, decode(r, item)?));
                Ok(())
            })?;
            Value::Map(out)
        }
    })
}

fn read_blocks(
    r: &mut Reader<'_>,
    mut each: impl FnMut(&mut Reader<'_>) -> Result<(), AvroError>,
) -> Result<(), AvroError> {
    loop {
        let mut n = r.long()?;
        if n == 0 {
            return Ok(());
        }
        if n < 0 {
            n = n.checked_neg().ok_or(AvroError::Truncated)?;
            r.long()?;
        }
        // Each item takes at least one byte... except nulls; bound by the input anyway.
        if n as u64 > r.buf.len() as u64 + 1 {
            return Err(AvroError::Truncated);
        }
        for _ in 0..n {
            each(r)?;
        }
    }
}

/// Decodes every record of an OCF file (codec `null` or `zstandard`) with its own writer
/// schema.
pub fn read_records(bytes: &[u8]) -> Result<Vec<Value>, AvroError> {
    let ocf = read_ocf(bytes)?;
    let blocks = plain_blocks(&ocf)?;
    let schema = Schema::parse(&ocf.schema)?;
    let mut out = Vec::new();
    for (n, data) in &blocks {
        // Every record of Paimon's schemas takes at least one byte: a larger count is
        // corrupt, and would otherwise loop without consuming input.
        if *n as u64 > data.len() as u64 {
            return Err(AvroError::Truncated);
        }
        let mut r = Reader::new(data);
        for _ in 0..*n {
            out.push(decode(&mut r, &schema)?);
        }
        if !r.at_end() {
            return Err(AvroError::NotAvro);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_golden() {
        for (v, want) in [
            (0i64, &[0u8][..]),
            (-1, &[1]),
            (1, &[2]),
            (-64, &[0x7f]),
            (64, &[0x80, 1]),
        ] {
            let mut o = Vec::new();
            put_long(&mut o, v);
            assert_eq!(o, want);
            assert_eq!(Reader::new(&o).long().unwrap(), v);
        }
        let mut o = Vec::new();
        put_long(&mut o, i64::MIN);
        assert_eq!(Reader::new(&o).long().unwrap(), i64::MIN);
        put_long(&mut o, i64::MAX);
    }

    #[test]
    fn ocf_round_trip_and_determinism() {
        let schema = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"]},{"name":"c","type":{"type":"array","items":"string"}}]}"#;
        let mut rec = Vec::new();
        put_long(&mut rec, 42);
        put_some(&mut rec);
        put_str(&mut rec, "x");
        put_str_array(&mut rec, &[String::from("p"), String::from("q")]);
        let f1 = write_ocf(schema, "null", &[(1, &rec)]);
        assert_eq!(f1, write_ocf(schema, "null", &[(1, &rec)]));
        let vals = read_records(&f1).unwrap();
        assert_eq!(vals.len(), 1);
        assert_eq!(vals[0].field("a"), Some(&Value::Long(42)));
        assert_eq!(vals[0].field("b"), Some(&Value::Str(String::from("x"))));
        // An empty file (no blocks) is valid.
        assert!(read_records(&write_ocf(schema, "null", &[]))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn zstd_blocks_decompress_within_their_bound() {
        // A manifest list pypaimon 2.1.0 wrote with its default `zstd` compression.
        let f = include_bytes!("../testdata/pypaimon-2.1.0/zstd/base-list");
        let ocf = read_ocf(f).unwrap();
        assert_eq!(ocf.codec, "zstandard");
        let (_, block) = ocf.blocks[0];
        let plain = unzstd(block, MAX_DECOMPRESSED).unwrap();
        assert!(
            plain.len() > block.len() / 2,
            "{} from {}",
            plain.len(),
            block.len()
        );
        // Past the bound, it stops there.
        assert_eq!(
            unzstd(block, plain.len() - 1),
            Err(AvroError::BadCompression)
        );
        assert_eq!(unzstd(block, plain.len()).unwrap(), plain);
        assert!(!read_records(f).unwrap().is_empty());
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(read_ocf(b"nope").err(), Some(AvroError::NotAvro));
        let f = write_ocf(r#""long""#, "snappy", &[(1, &[2])]);
        assert_eq!(
            read_records(&f),
            Err(AvroError::UnsupportedCodec(String::from("snappy")))
        );
        // Not zstd, and a truncated frame.
        for block in [&[2u8][..], &[0x28, 0xb5, 0x2f, 0xfd, 0x00][..]] {
            let f = write_ocf(r#""long""#, "zstandard", &[(1, block)]);
            assert_eq!(read_records(&f), Err(AvroError::BadCompression));
        }
        let mut f = write_ocf(r#""long""#, "null", &[(1, &[2])]);
        let n = f.len();
        f[n - 1] ^= 1; // corrupt the trailing sync marker
        assert_eq!(read_ocf(&f).err(), Some(AvroError::NotAvro));
        assert_eq!(Schema::parse("{").err(), Some(AvroError::BadSchema));
        let huge = write_ocf(r#""null""#, "null", &[(1 << 40, &[])]);
        assert_eq!(read_records(&huge), Err(AvroError::Truncated));
        let short = write_ocf(r#""string""#, "null", &[(1, &[20, b'a'])]);
        assert_eq!(read_records(&short), Err(AvroError::Truncated));
        let self_ref = r#"{"type":"record","name":"R","fields":[{"name":"r","type":"R"}]}"#;
        assert_eq!(Schema::parse(self_ref).err(), Some(AvroError::BadSchema));
        assert!(matches!(
            Schema::parse(r#""Unknown""#),
            Err(AvroError::BadSchema)
        ));
    }
}
