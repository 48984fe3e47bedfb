use super::*;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field as PField;
use sink_coordinator_paimon::committable::decode;
use sink_coordinator_paimon::schema::{decode_schema, encode_schema, CreateTable};

fn table(partition: &[&str]) -> TableSchema {
    let t = CreateTable {
        columns: &[
            ("id", "BIGINT NOT NULL"),
            ("name", "STRING"),
            ("dt", "STRING"),
            ("h", "INT"),
            ("ok", "BOOLEAN"),
        ],
        partition_keys: partition,
        options: &[],
    };
    decode_schema(&encode_schema(&t, 0).unwrap()).unwrap()
}

fn row(id: i64, name: Option<&str>, dt: &str, h: i32) -> Vec<Datum> {
    vec![
        Datum::Long(id),
        name.map_or(Datum::Null, |n| Datum::Str(n.into())),
        Datum::Str(dt.into()),
        Datum::Int(h),
        Datum::Bool(id % 2 == 0),
    ]
}

#[test]
fn a_file_reads_back_and_its_committable_decodes() {
    let t = table(&["dt"]);
    let mut w = DataFileWriter::new(
        &t,
        "data-s0-a0-1-0.parquet",
        vec![Datum::Str("2026-12-02".into())],
        10,
        1_700_000_000_000,
    )
    .unwrap();
    for i in 0..100 {
        let name = (i % 7 != 0).then(|| format!("n{i}"));
        w.write_row(&row(i, name.as_deref(), "2026-12-02", (i % 24) as i32))
            .unwrap();
    }
    let f = w.finish().unwrap();
    assert_eq!(f.key, "dt=2026-12-02/bucket-0/data-s0-a0-1-0.parquet");
    assert_eq!(&f.bytes[..4], b"PAR1");

    let meta = decode(&f.committable(), &t).unwrap();
    assert_eq!(meta, f.meta);
    assert_eq!(meta.row_count, 100);
    assert_eq!(meta.file_size, f.bytes.len() as u64);
    assert_eq!(
        (meta.min_sequence_number, meta.max_sequence_number),
        (10, 109)
    );
    let id = &meta.value_stats[0];
    assert_eq!(
        (id.min.clone(), id.max.clone(), id.null_count),
        (Datum::Long(0), Datum::Long(99), Some(0))
    );
    let name = &meta.value_stats[1];
    assert_eq!(name.null_count, Some(15));
    assert_eq!(
        (name.min.clone(), name.max.clone()),
        (Datum::Str("n1".into()), Datum::Str("n99".into()))
    );

    let reader = SerializedFileReader::new(bytes::Bytes::from(f.bytes.clone())).unwrap();
    let schema = reader.metadata().file_metadata().schema_descr();
    let ids: Vec<Option<i32>> = (0..schema.num_columns())
        .map(|i| {
            schema
                .column(i)
                .self_type()
                .get_basic_info()
                .has_id()
                .then(|| schema.column(i).self_type().get_basic_info().id())
        })
        .collect();
    assert_eq!(ids, vec![Some(0), Some(1), Some(2), Some(3), Some(4)]);
    let rows: Vec<_> = reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(rows.len(), 100);
    let (_, first_name) = rows[1].get_column_iter().nth(1).unwrap();
    assert_eq!(first_name, &PField::Str("n1".into()));
    let (_, null_name) = rows[7].get_column_iter().nth(1).unwrap();
    assert_eq!(null_name, &PField::Null);
}

#[test]
fn the_same_rows_give_the_same_bytes() {
    let t = table(&[]);
    let file = || {
        let mut w = DataFileWriter::new(&t, "data-x-0.parquet", vec![], 0, 0).unwrap();
        for i in 0..10 {
            w.write_row(&row(i, Some("a"), "d", 1)).unwrap();
        }
        w.finish().unwrap()
    };
    assert_eq!(file(), file());
}

#[test]
fn bad_rows_and_names_are_refused() {
    let t = table(&["dt", "h"]);
    let p = || vec![Datum::Str("d".into()), Datum::Int(3)];
    assert_eq!(
        DataFileWriter::new(&t, "a/b.parquet", p(), 0, 0).err(),
        Some(WriteError::FileName)
    );
    assert_eq!(
        DataFileWriter::new(&t, "x.parquet", vec![Datum::Int(1)], 0, 0).err(),
        Some(WriteError::Partition)
    );
    let mut w = DataFileWriter::new(&t, "x.parquet", p(), 0, 0).unwrap();
    assert_eq!(
        w.write_row(&[Datum::Long(1)]),
        Err(WriteError::Arity {
            expected: 5,
            got: 1
        })
    );
    let mut bad = row(1, None, "d", 3);
    bad[0] = Datum::Null;
    assert_eq!(
        w.write_row(&bad),
        Err(WriteError::Type {
            column: "id".into()
        })
    );
    assert_eq!(
        w.write_row(&row(1, None, "e", 3)),
        Err(WriteError::OtherPartition)
    );
    assert_eq!(w.rows(), 0);
    w.write_row(&row(1, None, "d", 3)).unwrap();
    let f = w.finish().unwrap();
    assert_eq!(f.key, "dt=d/h=3/bucket-0/x.parquet");
    assert_eq!(f.meta.row_count, 1);
}
