//! The canonical-ABI layouts the non-Rust hosts use (issue 27): computed
//! from `wit/` with wit-parser's own `SizeAlign` and flattening rules.
//!
//! The Go, JVM, Python and Node hosts speak the canonical ABI to the core
//! module by hand. Instead of four hand copies of every record offset,
//! payload offset and return area, they read the constants generated from
//! the one [`Layout`] this module derives (`hosts/abi/layout.json` and one
//! file per language, written by [`crate::abi_emit`]).
//!
//! What is described is what lives in guest memory: every type reachable
//! from a function's result (results that do not fit one flat value go
//! through a return area) or from a list element (list elements are always
//! in memory), and for each function its core name, flat parameter count,
//! return area and post-return. Types that are only ever flattened into
//! parameters (`config`, `limits`, `restore-point`) have no memory layout a
//! host uses and are left out.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, Context as _, Result};
use wit_parser::abi::AbiVariant;
use wit_parser::{
    Function, Int, LiftLowerAbi, ManglingAndAbi, Resolve, SizeAlign, Type, TypeDefKind, WasmExport,
    WasmExportKind, WorldItem, WorldKey,
};

/// The world the component implements.
const WORLD: &str = "sink-coordinator";

/// Every layout of the world, in WIT order of first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// `Resolve::MAX_FLAT_PARAMS`: more flat parameters go through memory.
    pub max_flat_params: usize,
    /// `Resolve::MAX_FLAT_RESULTS`: more flat results go through a return area.
    pub max_flat_results: usize,
    /// The types that live in guest memory (see the module comment).
    pub types: Vec<TypeLayout>,
    /// The functions the core module exports (methods, constructors,
    /// destructors of the exported interfaces).
    pub exports: Vec<FuncLayout>,
    /// The functions the core module imports from the host.
    pub imports: Vec<FuncLayout>,
}

/// One type's size, alignment and offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeLayout {
    /// The WIT spelling: `entry`, `option<u64>`, `result<outcome, error>`,
    /// `tuple<u32, list<u8>>`, `list` (every list and string descriptor).
    pub name: String,
    /// `record`, `tuple`, `variant`, `enum`, `option`, `result` or `list`.
    pub kind: &'static str,
    pub size: usize,
    pub align: usize,
    /// Named byte offsets inside a value of the type: a record's fields, a
    /// tuple's `f0`, `f1`, ...; the `payload` of a variant, option or result
    /// (its discriminant is one byte at 0: asserted, every host reads a
    /// u8); a list descriptor's `ptr` and `len`. None for an enum (one byte).
    pub offsets: Vec<(String, usize)>,
}

/// One core function of the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncLayout {
    /// The interface's name (`coordinator`, `storage`, ...).
    pub interface: String,
    /// The name after `#` in the core export (`[method]coordinator.start`),
    /// or the import's field name (`get`).
    pub name: String,
    /// The number of flat core parameters (the return pointer of an import
    /// included); 1 when `indirect_params`.
    pub flat_params: usize,
    /// The parameters are one pointer to a record in memory (more than
    /// `max_flat_params` flat values).
    pub indirect_params: bool,
    /// The WIT result type (its [`TypeLayout::name`]), if any.
    pub result: Option<String>,
    /// The return area (size, align): the export returns a pointer to it, an
    /// import receives one as its last parameter. None: the result is flat.
    pub return_area: Option<(usize, usize)>,
    /// The export has a `cabi_post_<export name>` that frees what its
    /// result points to (the result holds a list or string). Always false
    /// for imports.
    pub post_return: bool,
}

impl FuncLayout {
    /// The function's full core name with `version` (the export name
    /// wit-component and wit-bindgen use; an import's module is the
    /// `sink:coordinator/<interface>@<version>` part).
    pub fn core_name(&self, version: &str) -> String {
        format!(
            "sink:coordinator/{}@{version}#{}",
            self.interface, self.name
        )
    }
}

