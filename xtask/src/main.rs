//! `cargo run -p xtask -- <task>`: the one place the component is built.
//!
//! - `component [--out-dir DIR] [--workspace DIR]`: builds `guest/` for
//!   `wasm32-unknown-unknown` (profile `wasm`, `--locked`, its own target
//!   directory `target/component`), encodes the core module as a component
//!   with wit-component, and writes `sink-coordinator-<version>.wasm`, its
//!   `.wit` and its `.wasm.sha256` to DIR (default `dist/`). `--workspace`
//!   builds another checkout (an older commit, for its artifact).
//!   Beside them it writes the component's core module,
//!   `sink-coordinator-<version>.core.wasm` and its `.core.wasm.sha256`
//!   (the artifact of core-only runtimes: wazero, Chicory; see
//!   [`core_module`]).
//! - `core-module [--component FILE] [--out-dir DIR]`: only that last step,
//!   from an existing component (default the committed
//!   `dist/sink-coordinator-<version>.wasm`), without building the guest.
//! - `check-dist`: the same build into a temporary directory; fails when
//!   `dist/` holds other bytes than the sources build (core module included).
//! - `abi-layout`: writes the canonical-ABI layouts of `wit/` that the Go,
//!   JVM, Python and Node hosts use (`hosts/abi/layout.json` and one
//!   constants file per language; see [`abi_layout`], [`abi_emit`]).
//! - `abi-check`: fails when one of those files is stale, or when the
//!   committed core module's exports and post-returns are not the ones the
//!   description names.
//!
//! The bytes are reproducible whatever the checkout's path, the cargo home,
//! the user or the machine (see [`build`]).

mod abi_emit;
mod abi_layout;
mod build;
mod core_module;
mod fn_size;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

const USAGE: &str =
    "usage: cargo run -p xtask -- component [--out-dir DIR] [--workspace DIR]\n       \
                     cargo run -p xtask -- core-module [--component FILE] [--out-dir DIR]\n       \
                     cargo run -p xtask -- check-dist\n       \
                     cargo run -p xtask -- abi-layout | abi-check";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let root = repo_root();
    let mut args = args.into_iter();
    let task = args.next().unwrap_or_default();
    let mut out_dir = None;
    let mut workspace = None;
    let mut component = None;
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--out-dir" => out_dir = Some(PathBuf::from(value)),
            "--workspace" => workspace = Some(PathBuf::from(value)),
            "--component" => component = Some(PathBuf::from(value)),
            _ => bail!("unknown option {flag:?}\n{USAGE}"),
        }
    }
    match task.as_str() {
        "component" => {
            let ws = workspace.unwrap_or_else(|| root.clone());
            let out = out_dir.unwrap_or_else(|| root.join("dist"));
            let built = build::component(&ws, &wasm_opt(&root))?;
            let files = built.write(&out)?;
            // The unstripped copy, for symbolized backtraces (`sinkcoord
            // --component FILE --verbose`); never committed.
            let debug = ws
                .join("target")
                .join("component")
                .join(format!("sink-coordinator-{}.debug.wasm", built.version));
            std::fs::write(&debug, &built.debug_wasm)
                .with_context(|| format!("cannot write {}", debug.display()))?;
            println!("{} (with function names)", debug.display());
            for f in files {
                println!("{}", f.display());
            }
            println!(
                "sink-coordinator {}: {} bytes, sha256 {}",
                built.version,
                built.wasm.len(),
                built.sha256
            );
            Ok(())
        }
        "core-module" if workspace.is_none() => core_module_task(
            &root,
            component,
            out_dir.unwrap_or_else(|| root.join("dist")),
        ),
        "check-dist" if out_dir.is_none() && workspace.is_none() && component.is_none() => {
            check_dist(&root)
        }
        "abi-layout" if out_dir.is_none() && workspace.is_none() && component.is_none() => {
            let layout = abi_layout::describe(&root.join("wit"))?;
            for f in abi_emit::write(&root, &layout)? {
                println!("{}", f.display());
            }
            Ok(())
        }
        "abi-check" if out_dir.is_none() && workspace.is_none() && component.is_none() => {
            abi_check(&root)
        }
        _ => bail!("{USAGE}"),
    }
}

