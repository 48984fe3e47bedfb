//! The storage conformance suite with its process cases (`sinkcoord storage
//! race|fill` as the helper): the local directory (also durability across a
//! kill) and S3 on a moto server started here (also an ambiguous failure
//! through a proxy that drops responses).

use std::path::PathBuf;

use sink_coordinator_host::storage::{open_url_with, LocalDirStorage};
use sink_coordinator_testkit::moto::{DroppingProxy, Moto};
use sink_coordinator_testkit::storage_conformance::{
    run, Backend, Handle, Options, ProcessHelper, Report,
};

fn helper(env: Vec<(String, String)>) -> ProcessHelper {
    ProcessHelper {
        program: PathBuf::from(env!("CARGO_BIN_EXE_sinkcoord")),
        env,
    }
}

fn passes(backend: &dyn Backend, helper: &ProcessHelper) -> Report {
    match run(backend, Some(helper), &Options::default()) {
        Ok(report) => {
            eprintln!("{}: {report:?}", backend.name());
            report
        }
        Err(failures) => panic!("{}", failures.join("\n")),
    }
}

struct LocalDir {
    base: PathBuf,
}

impl Backend for LocalDir {
    fn name(&self) -> String {
        "local directory".into()
    }
    fn open(&self, table: &str) -> Result<Handle, String> {
        LocalDirStorage::open(self.base.join(table))
            .map(|s| Box::new(s) as Handle)
            .map_err(|e| e.to_string())
    }
    fn url(&self, table: &str) -> Option<String> {
        Some(format!("file://{}", self.base.join(table).display()))
    }
    fn durable(&self) -> bool {
        true
    }
}

#[test]
fn local_dir_conforms_across_processes() {
    let base = std::env::temp_dir().join(format!("sinkcoord-conf-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let report = passes(&LocalDir { base: base.clone() }, &helper(Vec::new()));
    // Every case but the ambiguous failure (a directory cannot produce one).
    assert_eq!(report.cases.len(), 9, "{report:?}");
    let (keys, a, b, existed) = report.process_race.expect("processes raced");
    assert_eq!((a + b, existed), (keys, keys));
    let (acked, found) = report.durability.expect("durability checked");
    assert_eq!(acked, found);
    let _ = std::fs::remove_dir_all(&base);
}

struct S3<'m> {
    moto: &'m Moto,
    /// `s3://sinkcoord-test/<run>`: the tables live below it.
    base: String,
    proxy: DroppingProxy,
}

impl Backend for S3<'_> {
    fn name(&self) -> String {
        format!("S3 (moto at {})", self.moto.endpoint())
    }
    fn open(&self, table: &str) -> Result<Handle, String> {
        Ok(Box::new(self.moto.open(&format!("{}/{table}", self.base))?))
    }
    fn url(&self, table: &str) -> Option<String> {
        Some(format!("{}/{table}", self.base))
    }
    fn open_ambiguous(&self, table: &str) -> Option<Result<Handle, String>> {
        let mut options = self.moto.options();
        for (k, v) in &mut options {
            if k == "aws_endpoint" {
                *v = self.proxy.endpoint();
            }
        }
        Some(
            open_url_with(&format!("{}/{table}", self.base), true, &options)
                .map(|s| Box::new(s) as Handle)
                .map_err(|e| e.to_string()),
        )
    }
}

#[test]
fn s3_on_moto_conforms() {
    let moto = Moto::start().unwrap_or_else(|e| panic!("{e}"));
    let proxy = DroppingProxy::start(moto.endpoint()).unwrap_or_else(|e| panic!("{e}"));
    let backend = S3 {
        base: moto.fresh_url("conformance"),
        moto: &moto,
        proxy,
    };
    let report = passes(&backend, &helper(moto.env()));
    // Every case but durability across a kill (nothing of an acknowledged
    // object lives in the writing process).
    assert_eq!(report.cases.len(), 9, "{report:?}");
    assert_eq!(report.thread_race, (50, 50, 350));
    let (keys, a, b, existed) = report.process_race.expect("processes raced");
    assert_eq!((a + b, existed), (keys, keys));
}