/// Computes the layout of `wit/`'s world.
pub fn describe(wit_dir: &Path) -> Result<Layout> {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve
        .push_dir(wit_dir)
        .with_context(|| format!("cannot parse {}", wit_dir.display()))?;
    let world = resolve.select_world(&[pkg], Some(WORLD))?;
    let mut sizes = SizeAlign::default();
    sizes.fill(&resolve)?;
    let mut walker = Walker {
        resolve: &resolve,
        sizes: &sizes,
        seen: BTreeSet::new(),
        types: Vec::new(),
    };
    let mut exports = Vec::new();
    let mut imports = Vec::new();
    let w = &resolve.worlds[world];
    for (key, item, is_export) in w
        .imports
        .iter()
        .map(|(k, i)| (k, i, false))
        .chain(w.exports.iter().map(|(k, i)| (k, i, true)))
    {
        let WorldItem::Interface { id, .. } = item else {
            continue;
        };
        let iface = &resolve.interfaces[*id];
        let iface_name = iface.name.clone().context("an anonymous interface")?;
        for func in iface.functions.values() {
            let f = walker.function(&iface_name, func, is_export)?;
            if is_export {
                check_export_name(&resolve, key, func, &f)?;
                exports.push(f);
            } else {
                imports.push(f);
            }
        }
        if is_export {
            // Each exported resource's destructor: one parameter (the
            // rep), no result.
            for (name, ty) in &iface.types {
                if matches!(resolve.types[*ty].kind, TypeDefKind::Resource) {
                    let dtor = resolve.wasm_export_name(
                        ManglingAndAbi::Legacy(LiftLowerAbi::Sync),
                        WasmExport::ResourceDtor {
                            interface: key,
                            resource: *ty,
                        },
                    );
                    let f = FuncLayout {
                        interface: iface_name.clone(),
                        name: format!("[dtor]{name}"),
                        flat_params: 1,
                        indirect_params: false,
                        result: None,
                        return_area: None,
                        post_return: false,
                    };
                    if strip_version(&dtor) != strip_version(&f.core_name("V")) {
                        bail!("the destructor of {name} is exported as {dtor}");
                    }
                    exports.push(f);
                }
            }
        }
    }
    Ok(Layout {
        max_flat_params: Resolve::MAX_FLAT_PARAMS,
        max_flat_results: Resolve::MAX_FLAT_RESULTS,
        types: walker.types,
        exports,
        imports,
    })
}

/// The hosts assemble each export name as `sink:coordinator/<interface>@
/// <version>#<name>`: wit-parser's own mangling must agree.
fn check_export_name(
    resolve: &Resolve,
    key: &WorldKey,
    func: &Function,
    f: &FuncLayout,
) -> Result<()> {
    for (kind, prefix) in [
        (WasmExportKind::Normal, ""),
        (WasmExportKind::PostReturn, "cabi_post_"),
    ] {
        let name = resolve.wasm_export_name(
            ManglingAndAbi::Legacy(LiftLowerAbi::Sync),
            WasmExport::Func {
                interface: Some(key),
                func,
                kind,
            },
        );
        let ours = format!("{prefix}{}", f.core_name("V"));
        if strip_version(&name) != strip_version(&ours) {
            bail!("{} is exported as {name}, not {ours}", func.name);
        }
    }
    Ok(())
}

/// `name` without its `@<version>` (up to the `#`).
fn strip_version(name: &str) -> String {
    match (name.find('@'), name.find('#')) {
        (Some(at), Some(hash)) if at < hash => format!("{}{}", &name[..at], &name[hash..]),
        _ => name.to_string(),
    }
}

/// Collects the in-memory types, each once.
struct Walker<'a> {
    resolve: &'a Resolve,
    sizes: &'a SizeAlign,
    seen: BTreeSet<String>,
    types: Vec<TypeLayout>,
}

