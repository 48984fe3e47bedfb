//! A Paimon table written through the component is the native core's, byte for byte
//! (issue 22: "native and component give the same table bytes"): the same job, with a
//! savepoint, an abort, a failover restored from a checkpoint and END, on one in-memory
//! table each, then every key and value compared.

use std::collections::BTreeMap;

use sink_coordinator::{
    Config, CoordinatorApi, Entry, ErrorKind, HostEnv, HostErrorKind, MemStorage,
    NativeCoordinator, RestorePoint, Shared, StepClock, Storage, TableFormatKind, END,
};
use sink_coordinator_host::engine::EMBEDDED_WASM;
use sink_coordinator_host::{ComponentCoordinator, Runtime, RuntimeOptions};
use sink_coordinator_paimon::committable::{encode, DataFile};
use sink_coordinator_paimon::{encode_schema, CreateTable};

fn schema() -> Vec<u8> {
    let t = CreateTable {
        columns: &[("id", "BIGINT"), ("name", "STRING")],
        partition_keys: &[],
        options: &[("file.format", "parquet")],
    };
    encode_schema(&t, 1_700_000_000_000).unwrap()
}

fn file(s: u32, c: u64, i: u64) -> Vec<u8> {
    encode(&DataFile {
        file_name: format!("data-s{s}-c{c}-{i}.parquet"),
        file_size: 100 + i,
        row_count: 3 + i,
        schema_id: 0,
        min_sequence_number: 0,
        max_sequence_number: 2 + i as i64,
        creation_time_millis: 1_700_000_000_000,
        partition: Vec::new(),
        value_stats: Vec::new(),
    })
}

fn entry(s: u32, c: u64, savepoint: bool) -> Entry {
    Entry {
        checkpoint: c,
        committables: vec![file(s, c, 0), file(s, c, 1)].into(),
        watermark: Some(c.min(1_000) as i64 * 1_000),
        savepoint,
    }
}

type Make<'a> = dyn FnMut(Option<RestorePoint>) -> Box<dyn CoordinatorApi> + 'a;

/// The job: checkpoints 1..=3 (a savepoint at 2, 3 aborted), 4 checkpointed but not
/// completed, a global failover restored from 4, then END.
fn job(make: &mut Make<'_>) {
    let mut c = make(None);
    c.start().unwrap();
    let mut state_4 = Vec::new();
    for cp in 1..=4u64 {
        for s in 0..2 {
            c.event(s, 0, entry(s, cp, cp == 2)).unwrap();
        }
        let state = c.checkpoint(cp).unwrap();
        match cp {
            3 => {
                c.checkpoint_aborted(cp).unwrap();
            }
            4 => state_4 = state,
            _ => {
                c.checkpoint_complete(cp).unwrap();
            }
        }
    }
    drop(c);
    let mut c = make(Some(RestorePoint {
        checkpoint: 4,
        state: state_4,
        finished_subtasks: Vec::new(),
    }));
    c.start().unwrap();
    for s in 0..2 {
        c.restored(s, 1, 4, vec![entry(s, 3, false), entry(s, 4, false)])
            .unwrap();
        c.event(s, 1, entry(s, END, false)).unwrap();
    }
    c.checkpoint(5).unwrap();
    let o = c.checkpoint_complete(5).unwrap();
    assert_eq!(o.committed_up_to, Some(END), "{o:?}");
}

fn config() -> Config {
    let mut c = Config::new(2, "paimon-job");
    c.savepoint_auto_tag = true;
    c
}

fn table(storage: &Shared<MemStorage>) -> BTreeMap<String, Vec<u8>> {
    let mut st = storage.clone();
    let mut out = BTreeMap::new();
    for k in st.list("").unwrap() {
        let v = st.get(&k).unwrap().unwrap();
        out.insert(k, v);
    }
    out
}

fn fresh() -> (Shared<MemStorage>, Shared<StepClock>) {
    let storage = Shared::new(MemStorage::default());
    storage.clone().put("schema/schema-0", &schema()).unwrap();
    (storage, Shared::new(StepClock::new(1_700_000_000_000, 7)))
}

#[test]
fn component_and_native_write_the_same_paimon_table() {
    let (native_st, native_clock) = fresh();
    job(&mut |restore| {
        let env = HostEnv::new(native_st.clone(), native_clock.clone());
        let mut c = NativeCoordinator::new(config(), restore, env);
        c.set_table_format(TableFormatKind::Paimon).unwrap();
        Box::new(c)
    });
    let options = RuntimeOptions {
        table_format: TableFormatKind::Paimon,
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::new(EMBEDDED_WASM, options).unwrap();
    let (comp_st, comp_clock) = fresh();
    job(&mut |restore| {
        let env = HostEnv::new(comp_st.clone(), comp_clock.clone());
        Box::new(ComponentCoordinator::new(&runtime, env, &config(), restore.as_ref()).unwrap())
    });
    let native = table(&native_st);
    let component = table(&comp_st);
    assert!(
        native.contains_key("snapshot/snapshot-4"),
        "{:?}",
        native.keys()
    );
    assert!(
        native.contains_key("tag/tag-savepoint-2"),
        "{:?}",
        native.keys()
    );
    assert_eq!(
        native.keys().collect::<Vec<_>>(),
        component.keys().collect::<Vec<_>>()
    );
    for (k, v) in &native {
        assert!(
            component[k] == *v,
            "{k} differs between native and component"
        );
    }
}

#[test]
fn the_component_refuses_a_bad_committable_on_paimon() {
    let options = RuntimeOptions {
        table_format: TableFormatKind::Paimon,
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::new(EMBEDDED_WASM, options).unwrap();
    let (st, clock) = fresh();
    let env = HostEnv::new(st.clone(), clock);
    let mut c = ComponentCoordinator::new(&runtime, env, &config(), None).unwrap();
    c.start().unwrap();
    let bad = Entry {
        checkpoint: 1,
        committables: vec![vec![0u8]].into(),
        watermark: None,
        savepoint: false,
    };
    let e = c.event(1, 0, bad).unwrap_err();
    assert_eq!(e.kind, HostErrorKind::Core(ErrorKind::InvalidEvent), "{e}");
    assert!(
        e.message.contains("subtask 1") && e.message.contains("checkpoint 1"),
        "{e}"
    );
    assert_eq!(
        table(&st).len(),
        1,
        "only the schema: {:?}",
        table(&st).keys()
    );
}
