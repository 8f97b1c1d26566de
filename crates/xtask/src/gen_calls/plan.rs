//! How each parameter of a table call travels: the [`Plan`] of every
//! argument of a generated call, from its C type in the ABI table and the
//! table line's notes (`crates/abi/src/remote/mod.rs` says what they mean).

use std::collections::HashMap;

use vgpu_abi::{HandleKind, ParamKind, PerThread};

use super::abi_types::{Abi, Prim, Ty};
use super::model::*;
use crate::Error;

/// Reads the notes of a call: `param: note, …`.
fn notes(s: &str) -> Result<HashMap<String, Vec<(String, String)>>, Error> {
    let mut m: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for n in split_top(s) {
        let (param, note) = n
            .split_once(':')
            .ok_or_else(|| format!("note `{n}` names no parameter"))?;
        m.entry(param.trim().to_string())
            .or_default()
            .push(call_form(note));
    }
    Ok(m)
}

pub(super) fn call_op(
    c: &vgpu_abi::remote::Call,
    abi: &Abi,
    handles: &HashMap<&'static str, HandleKind>,
) -> Result<Op, Error> {
    let export = vgpu_abi::find(c.name).ok_or("not an export")?;
    if !export.signature_known {
        return Err("its signature is unknown".into());
    }
    let params = abi.params(c.name)?;
    let mut notes = notes(c.notes)?;
    let mut op = Op {
        name: c.name.strip_prefix("cu").unwrap_or(c.name).to_string(),
        snake: snake(c.name),
        id: c.id,
        area: c.area.to_string(),
        doc: format!("`{}`.", c.name),
        request: Vec::new(),
        reply: Vec::new(),
        request_blob: None,
        reply_blob: None,
        posted: false,
        sync: Sync::Never,
        context: true,
        fd: false,
        fd_in: false,
        call: None,
    };
    let mut follows_stream = None;
    let mut checked = false;
    let mut capture = false;
    for (name, arg) in options(c.opts) {
        match name.as_str() {
            "sync" => op.sync = Sync::Always,
            "checked" => checked = true,
            "capture" => capture = true,
            "nocontext" => op.context = false,
            "posted" => {
                op.posted = true;
                match arg.as_str() {
                    "" | "all" => {}
                    "stream" => {
                        let p = export
                            .params
                            .iter()
                            .find(|p| p.kind == ParamKind::Handle(HandleKind::Stream))
                            .ok_or("posted(stream) but no stream parameter")?;
                        follows_stream = Some(p.name.to_string());
                    }
                    other => return Err(format!("posted({other})?").into()),
                }
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    let mut args = Vec::new();
    let mut destroys = Vec::new();
    let mut ranges = Vec::new();
    let mut req_parts = Vec::new();
    let mut rep_parts = Vec::new();
    for (p, desc) in params.into_iter().zip(export.params) {
        let mine = notes.remove(&p.name).unwrap_or_default();
        let has = |n: &str| mine.iter().any(|(k, _)| k == n);
        let arg_of = |n: &str| mine.iter().find(|(k, _)| k == n).map(|(_, a)| a.clone());
        let field = super::model::snake(&format!("cu{}", upper_first(&p.name)));
        let optional = has("optional");
        let want = optional.then(|| format!("want_{field}"));
        if let Some(w) = &want {
            op.request.push(Field {
                name: w.clone(),
                wire: Wire::Bool,
            });
        }
        if let Some(len) = arg_of("range") {
            ranges.push(Range::Linear {
                ptr: p.name.clone(),
                bytes: product(&len),
            });
        }
        if let Some(a) = arg_of("pitched") {
            let parts = split_top(&a);
            let [pitch, width, height] = parts.as_slice() else {
                return Err(format!("pitched({a}) needs pitch, width, height").into());
            };
            ranges.push(Range::Pitched {
                ptr: p.name.clone(),
                pitch: pitch.clone(),
                width: product(width),
                height: height.clone(),
            });
        }
        let plan = match (&desc.kind, &p.ty) {
            (ParamKind::Handle(HandleKind::Device), Ty::Prim(pr)) => {
                op.request.push(Field {
                    name: field.clone(),
                    wire: Wire::Prim(*pr),
                });
                Plan::Scalar {
                    field,
                    ty: p.ty.clone(),
                }
            }
            (ParamKind::Handle(k), Ty::Ptr { .. }) => {
                if has("destroys") {
                    destroys.push((field.clone(), *k));
                }
                op.request.push(Field {
                    name: field.clone(),
                    wire: Wire::Handle(*k),
                });
                Plan::Handle { field, kind: *k }
            }
            (ParamKind::DevPtr, Ty::Prim(pr)) => {
                let narrow = *pr == Prim::U32;
                op.request.push(Field {
                    name: field.clone(),
                    wire: if narrow {
                        Wire::Prim(Prim::U32)
                    } else {
                        Wire::DevPtr
                    },
                });
                Plan::DevPtr { field, narrow }
            }
            (ParamKind::Scalar, Ty::Prim(pr) | Ty::Enum { inner: pr, .. }) => {
                op.request.push(Field {
                    name: field.clone(),
                    wire: Wire::Prim(*pr),
                });
                Plan::Scalar {
                    field,
                    ty: p.ty.clone(),
                }
            }
            (_, Ty::Ptr { mutable, to }) => {
                let input = if has("in") {
                    true
                } else if has("out") {
                    false
                } else {
                    !*mutable
                };
                match (input, to.as_ref()) {
                    (true, Ty::Prim(Prim::I8)) => {
                        let len_field = format!("{field}_len");
                        op.request.push(Field {
                            name: len_field.clone(),
                            wire: Wire::Prim(Prim::U32),
                        });
                        req_parts.push(len_field.clone());
                        Plan::InStr { len_field }
                    }
                    (false, Ty::Prim(Prim::I8)) => {
                        let len =
                            arg_of("string").ok_or("an out character buffer needs string(LEN)")?;
                        rep_parts.push(format!("string({len})"));
                        Plan::OutString { len }
                    }
                    (true, inner) if has("array") => {
                        let count = arg_of("array").unwrap_or_default();
                        req_parts.push(format!("array({count})"));
                        let pointee = desc.c_type.trim_start_matches("const ");
                        let pointee = pointee.trim_end_matches('*').trim();
                        match (inner, handles.get(pointee)) {
                            (Ty::Ptr { .. }, Some(k)) => Plan::InArray {
                                count,
                                elem: elem_rust(&p.rust)?,
                                handle: Some(*k),
                            },
                            _ => Plan::InArray {
                                count,
                                elem: elem_rust(&p.rust)?,
                                handle: None,
                            }
                            .checked(inner)?,
                        }
                    }
                    (false, inner) if has("array") => {
                        let count = arg_of("array").unwrap_or_default();
                        rep_parts.push(format!("array({count})"));
                        Plan::OutArray {
                            count,
                            elem: elem_rust(&p.rust)?,
                        }
                        .checked(inner)?
                    }
                    (true, Ty::Record { name, pointers }) => {
                        let handles = record_handles(&arg_of("handles").unwrap_or_default())?;
                        if *pointers && handles.is_empty() && !has("bytes") {
                            return Err(format!(
                                "{}: {name} holds pointers or handles: say which with handles(…), or bytes if none needs translating",
                                p.name
                            )
                            .into());
                        }
                        op.request.push(Field {
                            name: field.clone(),
                            wire: Wire::Bytes(format!(
                                "core::mem::size_of::<vgpu_abi::types::{name}>()"
                            )),
                        });
                        Plan::InRecord {
                            field,
                            ty: name.clone(),
                            handles,
                        }
                    }
                    (true, t @ (Ty::Prim(_) | Ty::Enum { .. })) => {
                        let pr = prim_of(t);
                        op.request.push(Field {
                            name: field.clone(),
                            wire: Wire::Prim(pr),
                        });
                        Plan::InScalar {
                            field,
                            ty: t.clone(),
                        }
                    }
                    (false, t @ (Ty::Prim(_) | Ty::Enum { .. })) => {
                        op.reply.push(Field {
                            name: field.clone(),
                            wire: Wire::Prim(prim_of(t)),
                        });
                        Plan::Out {
                            field,
                            ty: t.clone(),
                            want,
                        }
                    }
                    (false, Ty::Ptr { .. }) => {
                        let pointee = desc.c_type.trim_end_matches('*').trim();
                        let kind = handles
                            .get(pointee)
                            .copied()
                            .ok_or_else(|| format!("{}: {pointee} is not a handle type", p.name))?;
                        op.reply.push(Field {
                            name: field.clone(),
                            wire: Wire::Handle(kind),
                        });
                        Plan::OutHandle { field, kind, want }
                    }
                    (false, Ty::Record { name, .. }) => {
                        op.reply.push(Field {
                            name: field.clone(),
                            wire: Wire::Bytes(format!(
                                "core::mem::size_of::<vgpu_abi::types::{name}>()"
                            )),
                        });
                        Plan::OutRecord {
                            field,
                            ty: name.clone(),
                            want,
                        }
                    }
                    (_, other) => {
                        return Err(format!(
                            "{}: a pointer to {other:?} needs a hand-written call",
                            p.name
                        )
                        .into())
                    }
                }
            }
            (kind, ty) => {
                return Err(format!(
                    "{}: {kind:?} of type {ty:?} needs a hand-written call",
                    p.name
                )
                .into())
            }
        };
        args.push(super::model::Arg {
            name: p.name.clone(),
            rust: p.rust.clone(),
            plan,
        });
    }
    if let Some((param, _)) = notes.iter().next() {
        return Err(format!("a note names {param}, which is not a parameter").into());
    }
    if !req_parts.is_empty() {
        op.request_blob = Some(req_parts);
    }
    if !rep_parts.is_empty() {
        op.reply_blob = Some(rep_parts);
    }
    if op.posted && (!op.reply.is_empty() || op.reply_blob.is_some()) {
        return Err("a posted call returns nothing but a status".into());
    }
    if export.per_thread == PerThread::Ptds && op.posted {
        return Err("a _ptds form is synchronous".into());
    }
    op.call = Some(CallModel {
        export,
        mode: c.mode,
        args,
        ranges,
        follows_stream,
        destroys,
        checked,
        capture,
    });
    Ok(op)
}

fn prim_of(t: &Ty) -> Prim {
    match t {
        Ty::Prim(p) | Ty::Enum { inner: p, .. } => *p,
        _ => Prim::U64,
    }
}

/// The element type of a pointer type as written.
fn elem_rust(rust: &str) -> Result<String, Error> {
    rust.strip_prefix("*mut ")
        .or_else(|| rust.strip_prefix("*const "))
        .map(str::to_string)
        .ok_or_else(|| format!("{rust} is not a pointer").into())
}

fn record_handles(s: &str) -> Result<Vec<(String, HandleKind)>, Error> {
    split_top(s)
        .iter()
        .map(|h| {
            let (f, k) = h.split_once(':').ok_or("handles(FIELD: Kind, …)")?;
            Ok((f.trim().to_string(), handle_kind(k.trim())?))
        })
        .collect()
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}
