//! Paimon's table schema file, `schema/schema-<id>` (JSON, as `TableSchema`):
//! encoded for `table create`, decoded for a table Paimon itself created.

use crate::json::{self, Json};
use crate::types::{ColumnType, FieldType};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

/// The schema version Paimon writes today (`TableSchema.CURRENT_VERSION`).
pub const SCHEMA_VERSION: i64 = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaError {
    /// Not JSON of Paimon's schema shape (or missing required fields).
    BadJson,
    /// A primary-key table: this crate writes append tables only.
    PrimaryKeyTable,
    /// `bucket` is not -1: fixed (or postponed) buckets are not supported.
    FixedBucket(String),
    /// A partition key that names no column.
    UnknownPartitionKey(String),
    /// A partition key whose type this crate cannot encode into a BinaryRow.
    UnsupportedPartitionType(String),
    /// Two columns with one name, or no column at all.
    BadFields,
}

/// One column of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub id: i64,
    pub name: String,
    /// Paimon's type string (`"INT"`, `"VARCHAR(10) NOT NULL"`); empty for nested types.
    pub type_text: String,
    pub ty: FieldType,
}

/// What this crate needs of a table schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    pub id: i64,
    pub fields: Vec<Field>,
    pub partition_keys: Vec<String>,
    pub options: BTreeMap<String, String>,
}

impl TableSchema {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The partition key types, in key order (validated on construction).
    pub fn partition_types(&self) -> Vec<FieldType> {
        self.partition_keys
            .iter()
            .filter_map(|k| self.field(k).map(|f| f.ty.clone()))
            .collect()
    }

    pub fn partition_kinds(&self) -> Vec<ColumnType> {
        self.partition_types().iter().map(|t| t.kind).collect()
    }
}

/// A new table: columns as `(name, Paimon type string)`, partition keys, extra options.
pub struct CreateTable<'a> {
    pub columns: &'a [(&'a str, &'a str)],
    pub partition_keys: &'a [&'a str],
    pub options: &'a [(&'a str, &'a str)],
}

/// Options every table this crate creates carries: unaware buckets, and uncompressed
/// manifests so that this crate (which implements no codec) can also read the manifest
/// lists other Paimon writers add to the table.
pub const DEFAULT_OPTIONS: [(&str, &str); 2] = [("bucket", "-1"), ("manifest.compression", "null")];

/// Encodes `schema/schema-0` for a new append table. Validated as `decode_schema` would.
pub fn encode_schema(t: &CreateTable<'_>, time_millis: i64) -> Result<Vec<u8>, SchemaError> {
    let mut options = BTreeMap::new();
    for (k, v) in DEFAULT_OPTIONS.iter().chain(t.options) {
        options.insert(String::from(*k), String::from(*v));
    }
    let fields = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, (n, ty))| {
            json::object(alloc::vec![
                ("id", Some(Json::Int(i as i64))),
                ("name", Some(json::str(n))),
                ("type", Some(json::str(ty))),
            ])
        })
        .collect();
    let strs = |v: &[&str]| Json::Array(v.iter().map(|s| json::str(s)).collect());
    let doc = json::object(alloc::vec![
        ("version", Some(Json::Int(SCHEMA_VERSION))),
        ("id", Some(Json::Int(0))),
        ("fields", Some(Json::Array(fields))),
        (
            "highestFieldId",
            Some(Json::Int(t.columns.len() as i64 - 1))
        ),
        ("partitionKeys", Some(strs(t.partition_keys))),
        ("primaryKeys", Some(Json::Array(Vec::new()))),
        (
            "options",
            Some(Json::Object(
                options
                    .into_iter()
                    .map(|(k, v)| (k, Json::Str(v)))
                    .collect()
            )),
        ),
        ("timeMillis", Some(Json::Int(time_millis))),
    ]);
    let mut bytes = Vec::new();
    json::write(&mut bytes, &doc);
    decode_schema(&bytes)?;
    Ok(bytes)
}

