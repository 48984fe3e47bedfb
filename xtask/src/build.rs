//! The reproducible component build.
//!
//! What made two builds of one commit differ (issue 14: 237,251 against
//! 237,291 bytes) were absolute paths in panic locations: the cargo home's
//! registry sources of dependencies, and potentially the checkout and the
//! toolchain's sysroot. Each of these prefixes is remapped to a fixed name
//! with `--remap-path-prefix`. Nothing else varies: no timestamps are
//! written (wasm has none, wit-component adds none), the toolchain is the
//! one installed (its version is in the `producers` section), and
//! dependency versions come from `Cargo.lock` (`--locked`).
//!
//! After rustc, binaryen's `wasm-opt -Oz` shrinks the core module (issue
//! 10: about 24 KB of 235 KB). It is the npm package pinned by
//! `xtask/binaryen/package-lock.json` (`make binaryen` installs it into
//! `target/binaryen`); its output depends only on its input bytes and its
//! version, which the build checks.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _, Result};
use sha2::{Digest, Sha256};

const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// The binaryen release pinned by `xtask/binaryen/package-lock.json`.
const BINARYEN_VERSION: &str = "version 132 (version_132)";

/// The largest function binaryen's inlining may make, in its estimate of
/// binary bytes (wasm-opt's `--inline-max-combined-binary-size`; its
/// default, 409,600, let `TableLog::commit` grow to 30 KB). A JVM's JIT
/// compiles no method over 8,000 bytecode bytes (HotSpot's
/// `HugeMethodLimit`) and Chicory's compiler makes about 1.3 bytecode bytes
/// of a wasm byte, so a larger function runs in the JVM's interpreter
/// (BENCHMARKS.md, "Huge functions on the JVM"; the JVM host's
/// `MethodSizeTest` checks every function). Costs 177 bytes of the core
/// module.
const MAX_COMBINED_BYTES: u32 = 5_000;

/// One built artifact.
pub struct Built {
    /// The WIT package version (`wit/coordinator.wit`).
    pub version: String,
    /// The component's bytes (the shipped artifact: no name section).
    pub wasm: Vec<u8>,
    /// The same component with the core module's name section (function
    /// names for wasm backtraces), written to `target/component/` only.
    pub debug_wasm: Vec<u8>,
    /// The WIT text it was built from.
    pub wit: String,
    /// Lowercase hex sha256 of `wasm`.
    pub sha256: String,
    /// The coordinator's core module, extracted from `wasm`
    /// ([`crate::core_module`]): the artifact of core-only runtimes.
    pub core: Vec<u8>,
}

impl Built {
    /// Writes `sink-coordinator-<version>.{wasm,wit,wasm.sha256}` and the
    /// core module `sink-coordinator-<version>.core.wasm{,.sha256}` into
    /// `dir`; returns their paths.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let stem = format!("sink-coordinator-{}", self.version);
        let core_sha256 = crate::core_module::sha256_hex(&self.core);
        let files = [
            (format!("{stem}.wasm"), self.wasm.clone()),
            (format!("{stem}.wit"), self.wit.clone().into_bytes()),
            // The `sha256sum` format, so `sha256sum -c` checks it.
            (
                format!("{stem}.wasm.sha256"),
                format!("{}  {stem}.wasm\n", self.sha256).into_bytes(),
            ),
            (format!("{stem}.core.wasm"), self.core.clone()),
            (
                format!("{stem}.core.wasm.sha256"),
                format!("{core_sha256}  {stem}.core.wasm\n").into_bytes(),
            ),
        ];
        let mut paths = Vec::new();
        for (name, bytes) in files {
            let path = dir.join(name);
            std::fs::write(&path, bytes)
                .with_context(|| format!("cannot write {}", path.display()))?;
            paths.push(path);
        }
        Ok(paths)
    }
}

