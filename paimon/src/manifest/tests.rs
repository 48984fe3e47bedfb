use super::*;
use crate::binary_row::decode_row;
use crate::committable::ColumnStats;
use crate::schema::test_schema;
use alloc::string::ToString;
use alloc::vec;

fn table(partitioned: bool) -> TableSchema {
    test_schema(
        &[("id", "BIGINT"), ("dt", "STRING")],
        if partitioned { &["dt"] } else { &[] },
    )
}

fn file(name: &str, dt: Option<&str>) -> DataFile {
    DataFile {
        file_name: name.to_string(),
        file_size: 100,
        row_count: 3,
        schema_id: 0,
        min_sequence_number: 0,
        max_sequence_number: 2,
        creation_time_millis: 1_700_000_000_000,
        partition: dt.map(partition).unwrap_or_default(),
        value_stats: vec![],
    }
}

/// The partition of `table(true)`: `dt` = `d`.
fn partition(d: &str) -> Vec<Datum> {
    vec![Datum::Str(d.to_string())]
}

/// The lowest and highest partition of a manifest's files (`table(true)`).
fn partition_range(meta: &ManifestFileMeta) -> (Vec<Datum>, Vec<Datum>) {
    let kinds = [ColumnType::String];
    (
        decode_row(&meta.partition_min, &kinds).unwrap(),
        decode_row(&meta.partition_max, &kinds).unwrap(),
    )
}

#[test]
fn schemas_are_valid_avro_json() {
    avro::Schema::parse(MANIFEST_ENTRY_SCHEMA).unwrap();
    avro::Schema::parse(MANIFEST_FILE_META_SCHEMA).unwrap();
}

#[test]
fn manifest_round_trip_and_partition_stats() {
    let t = table(true);
    let files = [
        file("a.parquet", Some("2024-01-02")),
        file("b.parquet", Some("2024-01-01")),
    ];
    let (meta, bytes) = write_manifest(&t, &files, 5).unwrap();
    assert_eq!(
        (meta.file_size, meta.num_added_files),
        (bytes.len() as i64, 2)
    );
    assert_eq!(
        write_manifest(&t, &files, 5).unwrap().1,
        bytes,
        "deterministic"
    );
    assert_ne!(
        write_manifest(&t, &files, 6).unwrap().0.file_name,
        meta.file_name
    );
    assert_eq!(
        partition_range(&meta),
        (partition("2024-01-01"), partition("2024-01-02"))
    );
    assert_eq!(meta.partition_null_counts, Some(vec![Some(0)]));
    let entries = decode_manifest(&bytes).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].file_name, "a.parquet");
    assert_eq!(
        (entries[0].kind, entries[0].bucket, entries[0].total_buckets),
        (0, 0, -1)
    );
    assert_eq!(
        decode_row(&entries[1].partition, &[ColumnType::String]).unwrap(),
        partition("2024-01-01")
    );
}

#[test]
fn manifest_with_value_stats() {
    let t = table(false);
    let mut f = file("a.parquet", None);
    f.value_stats = vec![ColumnStats {
        column: "id".to_string(),
        min: Datum::Long(1),
        max: Datum::Long(3),
        null_count: Some(0),
    }];
    let (_, bytes) = write_manifest(&t, &[f], 1).unwrap();
    let recs = avro::read_records(&bytes).unwrap();
    let vs = recs[0]
        .field("_FILE")
        .unwrap()
        .field("_VALUE_STATS")
        .unwrap();
    match vs.field("_MIN_VALUES") {
        Some(Value::Bytes(b)) => assert_eq!(
            decode_row(b, &[ColumnType::BigInt]).unwrap(),
            [Datum::Long(1)]
        ),
        other => panic!("{:?}", other),
    }
}

