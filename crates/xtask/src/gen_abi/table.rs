//! `functions.rs` and `exports.rs`: the table of every driver export and the
//! `cuda_exports!` macro, from the `PFN_` typedefs and the list of real exports.
//!
//! Mapping rule (typedef → export name), checked against the driver's own
//! `cuGetProcAddress` answers by the abi crate's tests:
//! * the non-per-thread typedefs of one API `cuX`, sorted by version, are the exports
//!   `cuX`, `cuX_v2`, `cuX_v3`, ... in that order;
//! * a per-thread typedef `PFN_cuX_vNNNN_ptds` (or `_ptsz`) is the export named after
//!   the newest non-per-thread variant with version ≤ NNNN, plus `_ptds` (or `_ptsz`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::bindings::{TypeDef, FUNCTION_TYPES};
use super::cdecl::{CParam, CType, Typedef};
use super::overrides::PARAM_KIND_OVERRIDES;
use crate::Error;

/// Handle types (by C typedef name) and their `HandleKind` variant. A pointer-to-opaque
/// typedef used by an export but missing here stops the generator.
const HANDLES: &[(&str, &str)] = &[
    ("CUcontext", "Context"),
    ("CUstream", "Stream"),
    ("CUevent", "Event"),
    ("CUmodule", "Module"),
    ("CUfunction", "Function"),
    ("CUlibrary", "Library"),
    ("CUkernel", "Kernel"),
    ("CUgraph", "Graph"),
    ("CUgraphNode", "GraphNode"),
    ("CUgraphExec", "GraphExec"),
    ("CUgraphDeviceNode", "GraphDeviceNode"),
    ("CUgraphConditionalHandle", "GraphConditional"),
    ("CUmemoryPool", "MemPool"),
    ("CUmemGenericAllocationHandle", "MemGenericAllocation"),
    ("CUmemGenericAllocationHandle_v1", "MemGenericAllocation"),
    ("CUarray", "Array"),
    ("CUmipmappedArray", "MipmappedArray"),
    ("CUtexref", "TexRef"),
    ("CUsurfref", "SurfRef"),
    ("CUtexObject", "TexObject"),
    ("CUtexObject_v1", "TexObject"),
    ("CUsurfObject", "SurfObject"),
    ("CUsurfObject_v1", "SurfObject"),
    ("CUexternalMemory", "ExternalMemory"),
    ("CUexternalSemaphore", "ExternalSemaphore"),
    ("CUgraphicsResource", "GraphicsResource"),
    ("CUlinkState", "LinkState"),
    ("CUuserObject", "UserObject"),
    ("CUgreenCtx", "GreenCtx"),
    ("CUdevResourceDesc", "DevResourceDesc"),
    ("CUasyncCallbackHandle", "AsyncCallback"),
    ("CUlogsCallbackHandle", "LogsCallback"),
    ("CUeglStreamConnection", "EglStreamConnection"),
    ("CUdevice", "Device"),
    ("CUdevice_v1", "Device"),
];

/// C scalar spellings and their Rust types.
const C_SCALARS: &[(&str, &str)] = &[
    ("void", "::core::ffi::c_void"),
    ("char", "::core::ffi::c_char"),
    ("signed char", "::core::ffi::c_schar"),
    ("unsigned char", "::core::ffi::c_uchar"),
    ("short", "::core::ffi::c_short"),
    ("unsigned short", "::core::ffi::c_ushort"),
    ("int", "::core::ffi::c_int"),
    ("unsigned int", "::core::ffi::c_uint"),
    ("long", "::core::ffi::c_long"),
    ("unsigned long", "::core::ffi::c_ulong"),
    ("long long", "::core::ffi::c_longlong"),
    ("unsigned long long", "::core::ffi::c_ulonglong"),
    ("float", "f32"),
    ("double", "f64"),
    ("size_t", "usize"),
];

/// Names of size parameters that give the length of a host buffer parameter.
const LEN_PARAMS: &[&str] = &["ByteCount", "bytesize", "byteSize", "bytes", "size"];

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum",
    "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod",
    "move", "mut", "priv", "pub", "ref", "return", "self", "static", "struct", "super", "trait",
    "true", "type", "unsafe", "use", "where", "while", "yield",
];

/// One row of the generated table.
pub struct Row {
    pub name: String,
    pub base: String,
    pub version: u32,
    pub per_thread: &'static str,
    pub typedef: Option<Typedef>,
}

fn variant_name(base: &str, index: usize) -> String {
    if index == 0 {
        base.to_string()
    } else {
        format!("{base}_v{}", index + 1)
    }
}

