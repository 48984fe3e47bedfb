//! The component this crate embeds: the committed release artifact
//! `dist/sink-coordinator-<version>.wasm`, not a build product.
//!
//! The artifact is built in one place (`cargo run -p xtask -- component`,
//! `make component`) with reproducible settings, and `make check-dist` fails
//! when the committed bytes differ from what the sources build. Including
//! the file (instead of building the guest from a build script) means a
//! crate depending on this one needs neither the wasm32 target nor a nested
//! cargo run.

/// The WIT package version of the embedded component
/// (`package sink:coordinator@<version>;` in `wit/coordinator.wit`); it
/// names the file under `dist/`. A literal macro, because `include_bytes!`
/// takes only literals.
macro_rules! embedded_version {
    () => {
        "0.2.10"
    };
}

/// The WIT package version of the embedded component (`0.2.10`).
pub const EMBEDDED_WASM_VERSION: &str = embedded_version!();

/// The file name of the embedded artifact (`sink-coordinator-0.2.10.wasm`).
pub const EMBEDDED_WASM_NAME: &str = concat!("sink-coordinator-", embedded_version!(), ".wasm");

/// The embedded component's bytes.
pub const EMBEDDED_WASM: &[u8] = include_bytes!(concat!(
    "../../dist/sink-coordinator-",
    embedded_version!(),
    ".wasm"
));

/// The package versions of `sink:coordinator` interfaces that a compiled
/// component exports (`sink:coordinator/coordinator@0.2.1` gives `0.2.1`),
/// sorted and without duplicates. A component of this project exports
/// exactly one.
pub fn exported_versions(
    engine: &wasmtime::Engine,
    component: &wasmtime::component::Component,
) -> Vec<String> {
    let mut versions: Vec<String> = component
        .component_type()
        .exports(engine)
        .filter_map(|(name, _)| {
            let (package, version) = name.split_once('@')?;
            package
                .starts_with("sink:coordinator/")
                .then(|| version.to_string())
        })
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// The component versions this host runs, as a semver requirement: the
/// WIT package `0.2.x` from `0.2.1` on. Within `0.2` versions only add (a
/// host never calls what it does not know, and `set-limits` came that way);
/// this host calls `coordinator.events`, added in `0.2.1`, so a `0.2.0`
/// component is refused (a `0.2.0` host still runs a later component). It
/// calls `events-packed` (`0.2.2`) only when the component exports it.
/// `0.2.0` is not additive over `0.1.0` (the `outcome` record gained
/// `committed-up-to`, the writer's `checkpoint-complete` became
/// `committed`), so `0.1.0` is refused too. The upper bound is wasmtime's
/// own rule for matching `0.x` interface names.
pub const COMPATIBLE_VERSIONS: &str = ">=0.2.1, <0.3.0";

/// Why a component is refused at load, before anything is linked: its WIT
/// package version is outside [`COMPATIBLE_VERSIONS`]. The message names the
/// wanted range and what was found; the Node and Python hosts print the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IncompatibleComponent {
    /// It exports no `sink:coordinator/…` interface at all.
    NotACoordinator,
    /// Its interfaces carry more than one version.
    SeveralVersions(Vec<String>),
    /// Its one version is outside the range (or not a semantic version).
    Version(String),
}

impl std::fmt::Display for IncompatibleComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let wanted = format!("this host runs sink:coordinator {COMPATIBLE_VERSIONS}");
        match self {
            Self::NotACoordinator => write!(
                f,
                "not a sink-coordinator component: it exports no sink:coordinator interface ({wanted})"
            ),
            Self::SeveralVersions(found) => write!(
                f,
                "incompatible component: {wanted}, the component exports several versions ({})",
                found.join(", ")
            ),
            Self::Version(found) => write!(
                f,
                "incompatible component: {wanted}, the component is sink:coordinator@{found}"
            ),
        }
    }
}

impl std::error::Error for IncompatibleComponent {}

/// The component's WIT package version if this host runs it (see
/// [`COMPATIBLE_VERSIONS`]); [`crate::Runtime::new`] calls it before linking,
/// so an old component fails with this one message instead of a missing
/// import or export.
pub fn check_version(
    engine: &wasmtime::Engine,
    component: &wasmtime::component::Component,
) -> Result<semver::Version, IncompatibleComponent> {
    let mut versions = exported_versions(engine, component);
    let found = match versions.len() {
        0 => return Err(IncompatibleComponent::NotACoordinator),
        1 => versions.remove(0),
        _ => return Err(IncompatibleComponent::SeveralVersions(versions)),
    };
    let wanted = semver::VersionReq::parse(COMPATIBLE_VERSIONS)
        .map_err(|_| IncompatibleComponent::Version(found.clone()))?;
    match semver::Version::parse(&found) {
        Ok(v) if wanted.matches(&v) => Ok(v),
        _ => Err(IncompatibleComponent::Version(found)),
    }
}

// ---------------------------------------------------------------------------
// The precompiled cache (`RuntimeOptions::cache_dir`)
// ---------------------------------------------------------------------------

/// The first bytes of a cache file of this format: a file without them (an
/// older bare `.cwasm`, anything else) is recompiled and replaced.
const CACHE_MAGIC: &[u8; 16] = b"sinkcoord-cwasm\x01";

/// The magic and the 128-bit checksum of the payload that follows them.
const CACHE_HEADER: usize = CACHE_MAGIC.len() + 16;

/// A cache file larger than this is not read (the embedded component's
/// machine code is under 1 MiB): recompiled instead.
const MAX_CACHE_FILE_BYTES: u64 = 256 << 20;