fn str_list(v: Option<&Json>) -> Result<Vec<String>, SchemaError> {
    match v {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(String::from).ok_or(SchemaError::BadJson))
            .collect(),
        _ => Err(SchemaError::BadJson),
    }
}

/// Decodes a schema file and checks that the table is one this crate can commit to.
pub fn decode_schema(bytes: &[u8]) -> Result<TableSchema, SchemaError> {
    let doc = json::parse(bytes).map_err(|_| SchemaError::BadJson)?;
    let id = doc
        .get("id")
        .and_then(Json::as_i64)
        .ok_or(SchemaError::BadJson)?;
    let primary_keys = str_list(doc.get("primaryKeys"))?;
    let partition_keys = str_list(doc.get("partitionKeys"))?;
    let mut options = BTreeMap::new();
    match doc.get("options") {
        None | Some(Json::Null) => {}
        Some(Json::Object(m)) => {
            for (k, v) in m {
                let v = v.as_str().ok_or(SchemaError::BadJson)?;
                options.insert(k.clone(), String::from(v));
            }
        }
        _ => return Err(SchemaError::BadJson),
    }
    if !primary_keys.is_empty() {
        return Err(SchemaError::PrimaryKeyTable);
    }
    // Paimon's own primary keys may also be set through the option.
    if options
        .get("primary-key")
        .is_some_and(|v| !v.trim().is_empty())
    {
        return Err(SchemaError::PrimaryKeyTable);
    }
    // Absent means -1 for append tables (Paimon's default since 1.0).
    if let Some(b) = options.get("bucket") {
        if b.trim() != "-1" {
            return Err(SchemaError::FixedBucket(b.clone()));
        }
    }
    let raw = doc
        .get("fields")
        .and_then(Json::as_array)
        .ok_or(SchemaError::BadJson)?;
    let mut fields: Vec<Field> = Vec::with_capacity(raw.len());
    for f in raw {
        let fid = f
            .get("id")
            .and_then(Json::as_i64)
            .ok_or(SchemaError::BadJson)?;
        let name = f
            .get("name")
            .and_then(Json::as_str)
            .ok_or(SchemaError::BadJson)?;
        if fields.iter().any(|g| g.name == name) {
            return Err(SchemaError::BadFields);
        }
        let (type_text, ty) = match f.get("type") {
            Some(Json::Str(s)) => (s.clone(), FieldType::parse(s)),
            // Nested types (ROW, ARRAY, MAP) are objects; they are data columns only.
            Some(Json::Object(_)) => (
                String::new(),
                FieldType {
                    kind: ColumnType::Other,
                    nullable: true,
                },
            ),
            _ => return Err(SchemaError::BadJson),
        };
        fields.push(Field {
            id: fid,
            name: String::from(name),
            type_text,
            ty,
        });
    }
    if fields.is_empty() {
        return Err(SchemaError::BadFields);
    }
    for k in &partition_keys {
        let f = fields
            .iter()
            .find(|f| &f.name == k)
            .ok_or_else(|| SchemaError::UnknownPartitionKey(k.clone()))?;
        if f.ty.kind == ColumnType::Other {
            return Err(SchemaError::UnsupportedPartitionType(k.clone()));
        }
    }
    Ok(TableSchema {
        id,
        fields,
        partition_keys,
        options,
    })
}

/// The key of schema `id` under the table: `schema/schema-<id>`.
pub fn schema_key(id: i64) -> String {
    let mut s = String::from("schema/schema-");
    crate::push_i64(&mut s, id);
    s
}