/// Maps typedefs to export names (see the module doc) and builds one row per export.
/// `typedefs` lists the primary header set first; the first typedef of a (base,
/// version, per-thread) triple wins.
pub fn build_rows(typedefs: Vec<Typedef>, exports: &[String]) -> Result<Vec<Row>, Error> {
    let mut by_base: BTreeMap<String, BTreeMap<(u32, &'static str), Typedef>> = BTreeMap::new();
    for td in typedefs {
        by_base
            .entry(td.base.clone())
            .or_default()
            .entry((td.version, td.per_thread))
            .or_insert(td);
    }
    let mut named: BTreeMap<String, Typedef> = BTreeMap::new();
    for (base, variants) in &by_base {
        let plain: Vec<u32> = variants
            .keys()
            .filter(|(_, pt)| pt.is_empty())
            .map(|k| k.0)
            .collect();
        for ((version, pt), td) in variants {
            let index = if pt.is_empty() {
                plain.iter().position(|v| v == version)
            } else {
                plain.iter().rposition(|v| v <= version)
            };
            let index = index.ok_or_else(|| {
                format!("PFN_{base}_v{version}{pt}: no older default-stream variant")
            })?;
            let name = format!("{}{pt}", variant_name(base, index));
            if named.insert(name.clone(), td.clone()).is_some() {
                return Err(format!("two typedefs map to export {name}").into());
            }
        }
    }
    let exported: BTreeSet<&str> = exports.iter().map(String::as_str).collect();
    let unexported: Vec<&str> = named
        .keys()
        .map(String::as_str)
        .filter(|n| !exported.contains(n))
        .collect();
    if !unexported.is_empty() {
        println!(
            "gen-abi: typedefs with no export in the 580 driver (left out): {}",
            unexported.join(", ")
        );
    }
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    for name in exports {
        if let Some(td) = named.get(name) {
            rows.push(Row {
                name: name.clone(),
                base: td.base.clone(),
                version: td.version,
                per_thread: td.per_thread,
                typedef: Some(td.clone()),
            });
        } else {
            missing.push(name.as_str());
            let (stem, per_thread) = split_per_thread(name);
            let base = match stem.rsplit_once("_v") {
                Some((b, v)) if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) => b,
                _ => stem,
            };
            rows.push(Row {
                name: name.clone(),
                base: base.to_string(),
                version: 0,
                per_thread,
                typedef: None,
            });
        }
    }
    println!(
        "gen-abi: {} exports, {} without any typedef: {}",
        rows.len(),
        missing.len(),
        missing.join(", ")
    );
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

fn split_per_thread(name: &str) -> (&str, &'static str) {
    if let Some(s) = name.strip_suffix("_ptds") {
        (s, "_ptds")
    } else if let Some(s) = name.strip_suffix("_ptsz") {
        (s, "_ptsz")
    } else {
        (name, "")
    }
}

/// Type knowledge for classification and Rust spelling.
pub struct Types<'a> {
    pub index: &'a BTreeMap<String, TypeDef>,
}

impl Types<'_> {
    /// The chain of names `name` aliases through, `name` first.
    fn chain<'n>(&'n self, name: &'n str) -> Vec<&'n str> {
        let mut out = vec![name];
        let mut cur = name;
        while let Some(TypeDef::Alias(rhs)) = self.index.get(cur) {
            if !rhs.chars().all(|c| c.is_alphanumeric() || c == '_') || out.contains(&rhs.as_str())
            {
                break;
            }
            out.push(rhs);
            cur = rhs;
        }
        out
    }

    fn final_def(&self, name: &str) -> Option<&TypeDef> {
        self.chain(name).last().and_then(|n| self.index.get(*n))
    }

    fn rust_base(&self, base: &str) -> Result<String, Error> {
        if let Some((_, r)) = C_SCALARS.iter().find(|(c, _)| *c == base) {
            return Ok((*r).to_string());
        }
        if self.index.contains_key(base) {
            return Ok(format!("$crate::types::{base}"));
        }
        Err(format!("type `{base}` is not defined by the generated types").into())
    }

    /// The Rust spelling of a C type.
    pub fn rust_type(&self, ty: &CType) -> Result<String, Error> {
        let mut s = self.rust_base(&ty.base)?;
        let mut ptrs = ty.ptrs.clone();
        if FUNCTION_TYPES.contains(&ty.base.as_str()) && !ptrs.is_empty() {
            ptrs.remove(0);
        }
        let mut pointee_const = ty.base_const;
        for c in ptrs {
            s = format!("*{} {s}", if pointee_const { "const" } else { "mut" });
            pointee_const = c;
        }
        Ok(s)
    }

    fn handle_kind(&self, base: &str) -> Option<&'static str> {
        self.chain(base)
            .iter()
            .find_map(|n| HANDLES.iter().find(|(h, _)| h == n).map(|(_, k)| *k))
    }

    fn is_opaque_pointer_alias(&self, base: &str) -> bool {
        matches!(self.final_def(base), Some(TypeDef::Alias(rhs)) if rhs.starts_with("*mut") && rhs.ends_with("_st"))
    }

    fn is_callback(&self, base: &str) -> bool {
        FUNCTION_TYPES.contains(&base)
            || matches!(self.final_def(base), Some(TypeDef::Alias(rhs)) if rhs.contains("extern \"C\" fn"))
    }

    /// The `ParamKind` expression of parameter `i` of `params`.
    pub fn param_kind(&self, params: &[CParam], i: usize, what: &str) -> Result<String, Error> {
        let p = &params[i];
        let ty = &p.ty;
        if ty.ptrs.is_empty() {
            if ty.base.starts_with("CUdeviceptr") {
                return Ok("ParamKind::DevPtr".into());
            }
            if let Some(k) = self.handle_kind(&ty.base) {
                return Ok(format!("ParamKind::Handle(HandleKind::{k})"));
            }
            if self.is_opaque_pointer_alias(&ty.base) {
                return Err(format!(
                    "{what}: `{}` looks like a handle type; add it to HANDLES",
                    ty.base
                )
                .into());
            }
            if self.is_callback(&ty.base) {
                return Ok("ParamKind::Callback".into());
            }
            return Ok(match self.final_def(&ty.base) {
                Some(TypeDef::Record) => "ParamKind::In".into(),
                _ => "ParamKind::Scalar".into(),
            });
        }
        if FUNCTION_TYPES.contains(&ty.base.as_str()) && ty.ptrs.len() == 1 {
            return Ok("ParamKind::Callback".into());
        }
        if ty.base == "void" && ty.ptrs.len() == 1 {
            let host = p.name.ends_with("Host") || p.name == "p";
            let len = params.iter().position(|q| {
                q.ty.ptrs.is_empty()
                    && q.ty.base == "size_t"
                    && LEN_PARAMS.contains(&q.name.as_str())
            });
            return Ok(match (host, len) {
                (true, Some(len)) => format!("ParamKind::HostBuf {{ len_param: {len} }}"),
                _ => "ParamKind::Opaque".into(),
            });
        }
        Ok(if ty.pointee_const() {
            "ParamKind::In".into()
        } else {
            "ParamKind::Out".into()
        })
    }
}

