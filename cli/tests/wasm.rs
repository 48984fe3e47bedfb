//! `sinkcoord wasm`: the embedded artifact's name, size and digest, and
//! `--out FILE` writing exactly the embedded bytes (issue 14, item 3).

use std::process::Command;

use sha2::{Digest, Sha256};
use sink_coordinator_host::artifact::{EMBEDDED_WASM, EMBEDDED_WASM_NAME};

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn wasm_prints_name_size_and_digest() {
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .arg("wasm")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(EMBEDDED_WASM_NAME), "{text}");
    assert!(
        text.contains(&format!("{} bytes", EMBEDDED_WASM.len())),
        "{text}"
    );
    assert!(text.contains(&hex_sha256(EMBEDDED_WASM)), "{text}");
}

#[test]
fn wasm_out_writes_the_embedded_artifact() {
    let dir = std::env::temp_dir().join(format!("sinkcoord-wasm-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("coordinator.wasm");
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args(["wasm", "--out"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&file).unwrap(), EMBEDDED_WASM);
    // The committed digest file names the same bytes.
    let committed = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../dist")
            .join(format!("{EMBEDDED_WASM_NAME}.sha256")),
    )
    .unwrap();
    assert_eq!(
        committed,
        format!("{}  {EMBEDDED_WASM_NAME}\n", hex_sha256(EMBEDDED_WASM))
    );
    // A directory that does not exist: exit 1 with the path named.
    let bad = dir.join("missing").join("x.wasm");
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .args(["wasm", "--out"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A component of another WIT version (`--component` with the committed
/// 0.1.0 artifact) is refused when loaded: exit 1, one line naming the
/// range this build runs and the version found.
#[test]
fn an_incompatible_component_is_refused_with_the_range_and_version() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_sinkcoord"))
        .arg("--component")
        .arg(root.join("dist/sink-coordinator-0.1.0.wasm"))
        .arg("replay")
        .arg(root.join("tests/conformance/a02-commit-single-subtask.trace.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, \
             the component is sink:coordinator@0.1.0"
        ),
        "{stderr}"
    );
}
