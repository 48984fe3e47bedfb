//! The shared committable vectors (`tests/paimon/committables.json`): the builder of each
//! host (Python, Node, Go, the JVM) must produce these bytes, so the Rust encoder is the
//! one that fixes them. Each case is encoded and compared with its hex, and decoded back.

use serde_json::Value;
use sink_coordinator_paimon::committable::{decode_unchecked, encode};
use sink_coordinator_paimon::{ColumnStats, DataFile, Datum};

fn vectors() -> Value {
    let p = format!(
        "{}/../tests/paimon/committables.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The 64-bit fields are decimal strings in the file (JSON numbers lose precision past
/// 2^53 in JavaScript), parsed here as the Rust type of the field.
fn int<T: std::str::FromStr>(v: &Value) -> T {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a decimal string of the field's type: {v}"))
}

fn datum(v: &Value) -> Datum {
    let o = v.as_object().expect("a value is an object");
    assert_eq!(o.len(), 1, "a value has one kind: {v}");
    let (kind, x) = o.iter().next().unwrap();
    match kind.as_str() {
        "null" => Datum::Null,
        "int" => Datum::Int(i32::try_from(x.as_i64().unwrap()).unwrap()),
        "long" => Datum::Long(int(x)),
        "string" => Datum::Str(x.as_str().unwrap().to_string()),
        "bool" => Datum::Bool(x.as_bool().unwrap()),
        k => panic!("unknown value kind {k}"),
    }
}

fn data_file(f: &Value) -> DataFile {
    let list = |k: &str| f[k].as_array().unwrap().clone();
    DataFile {
        file_name: f["file_name"].as_str().unwrap().to_string(),
        file_size: int(&f["file_size"]),
        row_count: int(&f["row_count"]),
        schema_id: int(&f["schema_id"]),
        min_sequence_number: int(&f["min_sequence_number"]),
        max_sequence_number: int(&f["max_sequence_number"]),
        creation_time_millis: int(&f["creation_time_millis"]),
        partition: list("partition").iter().map(datum).collect(),
        value_stats: list("value_stats")
            .iter()
            .map(|s| ColumnStats {
                column: s["column"].as_str().unwrap().to_string(),
                min: datum(&s["min"]),
                max: datum(&s["max"]),
                // Absent and null both mean unknown (encoded as -1).
                null_count: s.get("null_count").filter(|n| !n.is_null()).map(int),
            })
            .collect(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn every_vector_encodes_to_its_hex_and_decodes_back() {
    let v = vectors();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 8, "{} cases", cases.len());
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let f = data_file(&c["data_file"]);
        let bytes = encode(&f);
        assert_eq!(hex(&bytes), c["hex"].as_str().unwrap(), "case {name}");
        assert_eq!(decode_unchecked(&bytes), Ok(f), "case {name}");
    }
}

#[test]
fn every_kind_and_bound_is_covered() {
    // The vectors are the other hosts' only check of their builders: keep each value
    // kind, both null-count forms and the long file name in them.
    let v = vectors();
    let files: Vec<DataFile> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| data_file(&c["data_file"]))
        .collect();
    let values: Vec<&Datum> = files
        .iter()
        .flat_map(|f| {
            f.partition
                .iter()
                .chain(f.value_stats.iter().flat_map(|s| [&s.min, &s.max]))
        })
        .collect();
    for want in [
        Datum::Null,
        Datum::Int(i32::MIN),
        Datum::Int(i32::MAX),
        Datum::Long(i64::MIN),
        Datum::Long(i64::MAX),
        Datum::Bool(true),
        Datum::Bool(false),
        Datum::Str(String::new()),
    ] {
        assert!(values.contains(&&want), "no case holds {want:?}");
    }
    assert!(values
        .iter()
        .any(|d| matches!(d, Datum::Str(s) if s.chars().any(|c| c.len_utf8() == 4))));
    let stats = || files.iter().flat_map(|f| &f.value_stats);
    assert!(stats().any(|s| s.null_count.is_none()));
    assert!(stats().any(|s| s.null_count.is_some()));
    assert!(files.iter().any(|f| f.file_name.len()
        == sink_coordinator_paimon::committable::MAX_FILE_NAME
        && sink_coordinator_paimon::committable::is_plain_file_name(&f.file_name)));
}