impl Walker<'_> {
    fn function(
        &mut self,
        interface: &str,
        func: &Function,
        is_export: bool,
    ) -> Result<FuncLayout> {
        let variant = if is_export {
            AbiVariant::GuestExport
        } else {
            AbiVariant::GuestImport
        };
        let sig = self.resolve.wasm_signature(variant, func);
        for p in &func.params {
            self.lists_in(&p.ty)?;
        }
        if sig.indirect_params {
            for p in &func.params {
                self.memory_type(&p.ty)?;
            }
        }
        let mut return_area = None;
        if let Some(ty) = &func.result {
            if sig.retptr {
                self.memory_type(ty)?;
                return_area = Some((
                    self.sizes.size(ty).size_wasm32(),
                    self.sizes.align(ty).align_wasm32(),
                ));
            } else {
                self.lists_in(ty)?;
            }
        }
        Ok(FuncLayout {
            interface: interface.to_string(),
            name: func.name.clone(),
            flat_params: sig.params.len(),
            indirect_params: sig.indirect_params,
            result: func.result.as_ref().map(|t| self.name(t)),
            return_area,
            post_return: is_export && func.result.as_ref().is_some_and(|t| self.owns_memory(t)),
        })
    }

    /// wit-bindgen's rule for a post-return: the result holds memory the
    /// guest allocated (a list or string).
    fn owns_memory(&self, ty: &Type) -> bool {
        self.is_list(ty) || self.inner(ty).iter().any(|t| self.owns_memory(t))
    }

    /// The element types of the lists in a flattened value: they are in
    /// memory even when the value itself is not.
    fn lists_in(&mut self, ty: &Type) -> Result<()> {
        if self.is_list(ty) {
            return self.memory_type(ty);
        }
        self.inner(ty).iter().try_for_each(|t| self.lists_in(t))
    }

    fn is_list(&self, ty: &Type) -> bool {
        match ty {
            Type::String => true,
            Type::Id(id) => matches!(self.resolve.types[*id].kind, TypeDefKind::List(_)),
            _ => false,
        }
    }

    /// The types stored inside a value of `ty` (an alias's target, a
    /// record's fields, a variant's payloads, ...). A list's elements are
    /// not: they are behind its pointer.
    fn inner(&self, ty: &Type) -> Vec<Type> {
        let Type::Id(id) = ty else {
            return Vec::new();
        };
        match &self.resolve.types[*id].kind {
            TypeDefKind::Type(t) | TypeDefKind::Option(t) => vec![*t],
            TypeDefKind::Record(r) => r.fields.iter().map(|f| f.ty).collect(),
            TypeDefKind::Tuple(t) => t.types.clone(),
            TypeDefKind::Variant(v) => v.cases.iter().filter_map(|c| c.ty).collect(),
            TypeDefKind::Result(r) => r.ok.iter().chain(r.err.iter()).copied().collect(),
            _ => Vec::new(),
        }
    }

    /// Records `ty` (and everything inside it) as a type in memory.
    fn memory_type(&mut self, ty: &Type) -> Result<()> {
        let id = match ty {
            Type::String => return self.add_list(),
            Type::Id(id) => *id,
            _ => return Ok(()), // a primitive: its size is its own
        };
        let def = &self.resolve.types[id];
        let name = self.name(ty);
        if self.seen.contains(&name) {
            return Ok(());
        }
        let (kind, offsets) = match &def.kind {
            TypeDefKind::Type(t) => return self.memory_type(t),
            TypeDefKind::Handle(_) => return Ok(()), // an i32
            TypeDefKind::List(element) => {
                self.add_list()?;
                return self.memory_type(element);
            }
            TypeDefKind::Record(r) => {
                let types: Vec<&Type> = r.fields.iter().map(|f| &f.ty).collect();
                let offsets = self.field_offsets(types.iter().copied())?;
                let names = r.fields.iter().map(|f| f.name.clone());
                ("record", names.zip(offsets).collect())
            }
            TypeDefKind::Tuple(t) => {
                let offsets = self.field_offsets(t.types.iter())?;
                let names = (0..t.types.len()).map(|i| format!("f{i}"));
                ("tuple", names.zip(offsets).collect())
            }
            TypeDefKind::Enum(e) => {
                check_tag(e.tag(), &name)?;
                ("enum", Vec::new())
            }
            TypeDefKind::Variant(v) => {
                check_tag(v.tag(), &name)?;
                let cases: Vec<Option<&Type>> = v.cases.iter().map(|c| c.ty.as_ref()).collect();
                ("variant", self.payload(Int::U8, &cases)?)
            }
            TypeDefKind::Option(t) => ("option", self.payload(Int::U8, &[None, Some(t)])?),
            TypeDefKind::Result(r) => (
                "result",
                self.payload(Int::U8, &[r.ok.as_ref(), r.err.as_ref()])?,
            ),
            other => bail!(
                "{name}: a {} has no layout in this generator",
                other.as_str()
            ),
        };
        self.seen.insert(name.clone());
        self.types.push(TypeLayout {
            name,
            kind,
            size: self.sizes.size(ty).size_wasm32(),
            align: self.sizes.align(ty).align_wasm32(),
            offsets,
        });
        // The types inside, after this one (a reader meets the outer first).
        self.inner(ty).iter().try_for_each(|t| self.memory_type(t))
    }

    /// The one descriptor of every list and string: (ptr, len) of u32.
    fn add_list(&mut self) -> Result<()> {
        if self.seen.insert("list".to_string()) {
            let list = Type::String;
            self.types.push(TypeLayout {
                name: "list".to_string(),
                kind: "list",
                size: self.sizes.size(&list).size_wasm32(),
                align: self.sizes.align(&list).align_wasm32(),
                offsets: vec![("ptr".to_string(), 0), ("len".to_string(), 4)],
            });
        }
        Ok(())
    }

    fn field_offsets<'t>(&self, types: impl IntoIterator<Item = &'t Type>) -> Result<Vec<usize>> {
        Ok(self
            .sizes
            .field_offsets(types)
            .into_iter()
            .map(|(offset, _)| offset.size_wasm32())
            .collect())
    }

    fn payload(&self, tag: Int, cases: &[Option<&Type>]) -> Result<Vec<(String, usize)>> {
        let offset = self.sizes.payload_offset(tag, cases.iter().copied());
        Ok(vec![("payload".to_string(), offset.size_wasm32())])
    }

    /// The WIT spelling of `ty`, aliases resolved (`checkpoint-id` is u64).
    fn name(&self, ty: &Type) -> String {
        let id = match ty {
            Type::Bool => return "bool".into(),
            Type::U8 => return "u8".into(),
            Type::U16 => return "u16".into(),
            Type::U32 => return "u32".into(),
            Type::U64 => return "u64".into(),
            Type::S8 => return "s8".into(),
            Type::S16 => return "s16".into(),
            Type::S32 => return "s32".into(),
            Type::S64 => return "s64".into(),
            Type::F32 => return "f32".into(),
            Type::F64 => return "f64".into(),
            Type::Char => return "char".into(),
            Type::String => return "string".into(),
            Type::ErrorContext => return "error-context".into(),
            Type::Id(id) => *id,
        };
        let def = &self.resolve.types[id];
        let opt = |t: Option<&Type>| t.map_or_else(|| "_".to_string(), |t| self.name(t));
        match &def.kind {
            TypeDefKind::Type(t) => self.name(t),
            TypeDefKind::Option(t) => format!("option<{}>", self.name(t)),
            TypeDefKind::List(t) => format!("list<{}>", self.name(t)),
            TypeDefKind::Result(r) => {
                format!("result<{}, {}>", opt(r.ok.as_ref()), opt(r.err.as_ref()))
            }
            TypeDefKind::Tuple(t) => {
                let parts: Vec<String> = t.types.iter().map(|t| self.name(t)).collect();
                format!("tuple<{}>", parts.join(", "))
            }
            TypeDefKind::Handle(wit_parser::Handle::Own(r)) => {
                format!("own<{}>", self.name(&Type::Id(*r)))
            }
            TypeDefKind::Handle(wit_parser::Handle::Borrow(r)) => {
                format!("borrow<{}>", self.name(&Type::Id(*r)))
            }
            _ => def.name.clone().unwrap_or_else(|| "?".into()),
        }
    }
}

