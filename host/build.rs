//! Builds the guest crate as a WebAssembly component and embeds it.
//!
//! 1. A nested `cargo rustc` compiles `guest/` for `wasm32-unknown-unknown`
//!    as a `cdylib` with the `wasm` profile. It uses its own target directory
//!    (`target/guest`): the outer cargo holds the lock of the outer target
//!    directory while build scripts run, so sharing it deadlocks.
//! 2. `wit_component::ComponentEncoder` turns the core module (which carries
//!    the component type that wit-bindgen embedded) into a validated component.
//! 3. The component is written to `OUT_DIR` (embedded by `src/engine.rs`) and
//!    to the stable path `target/sink-coordinator.wasm`, whose path is exported
//!    as `SINK_COORDINATOR_WASM`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WASM_TARGET: &str = "wasm32-unknown-unknown";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // Cargo shows a build script's stderr when it fails.
            eprintln!("error: building the sink-coordinator component failed:\n{message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(var("CARGO_MANIFEST_DIR")?);
    let ws = manifest_dir
        .parent()
        .ok_or("host/ has no parent directory")?
        .to_path_buf();
    let out_dir = PathBuf::from(var("OUT_DIR")?);

    for path in [
        "guest/src",
        "guest/Cargo.toml",
        "wit",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", ws.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=RUSTUP_TOOLCHAIN");

    check_wasm_target()?;

    let guest_target = ws.join("target").join("guest");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(&cargo)
        .current_dir(&ws)
        .arg("rustc")
        .arg("--manifest-path")
        .arg(ws.join("guest").join("Cargo.toml"))
        .args([
            "-p",
            "sink-coordinator",
            "--lib",
            "--locked",
            "--profile",
            "wasm",
        ])
        .args(["--target", WASM_TARGET, "--crate-type", "cdylib"])
        .arg("--target-dir")
        .arg(&guest_target)
        // Flags meant for the host build (coverage, sanitizers, a target
        // override) must not leak into the wasm build.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .output()
        .map_err(|e| format!("cannot run `{cargo}`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo rustc` for the guest failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }

    let core_path = guest_target
        .join(WASM_TARGET)
        .join("wasm")
        .join("sink_coordinator.wasm");
    let core =
        fs::read(&core_path).map_err(|e| format!("cannot read {}: {e}", core_path.display()))?;
    let component = wit_component::ComponentEncoder::default()
        .module(&core)
        .and_then(|enc| enc.validate(true).encode())
        .map_err(|e| format!("componentizing {} failed: {e:?}", core_path.display()))?;

    let embedded = out_dir.join("sink_coordinator.wasm");
    write_if_changed(&embedded, &component)?;
    let stable = ws.join("target").join("sink-coordinator.wasm");
    write_if_changed(&stable, &component)?;
    println!("cargo:rustc-env=SINK_COORDINATOR_WASM={}", stable.display());
    Ok(())
}

fn var(name: &str) -> Result<String, String> {
    env::var(name).map_err(|_| format!("environment variable {name} is not set"))
}

/// Fails early, with the fix, when the wasm target's standard library is
/// missing (RUSTUP_AUTO_INSTALL=0 means rustup will not fetch it for us).
fn check_wasm_target() -> Result<(), String> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run `{rustc} --print sysroot`: {e}"))?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let lib = Path::new(&sysroot)
        .join("lib")
        .join("rustlib")
        .join(WASM_TARGET);
    if out.status.success() && !sysroot.is_empty() && !lib.is_dir() {
        return Err(format!(
            "the Rust target `{WASM_TARGET}` is not installed (no {}).\n\
             Install it with:\n\n    rustup target add {WASM_TARGET}\n",
            lib.display()
        ));
    }
    Ok(())
}

/// Rewrites `path` only when its content changes, so an unchanged component
/// does not bump mtimes (and does not make anything downstream rebuild).
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if fs::read(path).map(|old| old == bytes).unwrap_or(false) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Write then rename: a concurrent reader of the stable path never sees a
    // half-written component.
    let tmp = path.with_extension(format!("wasm.tmp{}", std::process::id()));
    fs::write(&tmp, bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("cannot rename to {}: {e}", path.display()))
}