fn rust_ident(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// Renders `functions.rs` (after the header line).
pub fn render_functions(rows: &[Row], types: &Types<'_>) -> Result<String, Error> {
    let mut used: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut s = String::new();
    s.push_str("use crate::table::{FnDesc, HandleKind, Param, ParamKind, PerThread};\n\n");
    s.push_str("/// Every symbol the 580 driver exports, sorted by name.\n");
    s.push_str("pub static FUNCTIONS: &[FnDesc] = &[\n");
    for row in rows {
        let per_thread = match row.per_thread {
            "_ptds" => "PerThread::Ptds",
            "_ptsz" => "PerThread::Ptsz",
            _ => "PerThread::None",
        };
        let _ = write!(
            s,
            "FnDesc {{ name: {:?}, base: {:?}, version: {}, per_thread: {per_thread}, signature_known: {}, params: &[",
            row.name,
            row.base,
            row.version,
            row.typedef.is_some()
        );
        if let Some(td) = &row.typedef {
            for i in 0..td.params.len() {
                let p = &td.params[i];
                let over = PARAM_KIND_OVERRIDES
                    .iter()
                    .find(|(b, n, _)| *b == td.base && *n == p.name);
                let kind = match over {
                    Some((b, n, k)) => {
                        used.insert((*b, *n));
                        format!("ParamKind::{k}")
                    }
                    None => types.param_kind(&td.params, i, &row.name)?,
                };
                let _ = write!(
                    s,
                    "Param {{ name: {:?}, c_type: {:?}, kind: {kind} }},",
                    p.name,
                    p.ty.c_spelling()
                );
            }
        }
        s.push_str("] },\n");
    }
    s.push_str("];\n");
    let stale: Vec<String> = PARAM_KIND_OVERRIDES
        .iter()
        .filter(|(b, n, _)| !used.contains(&(*b, *n)))
        .map(|(b, n, _)| format!("{b}.{n}"))
        .collect();
    if !stale.is_empty() {
        return Err(format!(
            "parameter kind overrides match no parameter: {}",
            stale.join(", ")
        )
        .into());
    }
    Ok(s)
}

/// Renders `exports.rs` (after the header line): the `cuda_exports!` macro.
pub fn render_exports(rows: &[Row], types: &Types<'_>) -> Result<String, Error> {
    let mut s = String::new();
    s.push_str(
        "/// Lists every driver export with its Rust signature: `cuda_exports!(cb)` expands to\n\
         /// `cb! { fn cuInit(Flags: ::core::ffi::c_uint) -> $crate::types::CUresult; ... }`.\n\
         /// Exports with no known signature are listed as `fn name() -> CUresult;`.\n",
    );
    s.push_str("#[macro_export]\nmacro_rules! cuda_exports {\n    ($callback:ident) => {\n        $callback! {\n");
    for row in rows {
        let _ = write!(s, "            fn {}(", row.name);
        let mut ret = " -> $crate::types::CUresult".to_string();
        if let Some(td) = &row.typedef {
            let params: Result<Vec<String>, Error> = td
                .params
                .iter()
                .map(|p| {
                    Ok(format!(
                        "{}: {}",
                        rust_ident(&p.name),
                        types.rust_type(&p.ty)?
                    ))
                })
                .collect();
            s.push_str(&params?.join(", "));
            ret = if td.ret.base == "void" && td.ret.ptrs.is_empty() {
                String::new()
            } else {
                format!(" -> {}", types.rust_type(&td.ret)?)
            };
        }
        let _ = writeln!(s, "){ret};");
    }
    s.push_str("        }\n    };\n}\n");
    Ok(s)
}