/// Every host reads a discriminant as one byte.
fn check_tag(tag: Int, name: &str) -> Result<()> {
    if tag != Int::U8 {
        bail!("{name}: a discriminant wider than one byte, which no host reads");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        describe(&wit).expect("wit/ describes")
    }

    fn ty<'a>(l: &'a Layout, name: &str) -> &'a TypeLayout {
        l.types
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    }

    fn offsets(t: &TypeLayout) -> Vec<(&str, usize)> {
        t.offsets.iter().map(|(k, v)| (k.as_str(), *v)).collect()
    }

    fn export<'a>(l: &'a Layout, name: &str) -> &'a FuncLayout {
        l.exports
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    }

    #[test]
    fn records_have_the_offsets_of_docs_embedding() {
        let l = layout();
        let entry = ty(&l, "entry");
        assert_eq!((entry.size, entry.align), (40, 8));
        assert_eq!(
            offsets(entry),
            [
                ("checkpoint", 0),
                ("committables", 8),
                ("watermark", 16),
                ("savepoint", 32)
            ]
        );
        let outcome = ty(&l, "outcome");
        assert_eq!((outcome.size, outcome.align), (48, 8));
        assert_eq!(offsets(outcome)[5], ("committed-up-to", 32));
        let snapshot = ty(&l, "snapshot");
        assert_eq!(
            (snapshot.size, offsets(snapshot)[5]),
            (56, ("committables", 48))
        );
        let committable = ty(&l, "tuple<u32, list<u8>>");
        assert_eq!(
            (committable.size, offsets(committable)),
            (12, vec![("f0", 0), ("f1", 4)])
        );
        assert_eq!(
            offsets(ty(&l, "batch-error")),
            [("applied", 0), ("outcome", 8), ("error", 64)]
        );
        assert_eq!(offsets(ty(&l, "option<batch-effects>")), [("payload", 4)]);
        assert_eq!(offsets(ty(&l, "option<u64>")), [("payload", 8)]);
        assert_eq!(offsets(ty(&l, "list")), [("ptr", 0), ("len", 4)]);
        // Only ever flattened into parameters: no memory layout.
        assert!(l
            .types
            .iter()
            .all(|t| t.name != "config" && t.name != "limits"));
    }

    #[test]
    fn functions_have_their_abi() {
        let l = layout();
        let start = export(&l, "[method]coordinator.start");
        assert_eq!(start.result.as_deref(), Some("result<outcome, error>"));
        assert_eq!(
            (start.flat_params, start.return_area, start.post_return),
            (1, Some((56, 8)), true)
        );
        assert_eq!(offsets(ty(&l, "result<outcome, error>")), [("payload", 8)]);
        // The constructor's config and option<restore-point> are exactly
        // 16 flat values: still flat.
        let ctor = export(&l, "[constructor]coordinator");
        assert_eq!(
            (ctor.flat_params, ctor.indirect_params, ctor.return_area),
            (16, false, None)
        );
        let state = export(&l, "[method]coordinator.state");
        assert_eq!((state.return_area, state.post_return), (None, false));
        let cut = export(&l, "[method]coordinator.committed-up-to");
        assert_eq!((cut.return_area, cut.post_return), (Some((16, 8)), false));
        assert!(export(&l, "[dtor]writer").result.is_none());
        let get = l
            .imports
            .iter()
            .find(|f| f.name == "get")
            .expect("storage.get");
        assert_eq!((get.flat_params, get.return_area), (3, Some((16, 4))));
        assert_eq!(
            start.core_name("0.2.9"),
            "sink:coordinator/coordinator@0.2.9#[method]coordinator.start"
        );
    }
}
