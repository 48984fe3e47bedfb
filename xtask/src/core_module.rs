//! The core module as a release artifact of its own (issue 23):
//! `dist/sink-coordinator-<version>.core.wasm`, beside the component.
//!
//! Runtimes without the component model (wazero for Go, Chicory for the
//! JVM) run the component's coordinator core module and speak the canonical
//! ABI by hand (`docs/embedding.md`). Shipping that module as a file means
//! no host carves it out of the component's sections itself, and the digest
//! an engine pins is the digest of what it actually loads.
//!
//! The bytes are the component's largest core-module section (id 1), copied
//! unchanged: wit-component writes the coordinator's module there, beside
//! two tiny "shim" and "fixup" modules that only a component runtime needs.
//! Because they are a byte range of the component, they are exactly as
//! reproducible as the component and checked with it by `check-dist`.

use anyhow::{bail, Context as _, Result};
use sha2::{Digest, Sha256};

/// The coordinator's core module inside `component` (WIT package
/// `version`): the largest top-level core-module section. It is validated,
/// and every import module must carry `@version` (a module of another
/// release, or another component's, is refused).
pub fn extract(component: &[u8], version: &str) -> Result<Vec<u8>> {
    let mut best: Option<&[u8]> = None;
    let mut parser = wasmparser::Parser::new(0);
    let mut offset = 0usize;
    let mut saw_component = false;
    loop {
        let rest = component.get(offset..).unwrap_or_default();
        let (payload, consumed) = match parser.parse(rest, true).context("parsing the component")? {
            wasmparser::Chunk::Parsed { payload, consumed } => (payload, consumed),
            wasmparser::Chunk::NeedMoreData(_) => bail!("a truncated component"),
        };
        match payload {
            wasmparser::Payload::Version { encoding, .. } => {
                if encoding != wasmparser::Encoding::Component {
                    bail!("not a component binary (a core module?)");
                }
                saw_component = true;
                offset += consumed;
            }
            wasmparser::Payload::ModuleSection {
                unchecked_range, ..
            } => {
                let start = usize::try_from(unchecked_range.start).context("module offset")?;
                let end = usize::try_from(unchecked_range.end).context("module offset")?;
                let module = component
                    .get(start..end)
                    .context("a core module outside the component")?;
                if best.is_none_or(|b| module.len() > b.len()) {
                    best = Some(module);
                }
                // Skip the nested module instead of descending into it.
                offset = end;
            }
            wasmparser::Payload::ComponentSection {
                unchecked_range, ..
            } => {
                offset = usize::try_from(unchecked_range.end).context("component offset")?;
            }
            wasmparser::Payload::End(_) => break,
            _ => offset += consumed,
        }
    }
    if !saw_component {
        bail!("not a component binary");
    }
    let core = best.context("the component holds no core module")?.to_vec();
    wasmparser::Validator::new()
        .validate_all(&core)
        .context("the component's core module does not validate")?;
    let suffix = format!("@{version}");
    for payload in wasmparser::Parser::new(0).parse_all(&core) {
        if let wasmparser::Payload::ImportSection(imports) =
            payload.context("parsing the core module")?
        {
            for import in imports.into_imports() {
                let import = import.context("reading the core module's imports")?;
                if !import.module.ends_with(&suffix) {
                    bail!(
                        "the core module imports {:?} from {:?}, not from a sink:coordinator {version} interface",
                        import.name,
                        import.module
                    );
                }
            }
        }
    }
    Ok(core)
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
