//! Writes the seed corpus (`corpus/<target>/seed-*`) from real values of the
//! core: run once with `cargo test --release --test seeds -- --ignored`.
//! The committed seeds are what this wrote; rerunning only adds missing files.

use std::path::Path;

use sink_coordinator::{table, Config, Coordinator, Entry, MemEnv, Writer, END};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("seed-{name}"));
    if !path.exists() {
        std::fs::write(path, bytes).unwrap();
    }
}

fn entry(c: u64, cs: &[&str], savepoint: bool) -> Entry {
    Entry {
        checkpoint: c,
        committables: cs.iter().map(|c| c.as_bytes().to_vec()).collect(),
        watermark: Some(c as i64),
        savepoint,
    }
}

#[test]
#[ignore = "tool: regenerates the committed seed corpus, on request"]
fn write_seed_corpus() {
    // Coordinator states and table records of a small job.
    let mut env = MemEnv::default();
    let mut config = Config::new(2, "job");
    config.savepoint_auto_tag = true;
    let mut c = Coordinator::new(config, None);
    c.start(&mut env).unwrap();
    write("state_decode", "fresh", &[1, 0]);
    let mut state = c.checkpoint(&mut env, 1).unwrap();
    write(
        "state_decode",
        "empty",
        &[[2u8, 1].as_slice(), &state].concat(),
    );
    for cp in 1..=3u64 {
        for s in 0..2 {
            c.event(&mut env, s, 0, entry(cp, &["a", "bb"], cp == 2))
                .unwrap();
        }
        state = c.checkpoint(&mut env, cp).unwrap();
        write(
            "state_decode",
            &format!("cp{cp}"),
            &[[2u8, cp as u8].as_slice(), &state].concat(),
        );
        if cp < 3 {
            c.checkpoint_complete(&mut env, cp).unwrap();
        }
    }
    c.event(&mut env, 0, 0, entry(END, &["end"], false))
        .unwrap();
    state = c.checkpoint(&mut env, 4).unwrap();
    write(
        "state_decode",
        "end",
        &[[2u8, 4].as_slice(), &state].concat(),
    );

    for (key, value) in &env.storage.map {
        let name = key.replace('/', "-");
        if key.starts_with(table::SNAPSHOT_PREFIX) {
            write("table_decode", &name, &[[0u8].as_slice(), value].concat());
        } else if key.starts_with(table::TAG_PREFIX) {
            write("table_decode", &name, &[[1u8].as_slice(), value].concat());
        }
    }

    // Writer states.
    let mut w = Writer::new(1);
    w.report(1, vec![b"x".to_vec()], Some(1), false).unwrap();
    w.report(2, vec![b"y".to_vec(), b"z".to_vec()], None, true)
        .unwrap();
    let head = |r: u64| [[1u8].as_slice(), &r.to_le_bytes()].concat();
    write("writer_restore", "two", &[head(2), w.state()].concat());
    w.end_input(vec![b"e".to_vec()], Some(9)).unwrap();
    write("writer_restore", "end", &[head(2), w.state()].concat());
    write(
        "writer_restore",
        "fresh",
        &[head(0), Writer::new(1).state()].concat(),
    );

    // Traces: a few conformance traces.
    let conformance = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance");
    let mut traces: Vec<_> = std::fs::read_dir(&conformance)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.json"))
        .collect();
    traces.sort();
    for path in traces.iter().step_by(6) {
        let bytes = std::fs::read(path).unwrap();
        if bytes.len() < 4096 {
            let name = path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".trace.json", "");
            write("trace_parse", &name, &bytes);
        }
    }
    write("trace_parse", "bom", b"\xEF\xBB\xBF{}");
    write(
        "trace_parse",
        "big-int",
        br#"{"config": {"parallelism": 18446744073709551616, "commit_user": "j"}, "steps": []}"#,
    );

    // Call sequences: bytes read by `arbitrary`.
    for (i, seed) in [
        &b"\x01\x00\x00\x00\x00\x20\x01\x03\x02\x00\x01\x01\x05\x03\x06\x03"[..],
        &b"\x02\x00\x01\x01\x01\x30\x00\x01\x04\x02\x01\x00\x01\x04\x02\x00\x05\x04\x06\x04\x0a\x00\x01\x06\x04"[..],
        &b"\x03\x01\x00\x00\x00\x3c\x00\x00\x03\x02\x00\x00\x09\x00\x01\x00\x01\x06\x03\x0a\x00\x00\x00\x02\x01\x03\x01\x06\x03"[..],
    ]
    .iter()
    .enumerate()
    {
        write("calls", &format!("{i}"), seed);
    }

    // Hostile table records (issue 26): a self-link, a forward link, a mark
    // past the record, a record that does not mark itself.
    let mark = |identifier, snapshot_id| table::UserMark {
        identifier,
        snapshot_id,
    };
    let hostile = |name: &str, id, previous, users: &[(&str, table::UserMark)]| {
        let record = table::StoredSnapshot {
            snapshot: sink_coordinator::Snapshot {
                id,
                commit_user: "job".into(),
                identifier: 5,
                watermark: None,
                time_ms: 0,
                committables: vec![(0, b"x".to_vec())],
            },
            previous_of_user: previous,
            users: users.iter().map(|(u, m)| (u.to_string(), *m)).collect(),
        };
        let value = table::encode_snapshot(&record);
        write("table_decode", name, &[[0u8].as_slice(), &value].concat());
        write(
            "table_decode",
            &format!("{name}-table"),
            &[[1u8].as_slice(), &value].concat(),
        );
    };
    hostile("self-link", 2, Some(mark(5, 2)), &[("job", mark(5, 2))]);
    hostile("forward-link", 2, Some(mark(4, 3)), &[("job", mark(5, 2))]);
    hostile(
        "mark-past-record",
        2,
        None,
        &[("job", mark(5, 2)), ("v", mark(1, 9))],
    );
    hostile("no-own-mark", 2, None, &[("job", mark(4, 1))]);
    // Whole hostile tables: the target reads its table from these bytes
    // (any bytes make a table; these make several records each).
    for i in 0..12u32 {
        let mut x = 0x9e37_79b9u32.wrapping_mul(i + 1);
        let bytes: Vec<u8> = (0..160)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect();
        write("table_walk", &format!("{i:02}"), &bytes);
    }
}
