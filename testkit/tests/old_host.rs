//! 0.2.1 and 0.2.2 are additive: a host built against the 0.2.0 WIT
//! (bindings of `dist/sink-coordinator-0.2.0.wit`, imports named `@0.2.0`)
//! links and runs the component this crate embeds (0.2.2), by wasmtime's
//! semver matching of `0.2.x` names, and commits through `event` as before;
//! a host built against the 0.2.1 WIT does the same through `events`.

/// A host built against the WIT at `$wit`: its bindings, a storage over
/// `MemStorage`, a clock at 7, and `instantiate` (the embedded component in
/// a fresh store) and `config` (a checkpointing coordinator of
/// `parallelism` writers). A macro because each WIT version's bindings are
/// their own types: the same host code is written once and compiled per
/// version.
macro_rules! old_host {
    ($wit:literal) => {
        use sink_coordinator::{MemStorage, Storage};
        use sink_coordinator_host::artifact::EMBEDDED_WASM;
        use wasmtime::component::{Component, HasSelf, Linker};
        use wasmtime::{Engine, Store};

        mod bindings {
            wasmtime::component::bindgen!({ path: $wit, world: "sink-coordinator" });
        }
        use bindings::exports::sink::coordinator::types as wit;
        use bindings::sink::coordinator::{clock as wit_clock, storage as wit_storage};
        use bindings::SinkCoordinator;

        struct Data(MemStorage);

        fn io(e: sink_coordinator::StorageError) -> wit_storage::StorageError {
            wit_storage::StorageError::Io(e.to_string())
        }

        impl wit_storage::Host for Data {
            fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, wit_storage::StorageError> {
                self.0.get(&key).map_err(io)
            }
            fn put_if_absent(
                &mut self,
                key: String,
                value: Vec<u8>,
            ) -> Result<bool, wit_storage::StorageError> {
                self.0.put_if_absent(&key, &value).map_err(io)
            }
            fn put(&mut self, key: String, value: Vec<u8>) -> Result<(), wit_storage::StorageError> {
                self.0.put(&key, &value).map_err(io)
            }
            fn delete(&mut self, key: String) -> Result<(), wit_storage::StorageError> {
                self.0.delete(&key).map_err(io)
            }
            fn list(&mut self, prefix: String) -> Result<Vec<String>, wit_storage::StorageError> {
                self.0.list(&prefix).map_err(io)
            }
        }

        impl wit_clock::Host for Data {
            fn now_ms(&mut self) -> u64 {
                7
            }
        }

        /// The embedded (current) component, linked by these bindings.
        fn instantiate() -> (Store<Data>, SinkCoordinator) {
            let engine = Engine::default();
            let component = Component::new(&engine, EMBEDDED_WASM).unwrap();
            let mut linker = Linker::new(&engine);
            SinkCoordinator::add_to_linker::<Data, HasSelf<Data>>(&mut linker, |d| d).unwrap();
            let mut store = Store::new(&engine, Data(MemStorage::default()));
            let b = SinkCoordinator::instantiate(&mut store, &component, &linker)
                .expect(concat!("the bindings of ", $wit, " link the current component"));
            (store, b)
        }

        fn config(parallelism: u32) -> wit::Config {
            wit::Config {
                parallelism,
                commit_user: "old-host".into(),
                checkpointing: true,
                final_commit: wit::FinalCommitMode::OnCheckpoint,
                force_create_snapshot: false,
                savepoint_auto_tag: false,
                tag_time_retained_ms: None,
                recovery: wit::RecoveryMode::Restart,
            }
        }
    };
}

/// A 0.2.0 host: its bindings know `event` only.
mod v0_2_0 {
    old_host!("../dist/sink-coordinator-0.2.0.wit");

    #[test]
    fn a_0_2_0_host_runs_the_current_component() {
        let (mut store, b) = instantiate();
        let c = b.sink_coordinator_coordinator().coordinator();
        let h = c.call_constructor(&mut store, &config(1), None).unwrap();
        let started = c.call_start(&mut store, h).unwrap().unwrap();
        assert_eq!(started.state, wit::Lifecycle::Running);
        let entry = wit::Entry {
            checkpoint: 1,
            committables: vec![b"file-1".to_vec()],
            watermark: None,
            savepoint: false,
        };
        c.call_event(&mut store, h, 0, 0, &entry).unwrap().unwrap();
        c.call_checkpoint(&mut store, h, 1).unwrap().unwrap();
        let done = c
            .call_checkpoint_complete(&mut store, h, 1)
            .unwrap()
            .unwrap();
        assert_eq!(done.committed, vec![1]);
        assert_eq!(done.committed_up_to, Some(1));
    }
}

/// A 0.2.1 host: its bindings know `events` but not `events-packed`.
mod v0_2_1 {
    old_host!("../dist/sink-coordinator-0.2.1.wit");

    #[test]
    fn a_0_2_1_host_runs_the_current_component_through_events() {
        let (mut store, b) = instantiate();
        let c = b.sink_coordinator_coordinator().coordinator();
        let h = c.call_constructor(&mut store, &config(2), None).unwrap();
        c.call_start(&mut store, h).unwrap().unwrap();
        let events: Vec<wit::WriterEvent> = (0..2)
            .map(|s| wit::WriterEvent {
                subtask: s,
                attempt: 0,
                entry: wit::Entry {
                    checkpoint: 1,
                    committables: vec![format!("file-{s}").into_bytes(), Vec::new()],
                    watermark: None,
                    savepoint: false,
                },
            })
            .collect();
        let o = c.call_events(&mut store, h, &events).unwrap().unwrap();
        assert_eq!(o.state, wit::Lifecycle::Running);
        c.call_checkpoint(&mut store, h, 1).unwrap().unwrap();
        let done = c
            .call_checkpoint_complete(&mut store, h, 1)
            .unwrap()
            .unwrap();
        assert_eq!(done.committed, vec![1]);
    }
}