/// The generated layout files match `wit/`, and the committed core module
/// of the WIT version exports what they describe.
fn abi_check(root: &Path) -> Result<()> {
    let layout = abi_layout::describe(&root.join("wit"))?;
    let stale = abi_emit::stale(root, &layout)?;
    if !stale.is_empty() {
        let names: Vec<String> = stale.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "the ABI layout files are stale ({}): run `cargo run -p xtask -- abi-layout` and commit them",
            names.join(", ")
        );
    }
    let version = build::wit_version(&root.join("wit"))?;
    let core = root
        .join("dist")
        .join(format!("sink-coordinator-{version}.core.wasm"));
    let bytes = std::fs::read(&core).with_context(|| format!("cannot read {}", core.display()))?;
    abi_emit::check_core_module(&layout, &bytes, &version)
        .with_context(|| format!("{}", core.display()))?;
    println!(
        "ABI layouts are up to date ({} types, {} exports, {} imports; {} matches them)",
        layout.types.len(),
        layout.exports.len(),
        layout.imports.len(),
        core.display()
    );
    Ok(())
}

/// Writes the core module of an existing component (default: the committed
/// one of the WIT version) as `sink-coordinator-<version>.core.wasm` and its
/// `.core.wasm.sha256` into `out`: the same bytes `component` writes when
/// the component is the one the sources build.
fn core_module_task(root: &Path, component: Option<PathBuf>, out: PathBuf) -> Result<()> {
    let version = build::wit_version(&root.join("wit"))?;
    let stem = format!("sink-coordinator-{version}");
    let path = component.unwrap_or_else(|| root.join("dist").join(format!("{stem}.wasm")));
    let wasm = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let core =
        core_module::extract(&wasm, &version).with_context(|| format!("{}", path.display()))?;
    let sha256 = core_module::sha256_hex(&core);
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let files = [
        (format!("{stem}.core.wasm"), core.clone()),
        (
            format!("{stem}.core.wasm.sha256"),
            format!("{sha256}  {stem}.core.wasm\n").into_bytes(),
        ),
    ];
    for (name, bytes) in files {
        let file = out.join(name);
        std::fs::write(&file, bytes).with_context(|| format!("cannot write {}", file.display()))?;
        println!("{}", file.display());
    }
    println!(
        "sink-coordinator {version} core module: {} bytes, sha256 {sha256}",
        core.len()
    );
    Ok(())
}

/// The workspace root: xtask lives in `<root>/xtask`.
fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The pinned `wasm-opt` (`make binaryen`), under this repository's target
/// directory whichever checkout is built: repro-check's second checkout
/// uses the same one.
fn wasm_opt(root: &Path) -> PathBuf {
    root.join("target/binaryen/node_modules/binaryen/bin/wasm-opt")
}

/// Rebuilds the artifact into a temporary directory and compares each file
/// with its committed copy under `dist/`.
fn check_dist(root: &Path) -> Result<()> {
    let built = build::component(root, &wasm_opt(root))?;
    let tmp = std::env::temp_dir().join(format!("sinkcoord-check-dist-{}", std::process::id()));
    let files = built.write(&tmp)?;
    let mut stale = Vec::new();
    for fresh in &files {
        let name = fresh.file_name().context("artifact file name")?;
        let committed = root.join("dist").join(name);
        let same = match (std::fs::read(fresh), std::fs::read(&committed)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            stale.push(format!("dist/{}", name.to_string_lossy()));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    if stale.is_empty() {
        println!(
            "dist/ is up to date: sink-coordinator-{}.wasm, {} bytes, sha256 {}",
            built.version,
            built.wasm.len(),
            built.sha256
        );
        return Ok(());
    }
    bail!(
        "the committed artifact differs from what the sources build ({}; a fresh build is {} bytes, sha256 {}).\n\
         A change to guest/ or wit/ must come with the regenerated artifact: run `make component` and commit dist/",
        stale.join(", "),
        built.wasm.len(),
        built.sha256
    )
}
