//! Regression mode: every file of `corpus/<target>/` through its target
//! once (stable Rust, no libFuzzer). A crash that fuzzing finds is fixed and
//! its input added to the target's corpus, so it stays fixed.
//!
//! `cargo test --release --manifest-path fuzz/Cargo.toml`

use std::path::Path;

type Target = fn(&[u8]);

/// `TARGETS`, and a test per target (named after it) that runs its corpus:
/// one list, so a target cannot be missing from either.
macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        const TARGETS: &[(&str, Target)] = &[$((stringify!($name), sink_coordinator_fuzz::$name)),*];

        /// Each target's committed corpus, one test per target.
        mod corpus {
            $(
                #[test]
                fn $name() {
                    super::run(stringify!($name), sink_coordinator_fuzz::$name);
                }
            )*
        }
    };
}

targets!(
    state_decode,
    writer_restore,
    table_decode,
    trace_parse,
    calls,
    table_walk,
);

fn run(name: &str, target: Target) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no seed corpus", dir.display());
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| target(&data));
        assert!(
            outcome.is_ok(),
            "{name}: {} crashes the target",
            file.display()
        );
    }
    println!("{name}: {} input(s)", files.len());
}

/// Replays one input (`SINKCOORD_FUZZ_INPUT=FILE`, target `SINKCOORD_FUZZ_TARGET`,
/// default `calls`); with `SINKCOORD_FUZZ_TRACE=1` the calls are printed.
#[test]
#[ignore = "tool: replays one input named by SINKCOORD_FUZZ_INPUT, on request"]
fn replay_one_input() {
    let Some(file) = std::env::var_os("SINKCOORD_FUZZ_INPUT") else {
        return;
    };
    let name = std::env::var("SINKCOORD_FUZZ_TARGET").unwrap_or_else(|_| "calls".into());
    let (_, target) = TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a target name");
    target(&std::fs::read(file).unwrap());
}