#[test]
fn list_round_trip_and_empty() {
    let t = table(true);
    let (m1, _) = write_manifest(&t, &[file("a", Some("x"))], 1).unwrap();
    let nullpart = DataFile {
        partition: vec![Datum::Null],
        ..file("b", None)
    };
    let (m2, _) = write_manifest(&t, &[nullpart], 2).unwrap();
    assert_eq!(m2.partition_null_counts, Some(vec![Some(1)]));
    let (name, bytes) = write_manifest_list(&[m1.clone(), m2.clone()], Role::BaseList, 3);
    assert!(name.starts_with("manifest-list-") && name.ends_with("-0"));
    assert_eq!(decode_manifest_list(&bytes).unwrap(), vec![m1, m2]);
    let (_, empty) = write_manifest_list(&[], Role::DeltaList, 3);
    assert!(decode_manifest_list(&empty).unwrap().is_empty());
    let (m0, _) = write_manifest(&t, &[], 4).unwrap();
    assert_eq!((m0.num_added_files, m0.min_bucket), (0, None));
}

#[test]
fn list_errors() {
    assert_eq!(
        decode_manifest_list(b"junk"),
        Err(ManifestError::Avro(AvroError::NotAvro))
    );
    // A valid Avro file whose records are not ManifestFileMeta.
    let other = avro::write_ocf(
        r#"{"type":"record","name":"X","fields":[{"name":"a","type":"long"}]}"#,
        "null",
        &[(1, &[2])],
    );
    assert_eq!(
        decode_manifest_list(&other),
        Err(ManifestError::BadRecord("_PARTITION_STATS"))
    );
}

fn metas(t: &TableSchema, n: usize, base: i64) -> (Vec<ManifestFileMeta>, Vec<Vec<u8>>) {
    let mut ms = Vec::new();
    let mut bs = Vec::new();
    for i in 0..n {
        let dt = if i % 2 == 0 {
            "2024-01-01"
        } else {
            "2024-01-09"
        };
        let (m, b) = write_manifest(t, &[file("f", Some(dt))], base + i as i64).unwrap();
        ms.push(m);
        bs.push(b);
    }
    (ms, bs)
}

#[test]
fn plan_is_bounded_and_skips_large() {
    let t = table(true);
    let o = MergeOptions {
        max_manifests: 4,
        target_size: 1 << 20,
        max_inputs: 3,
    };
    let (mut ms, _) = metas(&t, 4, 1);
    assert_eq!(plan_merge(&ms, &o), None, "short enough");
    ms.push(ms[0].clone());
    assert_eq!(plan_merge(&ms, &o), Some(0..3));
    ms[0].file_size = 1 << 20; // large: never merged again
    ms[2].file_size = 1 << 20;
    assert_eq!(plan_merge(&ms, &o), Some(3..5));
    ms[3].file_size = 1 << 20;
    assert_eq!(plan_merge(&ms, &o), None, "no run of two small manifests");
}

#[test]
fn merge_copies_blocks_and_combines_stats() {
    let t = table(true);
    let kinds = t.partition_kinds();
    let (ms, bs) = metas(&t, 3, 1);
    let refs: Vec<&[u8]> = bs.iter().map(|b| b.as_slice()).collect();
    let m = merge_manifests(&kinds, &ms, &refs, 9).unwrap().unwrap();
    assert_eq!(m.written.len(), 1);
    let (meta, bytes) = &m.written[0];
    assert_eq!(m.segment, vec![meta.clone()]);
    assert_eq!(meta.num_added_files, 3);
    assert_eq!(meta.partition_null_counts, Some(vec![Some(0)]));
    assert_eq!(
        partition_range(meta),
        (partition("2024-01-01"), partition("2024-01-09"))
    );
    assert_eq!(decode_manifest(bytes).unwrap().len(), 3);
    assert_eq!(
        merge_manifests(&kinds, &ms, &refs, 9).unwrap().unwrap(),
        m,
        "deterministic"
    );
    let mut list = ms.clone();
    list.push(ms[0].clone());
    assert_eq!(
        apply_merge(&list, 0..3, &m),
        vec![meta.clone(), ms[0].clone()]
    );
    // Inputs that do not match their metas are refused.
    assert_eq!(
        merge_manifests(&kinds, &ms[..2], &refs, 9),
        Err(ManifestError::MergeInput)
    );
    let mut wrong = ms.clone();
    wrong[1].file_size += 1;
    assert_eq!(
        merge_manifests(&kinds, &wrong, &refs, 9),
        Err(ManifestError::MergeInput)
    );
}

