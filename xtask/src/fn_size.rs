//! No function of the core module too large for a JVM's JIT.
//!
//! HotSpot compiles no method over 8,000 bytecode bytes (`HugeMethodLimit`):
//! a larger one runs in the JVM's bytecode interpreter for good. Chicory's
//! build-time compiler turns each wasm function into one JVM method of
//! about 1.25 to 1.45 bytecode bytes per wasm byte (measured on this module),
//! so a wasm function over [`MAX_FUNCTION_BYTES`] is at risk. One such
//! function, `TableLog::commit` at 30 KB after inlining, made Chicory's
//! checkpoint cycle about 3 times slower (BENCHMARKS.md, "Huge functions on the
//! JVM"). The build checks the optimized module, whose names it still has;
//! the JVM host's `MethodSizeTest` checks the methods Chicory made.

use anyhow::{bail, Context as _, Result};

/// The largest wasm function body, in bytes, the build accepts (8,000 ÷ 1.45).
pub const MAX_FUNCTION_BYTES: usize = 5_500;

/// Functions allowed over the limit, by a part of their (mangled) name, each
/// with the reason it cannot be split here.
pub const ALLOWED: &[(&str, &str)] = &[(
    "sink_coordinator_paimon4avro6unzstd",
    "ruzstd's block decoder, inlined into its one caller by LTO; runs only for a \
     zstd-compressed Paimon manifest",
)];

/// Every function of `core` (a module with its name section) over the
/// limit and not allowed, with its size: an error naming each.
pub fn check(core: &[u8]) -> Result<()> {
    let mut imported = 0u32;
    let mut sizes: Vec<(u32, usize)> = Vec::new();
    let mut names = std::collections::BTreeMap::new();
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        match payload.context("parsing the guest's core module")? {
            wasmparser::Payload::ImportSection(imports) => {
                for import in imports.into_imports() {
                    if matches!(import?.ty, wasmparser::TypeRef::Func(_)) {
                        imported += 1;
                    }
                }
            }
            wasmparser::Payload::CodeSectionEntry(body) => {
                let index = imported + sizes.len() as u32;
                let range = body.range();
                let len = usize::try_from(range.end - range.start).unwrap_or(usize::MAX);
                sizes.push((index, len));
            }
            wasmparser::Payload::CustomSection(section) => {
                if let wasmparser::KnownCustom::Name(reader) = section.as_known() {
                    for name in reader {
                        if let wasmparser::Name::Function(map) = name? {
                            for naming in map {
                                let naming = naming?;
                                names.insert(naming.index, naming.name.to_string());
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if names.is_empty() {
        bail!("the core module has no function names: cannot check function sizes");
    }
    let too_large: Vec<String> = sizes
        .iter()
        .filter(|(_, size)| *size > MAX_FUNCTION_BYTES)
        .map(|(index, size)| {
            let name = names.get(index).map_or("?", String::as_str);
            (name, *size)
        })
        .filter(|(name, _)| !ALLOWED.iter().any(|(part, _)| name.contains(part)))
        .map(|(name, size)| format!("  {size} bytes: {name}"))
        .collect();
    if !too_large.is_empty() {
        bail!(
            "functions over {MAX_FUNCTION_BYTES} bytes, which a JVM's JIT would not compile \
             on Chicory (split them or keep a callee out of line with #[inline(never)]):\n{}",
            too_large.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module of one function whose body is `n` bytes of `nop`, named `name`.
    fn module(name: &str, n: usize) -> Vec<u8> {
        let mut m = wasm_encoder::Module::new();
        let mut types = wasm_encoder::TypeSection::new();
        types.ty().function([], []);
        m.section(&types);
        let mut funcs = wasm_encoder::FunctionSection::new();
        funcs.function(0);
        m.section(&funcs);
        let mut code = wasm_encoder::CodeSection::new();
        let mut f = wasm_encoder::Function::new([]);
        for _ in 0..n {
            f.instruction(&wasm_encoder::Instruction::Nop);
        }
        f.instruction(&wasm_encoder::Instruction::End);
        code.function(&f);
        m.section(&code);
        let mut names = wasm_encoder::NameSection::new();
        let mut map = wasm_encoder::NameMap::new();
        map.append(0, name);
        names.functions(&map);
        m.section(&names);
        m.finish()
    }

    #[test]
    fn a_large_function_is_named() {
        assert!(check(&module("small", 100)).is_ok());
        let err = check(&module("big_one", MAX_FUNCTION_BYTES + 10)).unwrap_err();
        assert!(err.to_string().contains("big_one"), "{err}");
        let allowed = format!("_ZN23{}17h0E", ALLOWED[0].0);
        assert!(check(&module(&allowed, MAX_FUNCTION_BYTES + 10)).is_ok());
    }

    #[test]
    fn a_module_without_names_is_refused() {
        let mut m = wasm_encoder::Module::new();
        m.section(&wasm_encoder::TypeSection::new());
        assert!(check(&m.finish()).is_err());
    }
}
