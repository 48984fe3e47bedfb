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
        "0.2.0"
    };
}

/// The WIT package version of the embedded component (`0.2.0`).
pub const EMBEDDED_WASM_VERSION: &str = embedded_version!();

/// The file name of the embedded artifact (`sink-coordinator-0.2.0.wasm`).
pub const EMBEDDED_WASM_NAME: &str = concat!("sink-coordinator-", embedded_version!(), ".wasm");

/// The embedded component's bytes.
pub const EMBEDDED_WASM: &[u8] = include_bytes!(concat!(
    "../../dist/sink-coordinator-",
    embedded_version!(),
    ".wasm"
));

/// The package versions of `sink:coordinator` interfaces that a compiled
/// component exports (`sink:coordinator/coordinator@0.2.0` gives `0.2.0`),
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
    fn embedded_component_exports_its_version() {
        let engine = wasmtime::Engine::default();
        let component = wasmtime::component::Component::new(&engine, EMBEDDED_WASM).unwrap();
        assert_eq!(
            exported_versions(&engine, &component),
            vec![EMBEDDED_WASM_VERSION.to_string()]
        );
    }
}