/// Ours, foreign, ours, foreign: manifests of two writer headers interleaved.
fn interleaved(t: &TableSchema) -> (Vec<ManifestFileMeta>, Vec<Vec<u8>>) {
    let (mut ms, mut bs) = metas(t, 2, 1);
    for at in [1, 3] {
        let foreign = avro::write_ocf(
            r#"{"type":"record","name":"ManifestEntry","fields":[]}"#,
            "zstandard",
            &[(1, &[at as u8])],
        );
        let mut fm = ms[0].clone();
        fm.file_size = foreign.len() as i64;
        fm.file_name = "manifest-foreign".to_string();
        ms.insert(at, fm);
        bs.insert(at, foreign);
    }
    (ms, bs)
}

#[test]
fn merge_groups_writers_when_nothing_is_deleted() {
    let t = table(true);
    let kinds = t.partition_kinds();
    let (ms, bs) = interleaved(&t);
    let refs: Vec<&[u8]> = bs.iter().map(|b| b.as_slice()).collect();
    let m = merge_manifests(&kinds, &ms, &refs, 9).unwrap().unwrap();
    assert_eq!(m.written.len(), 2, "one merged manifest per header");
    assert_eq!(m.segment.len(), 2);
    let foreign = avro::read_ocf(&m.written[1].1).unwrap();
    assert_eq!(
        (foreign.codec.as_str(), foreign.blocks.len()),
        ("zstandard", 2)
    );
    assert_eq!(foreign.blocks[0].1, &[1u8][..]);
    assert_eq!(foreign.blocks[1].1, &[3u8][..]);
}

#[test]
fn merge_keeps_order_when_files_are_deleted() {
    let t = table(true);
    let kinds = t.partition_kinds();
    let (mut ms, bs) = interleaved(&t);
    ms[1].num_deleted_files = 1;
    let refs: Vec<&[u8]> = bs.iter().map(|b| b.as_slice()).collect();
    assert_eq!(
        merge_manifests(&kinds, &ms, &refs, 9).unwrap(),
        None,
        "no two neighbours share a header"
    );
    let (ms2, bs2) = metas(&t, 2, 5);
    let mut all = ms.clone();
    all.extend(ms2);
    let mut refs2 = refs.clone();
    refs2.extend(bs2.iter().map(|b| b.as_slice()));
    let m = merge_manifests(&kinds, &all, &refs2, 9).unwrap().unwrap();
    // Only the two consecutive manifests of ours at the end merge; order is kept.
    assert_eq!(m.segment.len(), 5);
    assert_eq!(m.segment[..4], all[..4]);
    assert_eq!(m.written.len(), 1);
    assert_eq!(m.written[0].0.num_added_files, 2);
}

fn hex(d: &[u8]) -> String {
    let mut s = String::new();
    for b in d {
        for n in [b >> 4, b & 15] {
            s.push(b"0123456789abcdef"[n as usize] as char);
        }
    }
    s
}

/// Pins the exact bytes (hence names and sync markers) on every platform: a change here
/// changes the tables native and component runs write.
#[test]
fn golden_digests() {
    use sha2::{Digest, Sha256};
    let t = table(true);
    let mut f = file("data-0-0.parquet", Some("2024-01-01"));
    f.value_stats = vec![ColumnStats {
        column: "id".to_string(),
        min: Datum::Long(-1),
        max: Datum::Long(1 << 40),
        null_count: Some(2),
    }];
    let (meta, bytes) = write_manifest(&t, &[f], 1).unwrap();
    let (list_name, list) = write_manifest_list(core::slice::from_ref(&meta), Role::DeltaList, 1);
    let got = (
        meta.file_name,
        hex(&Sha256::digest(&bytes)),
        list_name,
        hex(&Sha256::digest(&list)),
    );
    let want = (
        "manifest-df0f71ab-6a96-5829-03b9-57d682c92975-0",
        "5a0199e8c137aefc37a8be046fa53361c5656b46462d21abb5b9fbb416b361c1",
        "manifest-list-63525eb7-932d-bf71-3d27-a680fff3b5f3-1",
        "0d085d104f518a4c42d30e8e275c34bc77539187014ae2dbbabd088f4b72cd71",
    );
    assert_eq!(
        (
            got.0.as_str(),
            got.1.as_str(),
            got.2.as_str(),
            got.3.as_str()
        ),
        want
    );
}
