//! Decoders take untrusted bytes (writers' committables, other writers' files): mutated
//! inputs must give errors, never panics (a panic in the component is a trap).

use sink_coordinator_paimon::committable::{self, ColumnStats, DataFile};
use sink_coordinator_paimon::manifest::{self, MergeOptions};
use sink_coordinator_paimon::naming::Role;
use sink_coordinator_paimon::{avro, decode_row, decode_schema, encode_schema, snapshot};
use sink_coordinator_paimon::{ColumnType, CreateTable, Datum};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(4) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b.truncate(i);
            }
            2 => {
                let i = rng.below(b.len() + 1);
                b.insert(i, rng.next() as u8);
            }
            _ if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            _ => {}
        }
    }
    b
}

#[test]
fn mutated_inputs_never_panic() {
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("dt", "STRING"), ("h", "INT")],
        partition_keys: &["dt", "h"],
        options: &[],
    };
    let schema_bytes = encode_schema(&t, 1).unwrap();
    let table = decode_schema(&schema_bytes).unwrap();
    let file = DataFile {
        file_name: "data-a-0.parquet".into(),
        file_size: 99,
        row_count: 3,
        schema_id: 0,
        min_sequence_number: 0,
        max_sequence_number: 2,
        creation_time_millis: 5,
        partition: vec![Datum::Str("2024-01-01-long".into()), Datum::Int(3)],
        value_stats: vec![ColumnStats {
            column: "id".into(),
            min: Datum::Long(1),
            max: Datum::Long(3),
            null_count: Some(0),
        }],
    };
    let c = committable::encode(&file);
    let (meta, man) = manifest::write_manifest(&table, &[file.clone(), file], 1).unwrap();
    let (_, list) = manifest::write_manifest_list(&[meta.clone(), meta.clone()], Role::BaseList, 1);
    let snap = snapshot::Snapshot::new_append(&snapshot::NewSnapshot {
        id: 1,
        schema_id: 0,
        base_manifest_list: ("a", 1),
        delta_manifest_list: ("b", 2),
        commit_user: "u",
        commit_identifier: 7,
        time_millis: 1,
        total_record_count: 6,
        delta_record_count: 6,
        watermark: Some(-5),
        marks: &snapshot::Marks::default().advance("u", 7, 1),
    })
    .encode();
    let kinds = [ColumnType::String, ColumnType::Int];
    // ROBUST_ITERS=N ROBUST_SEED=S for a longer local campaign.
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let iters = env("ROBUST_ITERS", 20_000);
    let zstd: Vec<Vec<u8>> = ["base-list", "manifest-a"]
        .iter()
        .map(|f| {
            let p = format!(
                "{}/testdata/pypaimon-2.1.0/zstd/{f}",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
        })
        .collect();
    let mut rng = Rng(env("ROBUST_SEED", 0x9E37_79B9_7F4A_7C15) | 1);
    let mut accepted = 0u64;
    for _ in 0..iters {
        let x = mutate(&mut rng, &c);
        accepted += committable::decode(&x, &table).is_ok() as u64;
        let x = mutate(&mut rng, &schema_bytes);
        accepted += decode_schema(&x).is_ok() as u64;
        let x = mutate(&mut rng, &snap);
        if let Ok(s) = snapshot::decode_snapshot(&x) {
            let _ = s.marks();
            let _ = s.encode();
        }
        let x = mutate(&mut rng, &list);
        if let Ok(ms) = manifest::decode_manifest_list(&x) {
            for m in &ms {
                let _ = decode_row(&m.partition_min, &kinds);
            }
            let _ = manifest::plan_merge(
                &ms,
                &MergeOptions {
                    max_manifests: 0,
                    ..MergeOptions::default()
                },
            );
        }
        let x = mutate(&mut rng, &man);
        let _ = manifest::decode_manifest(&x);
        // The read-back: a decoded entry re-encodes as a committable without a panic.
        if let Ok(entries) = manifest::decode_manifest_files(&x, &table) {
            for e in &entries {
                let _ = committable::encode(&e.file);
            }
        }
        let _ = avro::read_records(&x);
        // pypaimon's zstd-compressed list and manifest: mutated frames decompress or fail,
        // never panic, and stay within the decompressed bound.
        for z in &zstd {
            let x = mutate(&mut rng, z);
            let _ = manifest::decode_manifest_list(&x);
            let _ = manifest::decode_manifest(&x);
        }
        let runs = mutate(&mut rng, b"0:2,13:1,4294967295:3");
        if let Ok(runs) = std::str::from_utf8(&runs) {
            let _ = sink_coordinator_paimon::subtasks::decode_runs(runs, 6);
        }
        let mut m2 = meta.clone();
        m2.file_size = x.len() as i64;
        let _ = manifest::merge_manifests(&kinds, &[meta.clone(), m2], &[&man, &x], 2);
        let row = mutate(&mut rng, &meta.partition_min);
        let _ = decode_row(&row, &kinds);
    }
    // Some mutations keep the input valid (e.g. a changed name byte); most do not.
    assert!(accepted > 0 && accepted < 2 * iters, "{accepted}");
}