/// 128 bits from two differently seeded SipHashes over `parts`: the cache
/// key, and the checksum of a cache file's payload. Not a defence against
/// someone who can write the directory (they could write machine code
/// anyway, see `RuntimeOptions::cache_dir`), but against the file being
/// damaged: a torn write, a bit flip, a truncation. A checksum that
/// differs after a toolchain update only costs one recompilation.
fn digest(parts: &[&[u8]]) -> [u8; 16] {
    use std::hash::{DefaultHasher, Hasher};
    let mut out = [0u8; 16];
    for (seed, half) in out.chunks_mut(8).enumerate() {
        let mut h = DefaultHasher::new();
        h.write_u64(seed as u64);
        for part in parts {
            h.write_u64(part.len() as u64);
            h.write(part);
        }
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

/// The payload of a cache file if it is one of this format with an intact
/// checksum; `None` for anything else (then the caller recompiles).
fn verified_payload(path: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_CACHE_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).ok()?);
    file.take(MAX_CACHE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let payload = bytes.get(CACHE_HEADER..)?;
    let (magic, sum) = bytes[..CACHE_HEADER].split_at(CACHE_MAGIC.len());
    if magic != CACHE_MAGIC || sum != digest(&[payload]) {
        return None;
    }
    bytes.drain(..CACHE_HEADER);
    Some(bytes)
}

/// Loads the precompiled `wasm` from `dir`, or compiles it and stores it
/// there. The cache is best effort: any problem with it falls back to
/// compiling. A file is executed only if its checksum matches the bytes
/// read (and those bytes, not the file again, are what is loaded): a
/// damaged file made every command crash with SIGSEGV or SIGILL until it
/// was deleted (issue 26); now it is recompiled and replaced.
pub(crate) fn load_or_compile(
    engine: &wasmtime::Engine,
    wasm: &[u8],
    dir: &std::path::Path,
) -> wasmtime::Result<wasmtime::component::Component> {
    use wasmtime::component::Component;
    use wasmtime::error::Context as _;
    // Everything of the engine that affects the machine code is in its
    // compatibility hash.
    let mut engine_hash = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut engine_hash);
    let engine_hash = std::hash::Hasher::finish(&engine_hash).to_le_bytes();
    let key: String = digest(&[wasm, &engine_hash])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = dir.join(format!("sink-coordinator-{key}.cwasm"));
    if let Some(payload) = verified_payload(&path) {
        // SAFETY: the bytes are those `Component::serialize` produced below
        // in a process of this crate (their checksum matches, and the
        // directory is trusted, see `RuntimeOptions::cache_dir`); wasmtime
        // checks their header and engine compatibility on top.
        if let Ok(component) = unsafe { Component::deserialize(engine, &payload) } {
            return Ok(component);
        }
    }
    let component = Component::new(engine, wasm).context("cannot compile the component")?;
    if let Ok(payload) = component.serialize() {
        let mut bytes = Vec::with_capacity(CACHE_HEADER + payload.len());
        bytes.extend_from_slice(CACHE_MAGIC);
        bytes.extend_from_slice(&digest(&[&payload]));
        bytes.extend_from_slice(&payload);
        // Write then rename: a concurrent process never loads a partial
        // file (and a torn one fails its checksum).
        let tmp = dir.join(format!(
            ".sink-coordinator-{key}.{}.tmp",
            std::process::id()
        ));
        let stored = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&tmp, &bytes))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if stored.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok(component)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The literal above follows the WIT: bumping the package version
    /// without regenerating `dist/` and updating the literal fails here.
    #[test]
    fn version_matches_the_wit_package() {
        let wit = include_str!("../../wit/coordinator.wit");
        let declared = wit
            .lines()
            .find_map(|l| l.trim().strip_prefix("package sink:coordinator@"))
            .and_then(|rest| rest.strip_suffix(';'))
            .expect("wit/coordinator.wit declares its package");
        assert_eq!(declared, EMBEDDED_WASM_VERSION);
    }

    #[test]
    fn the_range_is_valid_and_holds_the_embedded_version() {
        let wanted = semver::VersionReq::parse(COMPATIBLE_VERSIONS).unwrap();
        assert!(wanted.matches(&semver::Version::parse(EMBEDDED_WASM_VERSION).unwrap()));
        for v in ["0.2.10", "0.2.9", "0.2.8", "0.2.7", "0.2.1"] {
            assert!(wanted.matches(&semver::Version::parse(v).unwrap()), "{v}");
        }
        for v in ["0.1.0", "0.2.0", "0.3.0", "1.0.0", "0.2.1-rc.1"] {
            assert!(!wanted.matches(&semver::Version::parse(v).unwrap()), "{v}");
        }
    }

    #[test]
    fn messages_name_the_range_and_what_was_found() {
        assert_eq!(
            IncompatibleComponent::Version("0.1.0".into()).to_string(),
            "incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, \
             the component is sink:coordinator@0.1.0"
        );
        assert!(IncompatibleComponent::NotACoordinator
            .to_string()
            .contains(">=0.2.1, <0.3.0"));
    }

    #[test]
    fn embedded_component_exports_its_version() {
        let engine = wasmtime::Engine::default();
        let component = wasmtime::component::Component::new(&engine, EMBEDDED_WASM).unwrap();
        assert_eq!(
            exported_versions(&engine, &component),
            vec![EMBEDDED_WASM_VERSION.to_string()]
        );
        assert_eq!(
            check_version(&engine, &component).unwrap().to_string(),
            EMBEDDED_WASM_VERSION
        );
    }
}
