//! Writes the [`Layout`] of `wit/` as the one description
//! (`hosts/abi/layout.json`) and, from the same value, one constants file
//! per host language; `abi-check` fails when any of them is stale.
//!
//! The generated names are the WIT names in each language's style: the
//! record `entry`'s field `watermark` is `abi.EntryWatermark` (Go),
//! `Layout.ENTRY_WATERMARK` (Java), `ENTRY_WATERMARK` (Python) and
//! `ENTRY.watermark` (Node); an anonymous type is named by its WIT
//! spelling (`option<u64>`: `OptionU64Payload`, `OPTION_U64.payload`), a
//! function by its interface and name (`coordinator.start`:
//! `abi.CoordinatorStart`, `Layout.COORDINATOR_START`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use crate::abi_layout::{FuncLayout, Layout, TypeLayout};

/// The command that regenerates the files (their header names it).
const REGENERATE: &str = "cargo run -p xtask -- abi-layout";

/// Each generated file: its path under the repository and its text.
pub fn files(layout: &Layout) -> Result<Vec<(PathBuf, String)>> {
    check_names(layout)?;
    Ok(vec![
        ("hosts/abi/layout.json".into(), json(layout)),
        ("hosts/go/internal/abi/layout_gen.go".into(), go(layout)),
        (
            "hosts/jvm/src/main/java/io/sinkcoordinator/jvm/Layout.java".into(),
            java(layout),
        ),
        (
            "hosts/python/src/sink_coordinator/_layout.py".into(),
            python(layout),
        ),
        ("hosts/node/package/layout.js".into(), node(layout)),
    ])
}

/// Writes every file under `root`.
pub fn write(root: &Path, layout: &Layout) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (rel, text) in files(layout)? {
        let path = root.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(rel);
    }
    Ok(written)
}

/// The files under `root` that differ from what `layout` generates.
pub fn stale(root: &Path, layout: &Layout) -> Result<Vec<PathBuf>> {
    Ok(files(layout)?
        .into_iter()
        .filter(|(rel, text)| std::fs::read_to_string(root.join(rel)).ok().as_deref() != Some(text))
        .map(|(rel, _)| rel)
        .collect())
}

/// The exports of a core module the description must match: every
/// function it names with its version, each post-return exactly where it
/// says (wit-bindgen's rule, checked against the real module).
pub fn check_core_module(layout: &Layout, core: &[u8], version: &str) -> Result<()> {
    let mut exports = BTreeSet::new();
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        if let wasmparser::Payload::ExportSection(section) =
            payload.context("parsing the core module")?
        {
            for export in section {
                exports.insert(
                    export
                        .context("reading the core module's exports")?
                        .name
                        .to_string(),
                );
            }
        }
    }
    for f in &layout.exports {
        let name = f.core_name(version);
        if !exports.contains(&name) {
            bail!("the core module does not export {name}");
        }
        let post = format!("cabi_post_{name}");
        if exports.contains(&post) != f.post_return {
            bail!(
                "the description says {name} has {} post-return, the core module {}",
                if f.post_return { "a" } else { "no" },
                if f.post_return {
                    "exports none"
                } else {
                    "exports one"
                }
            );
        }
    }
    Ok(())
}

/// Two WIT names that one language would spell alike fail the generator.
fn check_names(layout: &Layout) -> Result<()> {
    let mut seen = BTreeSet::new();
    let consts = layout
        .types
        .iter()
        .flat_map(|t| consts(t).into_iter().map(|(name, _)| name))
        .chain(
            layout
                .exports
                .iter()
                .chain(&layout.imports)
                .map(|f| func_words(f).join("-")),
        );
    for name in consts {
        if !seen.insert(name.clone()) {
            bail!("two layouts are both named {name}");
        }
    }
    Ok(())
}

/// The words of a type's name: `result<_, error>` is `result error`.
fn words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// A function's words: `coordinator` `[method]coordinator.start` is
/// `coordinator start`, `[constructor]writer` is `writer constructor`.
fn func_words(f: &FuncLayout) -> Vec<String> {
    let short = match f.name.split_once(']') {
        Some((kind, rest)) => match rest.split_once('.') {
            Some((_, method)) => method.to_string(),
            None => kind.trim_start_matches('[').to_string(),
        },
        None => f.name.clone(),
    };
    let mut w = words(&f.interface);
    w.extend(words(&short));
    w
}

/// A type's constants as one string each (`entry size`), for the name check.
fn consts(t: &TypeLayout) -> Vec<(String, usize)> {
    const_words(t)
        .into_iter()
        .map(|(w, v)| (w.join(" "), v))
        .collect()
}