/// The schema (id 0, default options) of a table of `columns` partitioned by
/// `partition_keys`, as it reads back: the tests' tables.
#[cfg(test)]
pub(crate) fn test_schema(columns: &[(&str, &str)], partition_keys: &[&str]) -> TableSchema {
    let t = CreateTable {
        columns,
        partition_keys,
        options: &[],
    };
    decode_schema(&encode_schema(&t, 0).unwrap()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_and_decode_partitioned() {
        let t = CreateTable {
            columns: &[
                ("id", "BIGINT NOT NULL"),
                ("name", "STRING"),
                ("dt", "STRING"),
            ],
            partition_keys: &["dt"],
            options: &[("file.format", "parquet")],
        };
        let b = encode_schema(&t, 1_700_000_000_000).unwrap();
        let s = core::str::from_utf8(&b).unwrap();
        assert!(s.starts_with(
            r#"{"version":3,"id":0,"fields":[{"id":0,"name":"id","type":"BIGINT NOT NULL"}"#
        ));
        assert!(s.contains(
            r#""options":{"bucket":"-1","file.format":"parquet","manifest.compression":"null"}"#
        ));
        let d = decode_schema(&b).unwrap();
        assert_eq!(d.partition_keys, ["dt"]);
        assert_eq!(d.partition_kinds(), [ColumnType::String]);
        assert_eq!(schema_key(0), "schema/schema-0");
    }

    #[test]
    fn accepts_a_schema_written_by_paimon() {
        // As Java's SchemaManager writes it (pretty-printed, with comment and description).
        let j = br#"{
          "version" : 3, "id" : 0,
          "fields" : [ { "id" : 0, "name" : "k", "type" : "INT", "description" : "key" },
                       { "id" : 1, "name" : "v", "type" : { "type" : "ARRAY", "element" : "INT" } } ],
          "highestFieldId" : 1, "partitionKeys" : [ "k" ], "primaryKeys" : [ ],
          "options" : { "file.format" : "parquet" }, "comment" : null, "timeMillis" : 1 }"#;
        let d = decode_schema(j).unwrap();
        assert_eq!(d.fields[1].ty.kind, ColumnType::Other);
        assert_eq!(
            d.options.get("file.format").map(String::as_str),
            Some("parquet")
        );
    }

    #[test]
    fn refuses_what_it_cannot_write() {
        let pk = br#"{"id":0,"fields":[{"id":0,"name":"k","type":"INT"}],"highestFieldId":0,"primaryKeys":["k"],"options":{}}"#;
        assert_eq!(decode_schema(pk), Err(SchemaError::PrimaryKeyTable));
        let fixed = br#"{"id":0,"fields":[{"id":0,"name":"k","type":"INT"}],"highestFieldId":0,"options":{"bucket":"4"}}"#;
        assert_eq!(
            decode_schema(fixed),
            Err(SchemaError::FixedBucket(String::from("4")))
        );
        let badkey = br#"{"id":0,"fields":[{"id":0,"name":"k","type":"INT"}],"highestFieldId":0,"partitionKeys":["x"]}"#;
        assert_eq!(
            decode_schema(badkey),
            Err(SchemaError::UnknownPartitionKey(String::from("x")))
        );
        let dbl = br#"{"id":0,"fields":[{"id":0,"name":"k","type":"DOUBLE"}],"highestFieldId":0,"partitionKeys":["k"]}"#;
        assert_eq!(
            decode_schema(dbl),
            Err(SchemaError::UnsupportedPartitionType(String::from("k")))
        );
        assert_eq!(decode_schema(b"[1]"), Err(SchemaError::BadJson));
        let dup = br#"{"id":0,"fields":[{"id":0,"name":"k","type":"INT"},{"id":1,"name":"k","type":"INT"}],"highestFieldId":1}"#;
        assert_eq!(decode_schema(dup), Err(SchemaError::BadFields));
        let t = CreateTable {
            columns: &[("k", "INT")],
            partition_keys: &[],
            options: &[("bucket", "2")],
        };
        assert_eq!(
            encode_schema(&t, 0),
            Err(SchemaError::FixedBucket(String::from("2")))
        );
    }
}
