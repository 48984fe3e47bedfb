//! Files pypaimon 2.1.0 wrote (`testdata/pypaimon-2.1.0/`: an append table partitioned by
//! `dt STRING`, two batch commits of 3 rows each, once with `manifest.compression = null`
//! and once with the default zstd), decoded by this crate.

use sink_coordinator_paimon::avro;
use sink_coordinator_paimon::manifest::{self, MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA};
use sink_coordinator_paimon::naming::Role;
use sink_coordinator_paimon::snapshot::{self, END_OF_INPUT};
use sink_coordinator_paimon::{decode_row, decode_schema, ColumnType, DataFile, Datum};

fn fixture(table: &str, name: &str) -> Vec<u8> {
    let p = format!(
        "{}/testdata/pypaimon-2.1.0/{table}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn schema_and_snapshot() {
    for t in ["nullcodec", "zstd"] {
        let s = decode_schema(&fixture(t, "schema-0")).unwrap();
        assert_eq!(s.partition_keys, ["dt"]);
        assert_eq!(s.partition_kinds(), [ColumnType::String]);
        let snap = snapshot::decode_snapshot(&fixture(t, "snapshot-2")).unwrap();
        assert_eq!(
            (snap.id, snap.commit_identifier, snap.commit_kind.as_str()),
            (2, END_OF_INPUT, "APPEND")
        );
        assert_eq!(
            (snap.total_record_count, snap.delta_record_count),
            (Some(6), Some(3))
        );
        assert_eq!(snap.marks(), Ok(None));
        assert_eq!(
            snap.base_manifest_list_size,
            Some(fixture(t, "base-list").len() as i64)
        );
    }
}

#[test]
fn manifest_lists_and_manifests() {
    let base = manifest::decode_manifest_list(&fixture("nullcodec", "base-list")).unwrap();
    let delta = manifest::decode_manifest_list(&fixture("nullcodec", "delta-list")).unwrap();
    assert_eq!((base.len(), delta.len()), (1, 1));
    let m = &base[0];
    assert_eq!(
        (m.num_added_files, m.num_deleted_files, m.schema_id),
        (1, 0, 0)
    );
    assert_eq!(m.file_size, fixture("nullcodec", "manifest-a").len() as i64);
    // A 15-byte string: BinaryRow's variable part, as pypaimon writes it.
    let min = decode_row(&m.partition_min, &[ColumnType::String]).unwrap();
    assert_eq!(min, [Datum::Str("2024-01-01-long".into())]);
    assert_eq!(m.partition_null_counts, Some(vec![Some(0)]));
    let entries = manifest::decode_manifest(&fixture("nullcodec", "manifest-a")).unwrap();
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert_eq!(
        (e.kind, e.bucket, e.total_buckets, e.row_count),
        (0, 0, -1, 3)
    );
    assert!(e.file_name.starts_with("data-") && e.file_name.ends_with(".parquet"));
    // Re-encoding pypaimon's record gives pypaimon's bytes (names, sizes, stats kept raw).
    let (_, ours) = manifest::write_manifest_list(&base, Role::BaseList, 1);
    let a = avro::read_ocf(&ours).unwrap();
    let fb = fixture("nullcodec", "base-list");
    let b = avro::read_ocf(&fb).unwrap();
    assert_eq!(a.blocks, b.blocks);
}

#[test]
fn writer_schemas_are_pypaimons_byte_for_byte() {
    let fm = fixture("nullcodec", "manifest-a");
    let entry = avro::read_ocf(&fm).unwrap();
    assert_eq!(entry.schema, MANIFEST_ENTRY_SCHEMA);
    let fl = fixture("nullcodec", "base-list");
    let list = avro::read_ocf(&fl).unwrap();
    assert_eq!(list.schema, MANIFEST_FILE_META_SCHEMA);
}

#[test]
fn zstd_lists_and_manifests_decode_like_their_uncompressed_twins() {
    // The same commits on two tables, one with pypaimon's default `zstd` manifests, one
    // with `null`: the lists and manifests decode to the same metas and entries, but for
    // the files' own names and sizes.
    let strip = |mut m: manifest::ManifestFileMeta| {
        (m.file_name, m.file_size) = (String::new(), 0);
        m
    };
    for list in ["base-list", "delta-list"] {
        let zstd = manifest::decode_manifest_list(&fixture("zstd", list)).unwrap();
        let plain = manifest::decode_manifest_list(&fixture("nullcodec", list)).unwrap();
        assert!(!zstd.is_empty(), "{list}");
        assert_eq!(
            zstd.into_iter().map(strip).collect::<Vec<_>>(),
            plain.into_iter().map(strip).collect::<Vec<_>>(),
            "{list}"
        );
    }
    for m in ["manifest-a", "manifest-b"] {
        let zstd = manifest::decode_manifest(&fixture("zstd", m)).unwrap();
        let plain = manifest::decode_manifest(&fixture("nullcodec", m)).unwrap();
        assert_eq!(zstd.len(), plain.len(), "{m}");
        assert!(!zstd.is_empty(), "{m}");
    }
}

#[test]
fn zstd_manifests_merge() {
    // The metas of the two manifests, as the (uncompressed) twin table's lists say,
    // with the zstd files' sizes.
    let mut metas = manifest::decode_manifest_list(&fixture("nullcodec", "base-list")).unwrap();
    metas.extend(manifest::decode_manifest_list(&fixture("nullcodec", "delta-list")).unwrap());
    let (a, b) = (fixture("zstd", "manifest-a"), fixture("zstd", "manifest-b"));
    metas[0].file_size = a.len() as i64;
    metas[1].file_size = b.len() as i64;
    let m = manifest::merge_manifests(&[ColumnType::String], &metas, &[&a, &b], 3)
        .unwrap()
        .unwrap();
    assert_eq!(m.written.len(), 1);
    let merged = avro::read_ocf(&m.written[0].1).unwrap();
    assert_eq!(
        (merged.codec.as_str(), merged.blocks.len()),
        ("zstandard", 2)
    );
    assert_eq!(m.written[0].0.num_added_files, 2);
}

#[test]
fn our_manifest_merges_with_pypaimons() {
    let t = decode_schema(&fixture("nullcodec", "schema-0")).unwrap();
    let f = DataFile {
        partition: vec![Datum::Str("a".into())],
        ..DataFile::single_row("data-ours-0.parquet".into(), 10)
    };
    let (ours, bytes) = manifest::write_manifest(&t, &[f], 3).unwrap();
    let mut metas = manifest::decode_manifest_list(&fixture("nullcodec", "base-list")).unwrap();
    metas.push(ours);
    let theirs = fixture("nullcodec", "manifest-a");
    let m = manifest::merge_manifests(&t.partition_kinds(), &metas, &[&theirs, &bytes], 3)
        .unwrap()
        .unwrap();
    assert_eq!(m.segment.len(), 1, "one header: one merged manifest");
    let entries = manifest::decode_manifest(&m.written[0].1).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].file_name, "data-ours-0.parquet");
    let max = decode_row(&m.written[0].0.partition_max, &[ColumnType::String]).unwrap();
    assert_eq!(max, [Datum::Str("a".into())]);
}