/// Builds the component of the checkout at `ws`, optimizing its core module
/// with the `wasm-opt` node script at `wasm_opt`.
pub fn component(ws: &Path, wasm_opt: &Path) -> Result<Built> {
    let ws = ws
        .canonicalize()
        .with_context(|| format!("no workspace at {}", ws.display()))?;
    let wit_path = ws.join("wit").join("coordinator.wit");
    let wit = std::fs::read_to_string(&wit_path)
        .with_context(|| format!("cannot read {}", wit_path.display()))?;
    let version = wit_version(&ws.join("wit"))?;

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = ws.join("target").join("component");
    let status = Command::new(&cargo)
        .current_dir(&ws)
        .arg("rustc")
        .arg("--manifest-path")
        .arg(ws.join("guest").join("Cargo.toml"))
        .args(["-p", "sink-coordinator", "--lib", "--locked"])
        .args(["--profile", "wasm", "--target", WASM_TARGET])
        .args(["--crate-type", "cdylib"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", remap_flags(&ws)?.join("\x1f"))
        // Flags meant for other builds (coverage, sanitizers, a wrapper, a
        // target override) must not change these bytes.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .status()
        .with_context(|| format!("cannot run {cargo}"))?;
    if !status.success() {
        bail!(
            "building the guest for {WASM_TARGET} failed ({status}); \
             is the target installed? (`rustup target add {WASM_TARGET}`)"
        );
    }
    let core_path = target_dir
        .join(WASM_TARGET)
        .join("wasm")
        .join("sink_coordinator.wasm");
    let core = optimize(wasm_opt, &core_path, &target_dir)?;
    crate::fn_size::check(&core)?;
    let encode = |core: &[u8]| {
        wit_component::ComponentEncoder::default()
            .module(core)
            .and_then(|enc| enc.validate(true).encode())
            .with_context(|| format!("encoding {} as a component", core_path.display()))
    };
    let debug_wasm = encode(&core)?;
    let wasm = strip_component_names(&encode(&strip_names(&core)?)?)?;
    let sha256 = Sha256::digest(&wasm)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let core = crate::core_module::extract(&wasm, &version)?;
    Ok(Built {
        version,
        wasm,
        debug_wasm,
        wit,
        sha256,
        core,
    })
}

/// `wasm-opt -Oz` of the core module at `core_path`, keeping its function
/// names (`-g`) for the debug copy; the shipped copy drops them afterwards,
/// which leaves the code byte for byte as without `-g`.
///
/// Binaryen inlines every function that has one caller, whatever the size
/// ([`MAX_COMBINED_BYTES`] bounds it).
fn optimize(wasm_opt: &Path, core_path: &Path, target_dir: &Path) -> Result<Vec<u8>> {
    if !wasm_opt.is_file() {
        bail!(
            "{} is missing: run `make binaryen` (installs the pinned binaryen from npm)",
            wasm_opt.display()
        );
    }
    let version = Command::new("node")
        .arg(wasm_opt)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run node {}", wasm_opt.display()))?;
    let version = String::from_utf8_lossy(&version.stdout);
    if !version.contains(BINARYEN_VERSION) {
        bail!(
            "{} is {:?}, the build pins binaryen {BINARYEN_VERSION}: run `make binaryen`",
            wasm_opt.display(),
            version.trim()
        );
    }
    let out = target_dir.join("sink_coordinator.opt.wasm");
    let status = Command::new("node")
        .arg(wasm_opt)
        .args(["-Oz", "-g", "--inline-max-combined-binary-size"])
        .arg(MAX_COMBINED_BYTES.to_string())
        .arg(core_path)
        .arg("-o")
        .arg(&out)
        .status()
        .with_context(|| format!("cannot run node {}", wasm_opt.display()))?;
    if !status.success() {
        bail!("wasm-opt failed on {} ({status})", core_path.display());
    }
    std::fs::read(&out).with_context(|| format!("cannot read {}", out.display()))
}

/// The component without its `component-name` custom section (the names
/// of its instances, functions and types, for tools only: about 5.5 KB);
/// every other section is copied byte for byte, nested modules included.
fn strip_component_names(component: &[u8]) -> Result<Vec<u8>> {
    let header = component
        .get(..8)
        .context("a component shorter than its header")?;
    let mut out = header.to_vec();
    let mut parser = wasmparser::Parser::new(0);
    let mut offset = 0;
    loop {
        let rest = component.get(offset..).unwrap_or_default();
        let (payload, consumed) = match parser.parse(rest, true).context("parsing the component")? {
            wasmparser::Chunk::Parsed { payload, consumed } => (payload, consumed),
            wasmparser::Chunk::NeedMoreData(_) => bail!("a truncated component"),
        };
        let section = payload.as_section();
        // A nested module or component is copied whole, not descended into.
        let nested = matches!(
            payload,
            wasmparser::Payload::ModuleSection { .. }
                | wasmparser::Payload::ComponentSection { .. }
        );
        let keep = !matches!(&payload, wasmparser::Payload::CustomSection(c) if c.name() == "component-name");
        match payload {
            wasmparser::Payload::End(_) => break,
            // The header, already copied.
            wasmparser::Payload::Version { .. } => {
                offset += consumed;
                continue;
            }
            _ => {}
        }
        let (id, range) = section.context("an unexpected payload in the component")?;
        let start = usize::try_from(range.start).context("section offset")?;
        let end = usize::try_from(range.end).context("section offset")?;
        if keep {
            let data = component
                .get(start..end)
                .context("a section outside the component")?;
            wasm_encoder::Section::append_to(&wasm_encoder::RawSection { id, data }, &mut out);
        }
        offset = if nested { end } else { offset + consumed };
    }
    Ok(out)
}

/// The core module without its `name` custom section: function names,
/// used only to symbolize wasm backtraces, about 12 % of the component
/// (issue 10). Every other section is copied byte for byte, so the result
/// is as reproducible as the input.
fn strip_names(core: &[u8]) -> Result<Vec<u8>> {
    let mut module = wasm_encoder::Module::new();
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        let payload = payload.context("parsing the guest's core module")?;
        if let wasmparser::Payload::CustomSection(section) = &payload {
            if section.name() == "name" {
                continue;
            }
        }
        if let Some((id, range)) = payload.as_section() {
            let data = usize::try_from(range.start)
                .ok()
                .zip(usize::try_from(range.end).ok())
                .and_then(|(start, end)| core.get(start..end))
                .context("a section outside the guest's core module")?;
            module.section(&wasm_encoder::RawSection { id, data });
        }
    }
    Ok(module.finish())
}

/// The version of the WIT package (`package sink:coordinator@X;`) that
/// `wit/` declares.
pub fn wit_version(wit_dir: &Path) -> Result<String> {
    let group = wit_parser::UnresolvedPackageGroup::parse_dir(wit_dir)
        .with_context(|| format!("cannot parse {}", wit_dir.display()))?;
    let name = &group.main.name;
    match &name.version {
        Some(v) if name.namespace == "sink" && name.name == "coordinator" => Ok(v.to_string()),
        _ => bail!(
            "{}: the package is {name}, expected sink:coordinator@<version>",
            wit_dir.display()
        ),
    }
}

/// `--remap-path-prefix` for every absolute prefix a build may embed. When
/// several match, rustc applies the last one given, so the most specific
/// (the sysroot and the cargo home, which may lie inside the checkout)
/// come last.
fn remap_flags(ws: &Path) -> Result<Vec<String>> {
    let mut prefixes = vec![(ws.to_path_buf(), "/sink-coordinator")];
    let cargo_home = match std::env::var_os("CARGO_HOME").filter(|h| !h.is_empty()) {
        Some(h) => Some(PathBuf::from(h)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")),
    };
    if let Some(home) = cargo_home {
        // Both spellings: cargo passes registry paths as given, the
        // canonical form differs when the home is reached through a link.
        if let Ok(real) = home.canonicalize() {
            if real != home {
                prefixes.push((real, "/cargo-home"));
            }
        }
        prefixes.push((home, "/cargo-home"));
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .with_context(|| format!("cannot run {rustc} --print sysroot"))?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !sysroot.is_empty() {
        prefixes.push((PathBuf::from(sysroot), "/rust-sysroot"));
    }
    Ok(prefixes
        .into_iter()
        .map(|(from, to)| format!("--remap-path-prefix={}={to}", from.display()))
        .collect())
}
