//! The remoting table, read into one model per operation: its wire fields,
//! the variable parts of its blobs, and, for table calls, how each parameter
//! of the entry point travels.

use std::collections::{BTreeMap, HashMap};

use vgpu_abi::remote::{Mode, CALLS, MANUAL, OPS};
use vgpu_abi::{FnDesc, HandleKind, ParamKind, FUNCTIONS};

use super::abi_types::{Abi, Prim, Ty};
use crate::Error;

/// A wire field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wire {
    Prim(Prim),
    Bool,
    /// A handle id (u64), translated by the worker.
    Handle(HandleKind),
    /// A device address (u64).
    DevPtr,
    /// A fixed number of bytes: a literal count or a `size_of` expression.
    Bytes(String),
}

impl Wire {
    /// The field's Rust type in the wire struct.
    pub fn rust(&self) -> String {
        match self {
            Wire::Prim(p) => p.wire().to_string(),
            Wire::Bool => "u8".into(),
            Wire::Handle(_) | Wire::DevPtr => "U64".into(),
            Wire::Bytes(n) => format!("[u8; {n}]"),
        }
    }

    /// The field's type in the schema text the hash covers.
    pub fn schema(&self) -> String {
        match self {
            Wire::Prim(p) => p.schema().into(),
            Wire::Bool => "bool".into(),
            Wire::Handle(k) => format!("handle({k:?})"),
            Wire::DevPtr => "devptr".into(),
            Wire::Bytes(n) => format!("bytes({n})"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub wire: Wire,
}

/// How one parameter of a table call travels.
#[derive(Debug, Clone)]
pub enum Plan {
    /// A value in the request: a scalar, an enum, a device ordinal.
    Scalar { field: String, ty: Ty },
    /// A handle in the request, as its wire id.
    Handle { field: String, kind: HandleKind },
    /// A device address in the request (32 bits for the `_v1` forms).
    DevPtr { field: String, narrow: bool },
    /// A struct read through a pointer, as its bytes in the request.
    InRecord {
        field: String,
        ty: String,
        handles: Vec<(String, HandleKind)>,
    },
    /// A scalar read through a pointer, in the request.
    InScalar { field: String, ty: Ty },
    /// A NUL-terminated string, in the request's blob (its length in
    /// `len_field`).
    InStr { len_field: String },
    /// `count` elements read through a pointer, in the request's blob;
    /// with `handle`, each a handle the worker translates.
    InArray {
        count: String,
        elem: String,
        handle: Option<HandleKind>,
    },
    /// A value written through a pointer, in the reply.
    Out {
        field: String,
        ty: Ty,
        want: Option<String>,
    },
    /// A handle written through a pointer, in the reply as its wire id.
    OutHandle {
        field: String,
        kind: HandleKind,
        want: Option<String>,
    },
    /// A struct written through a pointer, as its bytes in the reply.
    OutRecord {
        field: String,
        ty: String,
        want: Option<String>,
    },
    /// A character buffer of `len` bytes, in the reply's blob.
    OutString { len: String },
    /// `count` elements written through a pointer, in the reply's blob.
    OutArray { count: String, elem: String },
}

/// One parameter of a table call.
#[derive(Debug, Clone)]
pub struct Arg {
    /// The parameter's name in the header.
    pub name: String,
    /// Its Rust type in the ABI crate.
    pub rust: String,
    pub plan: Plan,
}

/// A device range the worker checks before the call.
#[derive(Debug, Clone)]
pub enum Range {
    /// `ptr` for `bytes` (a product of parameters and literals).
    Linear { ptr: String, bytes: Vec<String> },
    /// Rows of `width` bytes (a product) at `pitch`, `height` of them.
    Pitched {
        ptr: String,
        pitch: String,
        width: Vec<String>,
        height: String,
    },
}

/// What the table says about an entry point carried by an op of its own.
#[derive(Debug, Clone)]
pub struct CallModel {
    pub export: &'static FnDesc,
    pub mode: Mode,
    pub args: Vec<Arg>,
    pub ranges: Vec<Range>,
    /// `posted(stream)`: the stream parameter whose work it follows;
    /// `posted(all)` / `posted`: `None`.
    pub follows_stream: Option<String>,
    /// Handle parameters noted `destroys`: the worker forgets their ids
    /// once the driver destroyed the object (request field, kind).
    pub destroys: Vec<(String, HandleKind)>,
    /// `checked`: the worker runs `<area>::check_<snake>` on the request
    /// before the generated call (a check the driver would crash on).
    pub checked: bool,
    /// `capture`: the client answers it itself while no stream capture is
    /// open; its conformance test opens one on the fixture stream first,
    /// so that the call reaches the worker.
    pub capture: bool,
}

/// What a synchronizing check looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sync {
    Never,
    Always,
    /// Unless this bool field is set.
    Unless(String),
}

/// One operation: a table call or a hand-written op.
#[derive(Debug, Clone)]
pub struct Op {
    /// `Op` variant: the export without `cu`, or the hand-written op's name.
    pub name: String,
    /// Module and function name: the name in snake case.
    pub snake: String,
    pub id: u16,
    pub area: String,
    pub doc: String,
    pub request: Vec<Field>,
    pub reply: Vec<Field>,
    /// The request carries a blob: `Some(parts)` for table calls (whose
    /// lengths the fields give), `Some(vec![])` for a free blob.
    pub request_blob: Option<Vec<String>>,
    pub reply_blob: Option<Vec<String>>,
    pub posted: bool,
    pub sync: Sync,
    pub context: bool,
    pub fd: bool,
    /// A descriptor follows the request (SCM_RIGHTS).
    pub fd_in: bool,
    pub call: Option<CallModel>,
}

/// The whole table, checked.
pub struct Model {
    pub ops: Vec<Op>,
    /// Hand-written client entry points, by area.
    pub manual: BTreeMap<String, Vec<String>>,
}

/// `cuCtxGetLimit` → `ctx_get_limit`; `cuMemsetD2D8_v2` → `memset_d2d8_v2`.
pub fn snake(name: &str) -> String {
    let name = name.strip_prefix("cu").unwrap_or(name);
    // Copy directions are one word: `MemcpyHtoD` → `memcpy_htod`.
    let mut name = name.to_string();
    for (from, to) in [
        ("HtoD", "Htod"),
        ("DtoH", "Dtoh"),
        ("DtoD", "Dtod"),
        ("HtoA", "Htoa"),
        ("AtoH", "Atoh"),
        ("DtoA", "Dtoa"),
        ("AtoD", "Atod"),
        ("AtoA", "Atoa"),
    ] {
        name = name.replace(from, to);
    }
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let next_lower = next.is_some_and(|n| n.is_ascii_lowercase());
            let boundary = match prev {
                None | Some('_') => false,
                Some(p) if p.is_ascii_lowercase() => true,
                // A word after a number: `D8Async` → `d8_async`, `L2Cache` → `l2_cache`.
                Some(p) if p.is_ascii_digit() => next_lower,
                // The last capital of a run that starts a word: `PCIBus` →
                // `pci_bus`, `1DLinear` → `1d_linear`, but `SMem` → `smem`.
                Some(p) if p.is_ascii_uppercase() => {
                    let run = chars[..i]
                        .iter()
                        .rev()
                        .take_while(|c| c.is_ascii_uppercase())
                        .count();
                    let before = i.checked_sub(run + 1).map(|j| chars[j]);
                    next_lower && (run >= 2 || before.is_some_and(|b| b.is_ascii_digit()))
                }
                Some(_) => false,
            };
            if boundary {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits `a, b(c, d), e` at top-level commas.
pub(super) fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// `name(args)` → (`name`, `args`); a bare word → (word, "").
pub(super) fn call_form(s: &str) -> (String, String) {
    let s = s.trim();
    match s.split_once('(') {
        Some((n, rest)) => (
            n.trim().to_string(),
            rest.trim_end().trim_end_matches(')').trim().to_string(),
        ),
        None => (s.to_string(), String::new()),
    }
}

/// The factors of `a * b * 2`, without spaces.
pub(super) fn product(s: &str) -> Vec<String> {
    s.split('*').map(|f| f.trim().to_string()).collect()
}

pub(super) fn handle_kind(name: &str) -> Result<HandleKind, Error> {
    Ok(match name {
        "Context" => HandleKind::Context,
        "Stream" => HandleKind::Stream,
        "Event" => HandleKind::Event,
        "Module" => HandleKind::Module,
        "Function" => HandleKind::Function,
        "Library" => HandleKind::Library,
        "Kernel" => HandleKind::Kernel,
        "Graph" => HandleKind::Graph,
        "GraphNode" => HandleKind::GraphNode,
        "GraphExec" => HandleKind::GraphExec,
        "GreenCtx" => HandleKind::GreenCtx,
        "TexRef" => HandleKind::TexRef,
        "MemPool" => HandleKind::MemPool,
        "SurfRef" => HandleKind::SurfRef,
        "Array" => HandleKind::Array,
        "MipmappedArray" => HandleKind::MipmappedArray,
        "UserObject" => HandleKind::UserObject,
        other => return Err(format!("handle kind {other} is not known to the generator").into()),
    })
}

/// Handle kinds by the C type name of a handle (`CUcontext` → Context),
/// from every by-value handle parameter in the ABI table.
fn handle_types() -> HashMap<&'static str, HandleKind> {
    let mut m = HashMap::new();
    for f in FUNCTIONS {
        for p in f.params {
            if let ParamKind::Handle(k) = p.kind {
                m.insert(p.c_type, k);
            }
        }
    }
    m
}

fn wire_type(s: &str) -> Result<Wire, Error> {
    let (name, arg) = call_form(s);
    Ok(match name.as_str() {
        "u8" => Wire::Prim(Prim::U8),
        "u16" => Wire::Prim(Prim::U16),
        "u32" => Wire::Prim(Prim::U32),
        "i32" => Wire::Prim(Prim::I32),
        "u64" => Wire::Prim(Prim::U64),
        "i64" => Wire::Prim(Prim::I64),
        "f32" => Wire::Prim(Prim::F32),
        "bool" => Wire::Bool,
        "devptr" => Wire::DevPtr,
        "bytes" => Wire::Bytes(arg),
        "handle" => Wire::Handle(handle_kind(&arg)?),
        other => return Err(format!("unknown wire type {other}").into()),
    })
}

fn fields(s: &str) -> Result<Vec<Field>, Error> {
    split_top(s)
        .iter()
        .map(|f| {
            let (n, t) = f
                .split_once(':')
                .ok_or_else(|| format!("field `{f}` has no type"))?;
            Ok(Field {
                name: n.trim().to_string(),
                wire: wire_type(t)?,
            })
        })
        .collect()
}

/// Options of a line: `sync, posted(stream), nocontext` → (name, arg).
pub(super) fn options(s: &str) -> Vec<(String, String)> {
    split_top(s).iter().map(|o| call_form(o)).collect()
}

impl Model {
    pub fn build(abi: &Abi) -> Result<Model, Error> {
        let handles = handle_types();
        let mut ops = Vec::new();
        for w in OPS {
            let mut op = Op {
                name: w.name.to_string(),
                snake: snake(w.name),
                id: w.id,
                area: w.area.to_string(),
                doc: w
                    .doc
                    .lines()
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join("\n")
                    .trim()
                    .to_string(),
                request: fields(w.request)?,
                reply: fields(w.reply)?,
                request_blob: w.request_blob.then(Vec::new),
                reply_blob: w.reply_blob.then(Vec::new),
                posted: false,
                sync: Sync::Never,
                context: true,
                fd: false,
                fd_in: false,
                call: None,
            };
            for (name, arg) in options(w.opts) {
                match name.as_str() {
                    "posted" => op.posted = true,
                    "sync" => op.sync = Sync::Always,
                    "sync_unless" => op.sync = Sync::Unless(arg),
                    "nocontext" => op.context = false,
                    "fd" => op.fd = true,
                    "fd_in" => op.fd_in = true,
                    other => return Err(format!("{}: unknown option {other}", w.name).into()),
                }
            }
            ops.push(op);
        }
        for c in CALLS {
            ops.push(
                super::plan::call_op(c, abi, &handles).map_err(|e| format!("{}: {e}", c.name))?,
            );
        }
        let mut manual = BTreeMap::new();
        for m in MANUAL {
            manual
                .entry(m.area.to_string())
                .or_insert_with(Vec::new)
                .extend(m.names.iter().map(|n| n.to_string()));
        }
        let model = Model { ops, manual };
        model.check()?;
        Ok(model)
    }

    /// Ids and names are unique; every entry point named exists once.
    fn check(&self) -> Result<(), Error> {
        let mut ids = HashMap::new();
        let mut op_names = HashMap::new();
        for op in &self.ops {
            if let Some(other) = ids.insert(op.id, &op.name) {
                return Err(format!("wire id {} is used by {other} and {}", op.id, op.name).into());
            }
            if op_names.insert(op.name.as_str(), op.id).is_some() {
                return Err(format!(
                    "two operations are named {}: a hand-written op must not take the name of an entry point without `cu`",
                    op.name
                )
                .into());
            }
            if let Sync::Unless(f) = &op.sync {
                let is_bool = op
                    .request
                    .iter()
                    .any(|x| &x.name == f && x.wire == Wire::Bool);
                if !is_bool {
                    return Err(format!("{}: sync_unless({f}) names no bool field", op.name).into());
                }
            }
        }
        let mut names: HashMap<&str, usize> = HashMap::new();
        for op in &self.ops {
            if let Some(c) = &op.call {
                *names.entry(c.export.name).or_default() += 1;
            }
        }
        for list in self.manual.values() {
            for n in list {
                if vgpu_abi::find(n).is_none() {
                    return Err(format!("manual entry {n} is not an export").into());
                }
                *names.entry(n).or_default() += 1;
            }
        }
        if let Some((n, _)) = names.iter().find(|(_, &c)| c > 1) {
            return Err(format!("{n} appears more than once in the table").into());
        }
        Ok(())
    }
}

impl Plan {
    /// Arrays of plain values only (handles inside arrays need a
    /// hand-written call for now).
    pub(super) fn checked(self, inner: &Ty) -> Result<Plan, Error> {
        match inner {
            Ty::Prim(_)
            | Ty::Enum { .. }
            | Ty::Record {
                pointers: false, ..
            } => Ok(self),
            other => Err(format!("an array of {other:?} needs a hand-written call").into()),
        }
    }
}