fn pascal(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn camel(words: &[String]) -> String {
    let p = pascal(words);
    let mut c = p.chars();
    c.next()
        .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn upper(words: &[String]) -> String {
    words
        .iter()
        .map(|w| w.to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join("_")
}

/// The return area's size, 0 for none (how the language files spell it).
fn ret_size(f: &FuncLayout) -> usize {
    f.return_area.map_or(0, |(size, _)| size)
}

fn json(l: &Layout) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{{");
    let _ = writeln!(
        s,
        "  \"generated_by\": \"{REGENERATE} (xtask/src/abi_layout.rs) from wit/: do not edit\","
    );
    let _ = writeln!(s, "  \"max_flat_params\": {},", l.max_flat_params);
    let _ = writeln!(s, "  \"max_flat_results\": {},", l.max_flat_results);
    let _ = writeln!(s, "  \"types\": [");
    for (i, t) in l.types.iter().enumerate() {
        let offsets: Vec<String> = t
            .offsets
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect();
        let comma = if i + 1 < l.types.len() { "," } else { "" };
        let _ = writeln!(
            s,
            "    {{\"name\": \"{}\", \"kind\": \"{}\", \"size\": {}, \"align\": {}, \"offsets\": {{{}}}}}{comma}",
            t.name,
            t.kind,
            t.size,
            t.align,
            offsets.join(", ")
        );
    }
    let _ = writeln!(s, "  ],");
    for (key, funcs, last) in [
        ("exports", &l.exports, false),
        ("imports", &l.imports, true),
    ] {
        let _ = writeln!(s, "  \"{key}\": [");
        for (i, f) in funcs.iter().enumerate() {
            let result = f
                .result
                .as_ref()
                .map_or("null".to_string(), |r| format!("\"{r}\""));
            let area = f.return_area.map_or("null".to_string(), |(size, align)| {
                format!("{{\"size\": {size}, \"align\": {align}}}")
            });
            let comma = if i + 1 < funcs.len() { "," } else { "" };
            let _ = writeln!(
                s,
                "    {{\"interface\": \"{}\", \"name\": \"{}\", \"flat_params\": {}, \"indirect_params\": {}, \"result\": {result}, \"return_area\": {area}, \"post_return\": {}}}{comma}",
                f.interface, f.name, f.flat_params, f.indirect_params, f.post_return
            );
        }
        let _ = writeln!(s, "  ]{}", if last { "" } else { "," });
    }
    let _ = writeln!(s, "}}");
    s
}

/// How one language spells the generated declarations; [`render`] writes
/// them in the same order for every language.
struct Syntax<T, F> {
    /// The file's start: the generated-file note, the `Export` type, the
    /// flattening limits.
    header: String,
    /// One type's constants, from its named numbers ([`fields`]).
    type_block: T,
    /// Before the functions' constants.
    functions_open: &'static str,
    /// One function's constant.
    function: F,
    footer: &'static str,
}

fn render<T, F>(l: &Layout, syntax: Syntax<T, F>) -> String
where
    T: Fn(&TypeLayout) -> String,
    F: Fn(&FuncLayout) -> String,
{
    let mut s = syntax.header;
    for t in &l.types {
        s.push_str(&(syntax.type_block)(t));
    }
    s.push_str(syntax.functions_open);
    for f in l.exports.iter().chain(&l.imports) {
        s.push_str(&(syntax.function)(f));
    }
    s.push_str(syntax.footer);
    s
}

/// A type's named numbers, `size` and `align` first: (key, value).
fn fields(t: &TypeLayout) -> Vec<(String, usize)> {
    [("size".to_string(), t.size), ("align".to_string(), t.align)]
        .into_iter()
        .chain(t.offsets.iter().cloned())
        .collect()
}

/// A type's constants as (words of the type and the key, value).
fn const_words(t: &TypeLayout) -> Vec<(Vec<String>, usize)> {
    let base = words(&t.name);
    fields(t)
        .into_iter()
        .map(|(k, v)| ([base.clone(), words(&k)].concat(), v))
        .collect()
}

/// A type's constants in UPPER_SNAKE case (Java, Python): after a comment
/// line, one `{decl}NAME = value{end}` each.
fn upper_consts(t: &TypeLayout, comment: &str, decl: &str, end: &str) -> String {
    let mut s = format!("\n{comment} {} ({})\n", t.name, t.kind);
    for (w, v) in const_words(t) {
        let _ = writeln!(s, "{decl}{} = {v}{end}", upper(&w));
    }
    s
}

/// A function's fields in the order of the Java and Python `Export`.
fn positional(f: &FuncLayout, yes: &str, no: &str) -> String {
    let b = |v: bool| if v { yes } else { no };
    format!(
        "{:?}, {:?}, {}, {}, {}, {}",
        f.interface,
        f.name,
        f.flat_params,
        b(f.indirect_params),
        ret_size(f),
        b(f.post_return)
    )
}

fn go(l: &Layout) -> String {
    let header = format!(
        "// Code generated by `{REGENERATE}` from wit/ (hosts/abi/layout.json); DO NOT EDIT.\n\n\
         // Package abi holds the canonical-ABI layouts of the sink:coordinator\n\
         // world: byte offsets inside a value of each in-memory type, relative to\n\
         // the value, and the core functions' signatures.\n\
         package abi\n\n\
         // Export is one core function: Interface and Name make its name\n\
         // (\"sink:coordinator/<Interface>@<version>#<Name>\"); ReturnArea is the\n\
         // size of its return area (0: the result is flat); PostReturn says it has\n\
         // a cabi_post_ of that name.\n\
         type Export struct {{\n\
         \tInterface, Name string\n\
         \tFlatParams      int\n\
         \tIndirectParams  bool\n\
         \tReturnArea      uint32\n\
         \tPostReturn      bool\n\
         }}\n\n\
         // MaxFlatParams and MaxFlatResults: more flat values go through memory.\n\
         const (\n\tMaxFlatParams  = {}\n\tMaxFlatResults = {}\n)\n",
        l.max_flat_params, l.max_flat_results
    );
    render(
        l,
        Syntax {
            header,
            type_block: |t: &TypeLayout| {
                let names: Vec<(String, usize)> = const_words(t)
                    .into_iter()
                    .map(|(w, v)| (pascal(&w), v))
                    .collect();
                // Aligned as gofmt aligns a block.
                let width = names.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
                let mut s = format!("\n// {} ({}).\nconst (\n", t.name, t.kind);
                for (name, v) in names {
                    let _ = writeln!(s, "\t{name:width$} = {v}");
                }
                s + ")\n"
            },
            functions_open: "",
            function: |f: &FuncLayout| {
                let name = pascal(&func_words(f));
                format!(
                    "\n// {name} is {}#{}.\nvar {name} = Export{{Interface: {:?}, Name: {:?}, FlatParams: {}, IndirectParams: {}, ReturnArea: {}, PostReturn: {}}}\n",
                    f.interface,
                    f.name,
                    f.interface,
                    f.name,
                    f.flat_params,
                    f.indirect_params,
                    ret_size(f),
                    f.post_return
                )
            },
            footer: "",
        },
    )
}

fn java(l: &Layout) -> String {
    let header = format!(
        "// Generated by `{REGENERATE}` from wit/ (hosts/abi/layout.json): do not edit.\n\
         package io.sinkcoordinator.jvm;\n\n\
         /**\n * The canonical-ABI layouts of the sink:coordinator world: byte offsets inside a value of\n \
         * each in-memory type, relative to the value, and the core functions' signatures.\n */\n\
         final class Layout {{\n  private Layout() {{}}\n\n\
         \x20 /**\n   * One core function: {{@code sink:coordinator/<iface>@<version>#<name>}}; {{@code returnArea}}\n   \
         * is its return area's size (0: the result is flat).\n   */\n\
         \x20 record Export(\n      String iface,\n      String name,\n      int flatParams,\n      \
         boolean indirectParams,\n      int returnArea,\n      boolean postReturn) {{}}\n\n\
         \x20 static final int MAX_FLAT_PARAMS = {};\n  static final int MAX_FLAT_RESULTS = {};\n",
        l.max_flat_params, l.max_flat_results
    );
    upper_case(
        l,
        header,
        ["  //", "  static final int ", ";"],
        "",
        |name, args| format!("\n  static final Export {name} =\n      new Export({args});\n"),
        ["true", "false"],
        "}\n",
    )
}

fn python(l: &Layout) -> String {
    let header = format!(
        "# Generated by `{REGENERATE}` from wit/ (hosts/abi/layout.json): do not edit.\n\
         \"\"\"The canonical-ABI layouts of the sink:coordinator world: byte offsets\n\
         inside a value of each in-memory type, relative to the value, and the core\n\
         functions' signatures.\"\"\"\n\n\
         from typing import NamedTuple\n\n\n\
         class Export(NamedTuple):\n    \
         \"\"\"One core function: ``sink:coordinator/<interface>@<version>#<name>``;\n    \
         ``return_area`` is its return area's size (0: the result is flat).\"\"\"\n\n    \
         interface: str\n    name: str\n    flat_params: int\n    indirect_params: bool\n    \
         return_area: int\n    post_return: bool\n\n\n\
         MAX_FLAT_PARAMS = {}\nMAX_FLAT_RESULTS = {}\n",
        l.max_flat_params, l.max_flat_results
    );
    upper_case(
        l,
        header,
        ["#", "", ""],
        "\n",
        |name, args| format!("{name} = Export({args})\n"),
        ["True", "False"],
        "",
    )
}

/// The files whose constants are UPPER_SNAKE (Java, Python): each type's
/// constants after a `consts[0]` comment line, one `{consts[1]}NAME =
/// value{consts[2]}` each ([`upper_consts`]); then per function `export(NAME,
/// its fields in order)`, the booleans spelled `booleans`.
fn upper_case(
    l: &Layout,
    header: String,
    consts: [&str; 3],
    functions_open: &'static str,
    export: fn(&str, &str) -> String,
    booleans: [&str; 2],
    footer: &'static str,
) -> String {
    render(
        l,
        Syntax {
            header,
            type_block: |t: &TypeLayout| upper_consts(t, consts[0], consts[1], consts[2]),
            functions_open,
            function: |f: &FuncLayout| {
                export(
                    &upper(&func_words(f)),
                    &positional(f, booleans[0], booleans[1]),
                )
            },
            footer,
        },
    )
}

fn node(l: &Layout) -> String {
    let header = format!(
        "// Generated by `{REGENERATE}` from wit/ (hosts/abi/layout.json): do not edit.\n\
         // The canonical-ABI layouts of the sink:coordinator world: byte offsets inside\n\
         // a value of each in-memory type, relative to the value, and the core\n\
         // functions' signatures (`returnArea`: the return area's size, 0 when the\n\
         // result is flat).\n\n\
         export const MAX_FLAT_PARAMS = {};\nexport const MAX_FLAT_RESULTS = {};\n",
        l.max_flat_params, l.max_flat_results
    );
    render(
        l,
        Syntax {
            header,
            type_block: |t: &TypeLayout| {
                let keys: Vec<String> = fields(t)
                    .into_iter()
                    .map(|(k, v)| format!("{}: {v}", camel(&words(&k))))
                    .collect();
                format!(
                    "\n/** {} ({}). */\nexport const {} = Object.freeze({{ {} }});\n",
                    t.name,
                    t.kind,
                    upper(&words(&t.name)),
                    keys.join(", ")
                )
            },
            functions_open: "\n",
            function: |f: &FuncLayout| {
                format!(
                    "export const {} = Object.freeze({{ interface: '{}', name: '{}', flatParams: {}, indirectParams: {}, returnArea: {}, postReturn: {} }});\n",
                    upper(&func_words(f)),
                    f.interface,
                    f.name,
                    f.flat_params,
                    f.indirect_params,
                    ret_size(f),
                    f.post_return
                )
            },
            footer: "",
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// What `make abi-check` checks, also in `cargo test`: the committed
    /// files are what `wit/` generates, and the committed core module has
    /// the exports and post-returns they describe.
    #[test]
    fn committed_files_and_core_module_match_the_wit() {
        let root = root();
        let layout = crate::abi_layout::describe(&root.join("wit")).expect("wit/ describes");
        assert_eq!(stale(&root, &layout).expect("files"), Vec::<PathBuf>::new());
        let version = crate::build::wit_version(&root.join("wit")).expect("version");
        let core = std::fs::read(root.join(format!("dist/sink-coordinator-{version}.core.wasm")))
            .expect("the committed core module");
        check_core_module(&layout, &core, &version).expect("the core module matches");
    }

    #[test]
    fn names_follow_each_language() {
        let layout = crate::abi_layout::describe(&root().join("wit")).expect("wit/ describes");
        let files = files(&layout).expect("files");
        let text = |suffix: &str| {
            files
                .iter()
                .find(|(p, _)| p.to_string_lossy().ends_with(suffix))
                .map(|(_, t)| t.as_str())
                .unwrap_or_default()
        };
        assert!(text(".go").contains("\tOutcomeCommitted       = 4\n"));
        assert!(text(".java").contains("static final int OUTCOME_COMMITTED = 4;"));
        assert!(text(".py").contains("\nOUTCOME_COMMITTED = 4\n"));
        assert!(text(".js").contains(
            "export const OUTCOME = Object.freeze({ size: 48, align: 8, state: 0, committed: 4,"
        ));
        assert!(text(".js").contains("COORDINATOR_START = Object.freeze({ interface: 'coordinator', name: '[method]coordinator.start'"));
    }
}
