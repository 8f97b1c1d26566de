//! `crates/mediator/src/worker/generated/mod.rs`: the dispatch of every
//! operation, and the worker side of every table call: decode, translate
//! handles, check device ranges, call the driver, reply.

use std::fmt::Write;

use super::abi_types::{Prim, Ty};
use super::model::{Arg, Model, Op, Plan, Range};

pub fn render(model: &Model) -> String {
    let mut ops: Vec<&Op> = model.ops.iter().collect();
    ops.sort_by_key(|o| o.id);
    let mut s = String::from(
        "//! The worker's dispatch, and the worker side of every table call,\n\
         //! generated from the remoting table by `cargo xtask gen-calls`.\n\n\
         #![allow(non_snake_case, unused_imports, unused_mut, unused_variables, clippy::too_many_lines, clippy::let_and_return, clippy::redundant_field_names, clippy::needless_borrow, clippy::unnecessary_cast, clippy::redundant_slicing, clippy::useless_conversion, clippy::identity_op)]\n\n\
         use vgpu_abi::HandleKind;\n\
         use vgpu_proto::{Op, Request};\n\
         use zerocopy::little_endian::{F32, F64, I16, I32, I64, U16, U32, U64};\n\n\
         use super::calls::{self, ok, Reply};\n\
         use super::exec::Lane;\n\
         use super::Session;\n\
         use crate::driver::{entry, Status};\n\n\
         /// Runs one request: a table call here, a hand-written operation in\n\
         /// its area's module.\n\
         pub fn dispatch(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {\n\
         \x20   match req.op {\n",
    );
    for op in &ops {
        if op.call.as_ref().is_some_and(|c| c.checked) {
            let _ = writeln!(
                s,
                "        Op::{} => super::{}::check_{}(s, req).and_then(|()| {}(s, req)),",
                op.name, op.area, op.snake, op.snake
            );
        } else if op.call.is_some() {
            let _ = writeln!(s, "        Op::{} => {}(s, req),", op.name, op.snake);
        } else {
            let _ = writeln!(
                s,
                "        Op::{} => super::{}::{}(lane, s, req),",
                op.name, op.area, op.snake
            );
        }
    }
    s.push_str("    }\n}\n\n");
    for op in &ops {
        if op.call.is_some() {
            render_call(&mut s, op);
        }
    }
    s
}

fn field(a: &Arg) -> Option<&str> {
    match &a.plan {
        Plan::Scalar { field, .. }
        | Plan::Handle { field, .. }
        | Plan::DevPtr { field, .. }
        | Plan::InRecord { field, .. }
        | Plan::InScalar { field, .. }
        | Plan::Out { field, .. }
        | Plan::OutHandle { field, .. }
        | Plan::OutRecord { field, .. } => Some(field),
        _ => None,
    }
}

/// The expression turning request field `r.<f>` into a value of `ty`.
fn decode(f: &str, ty: &Ty) -> String {
    match ty {
        Ty::Prim(p) if p.is_byte() => format!("r.{f}"),
        Ty::Prim(Prim::Usize) => format!("calls::size(r.{f}.get())?"),
        Ty::Prim(_) => format!("r.{f}.get()"),
        Ty::Enum { name, inner } if inner.is_byte() => format!("vgpu_abi::types::{name}(r.{f})"),
        Ty::Enum { name, .. } => format!("vgpu_abi::types::{name}(r.{f}.get())"),
        other => panic!("no decoding for {other:?}"),
    }
}

/// The expression turning local `v` of `ty` into its wire field.
fn encode(v: &str, ty: &Ty) -> String {
    match ty {
        Ty::Prim(p) if p.is_byte() => v.to_string(),
        Ty::Prim(Prim::Usize) => format!("U64::new({v} as u64)"),
        Ty::Prim(p) => format!("{}::new({v})", p.wire()),
        Ty::Enum { inner, .. } if inner.is_byte() => format!("{v}.0"),
        Ty::Enum { inner, .. } => format!("{}::new({v}.0)", inner.wire()),
        other => panic!("no encoding for {other:?}"),
    }
}

fn kind(k: &vgpu_abi::HandleKind) -> String {
    format!("HandleKind::{k:?}")
}

/// The value of parameter `name` as a `u64`, for range arithmetic.
fn as_u64(op: &Op, name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return format!("{name}u64");
    }
    format!("a_{} as u64", var(op, name))
}

fn var(op: &Op, param: &str) -> String {
    let call = op.call.as_ref().expect("a table call");
    call.args
        .iter()
        .find(|a| a.name == param)
        .map(|a| field(a).map_or_else(|| a.name.clone(), str::to_string))
        .unwrap_or_else(|| panic!("{}: no parameter {param}", op.name))
}

fn render_call(s: &mut String, op: &Op) {
    let call = op.call.as_ref().expect("a table call");
    let m = format!("vgpu_proto::{}", op.snake);
    let _ = writeln!(
        s,
        "/// `{}`.\nfn {}(s: &Session, req: &Request) -> Result<Reply, Status> {{\n    let r: &{m}::Request = calls::message(req)?;",
        call.export.name, op.snake
    );
    let mut blob_at = false;
    let needs_tables = call
        .args
        .iter()
        .any(|a| matches!(a.plan, Plan::Handle { .. } | Plan::InRecord { .. }))
        || !call.ranges.is_empty();
    // Values that need no table.
    for a in &call.args {
        match &a.plan {
            Plan::Scalar { field, ty } => {
                let _ = writeln!(s, "    let a_{field} = {};", decode(field, ty));
            }
            Plan::DevPtr { field, .. } => {
                let _ = writeln!(s, "    let a_{field} = r.{field}.get();");
            }
            Plan::InScalar { field, ty } => {
                let _ = writeln!(s, "    let mut a_{field} = {};", decode(field, ty));
            }
            _ => {}
        }
    }
    // Handles and ranges, under one look at the tables.
    if needs_tables {
        s.push_str("    let t = s.tables();\n");
        for a in &call.args {
            match &a.plan {
                Plan::Handle { field, kind: k } => {
                    let _ = writeln!(
                        s,
                        "    let a_{field} = t.handle({}, r.{field}.get())?;",
                        kind(k)
                    );
                }
                Plan::InRecord { field, ty, handles } => {
                    let _ = writeln!(
                        s,
                        "    // SAFETY: `{ty}` is a C struct of integers and pointers, valid for any bytes.\n    let mut a_{field}: vgpu_abi::types::{ty} = unsafe {{ calls::record(&r.{field}) }};"
                    );
                    for (f, k) in handles {
                        let _ = writeln!(
                            s,
                            "    a_{field}.{f} = calls::as_ptr(t.handle({}, a_{field}.{f} as usize as u64)?);",
                            kind(k)
                        );
                    }
                }
                _ => {}
            }
        }
        for range in &call.ranges {
            match range {
                Range::Linear { ptr, bytes } => {
                    let factors: Vec<String> = bytes.iter().map(|b| as_u64(op, b)).collect();
                    let _ = writeln!(
                        s,
                        "    t.check({} as u64, calls::product(&[{}])?)?;",
                        format_args!("a_{}", var(op, ptr)),
                        factors.join(", ")
                    );
                }
                Range::Pitched {
                    ptr,
                    pitch,
                    width,
                    height,
                } => {
                    let factors: Vec<String> = width.iter().map(|b| as_u64(op, b)).collect();
                    let _ = writeln!(
                        s,
                        "    t.check(a_{} as u64, calls::pitched({}, calls::product(&[{}])?, {})?)?;",
                        var(op, ptr),
                        as_u64(op, pitch),
                        factors.join(", "),
                        as_u64(op, height)
                    );
                }
            }
        }
        s.push_str("    drop(t);\n");
    }
    // The request's blob parts.
    for a in &call.args {
        match &a.plan {
            Plan::InStr { len_field } => {
                if !blob_at {
                    s.push_str("    let mut at = 0usize;\n");
                    blob_at = true;
                }
                let _ = writeln!(
                    s,
                    "    let a_{0} = calls::string(calls::part(&req.blob, &mut at, r.{len_field}.get() as usize)?)?;",
                    a.name
                );
            }
            Plan::InArray {
                count,
                elem,
                handle,
            } => {
                if !blob_at {
                    s.push_str("    let mut at = 0usize;\n");
                    blob_at = true;
                }
                let n = as_u64(op, count);
                let _ = writeln!(
                    s,
                    "    let n_{0} = calls::size({n})?;\n    // SAFETY: `{elem}` is a plain C value, valid for any bytes.\n    let mut a_{0}: Vec<{elem}> = unsafe {{ calls::elements(calls::part(&req.blob, &mut at, n_{0} * core::mem::size_of::<{elem}>())?) }};",
                    a.name
                );
                if let Some(k) = handle {
                    let _ = writeln!(
                        s,
                        "    {{\n        let t = s.tables();\n        for h in a_{0}.iter_mut() {{\n            *h = calls::as_ptr(t.handle({1}, *h as usize as u64)?);\n        }}\n    }}",
                        a.name,
                        kind(k)
                    );
                }
            }
            _ => {}
        }
    }
    // Outputs.
    for a in &call.args {
        match &a.plan {
            Plan::Out { field, .. }
            | Plan::OutHandle { field, .. }
            | Plan::OutRecord { field, .. } => {
                let _ = writeln!(
                    s,
                    "    // SAFETY: every C value the driver writes here is valid when all zero.\n    let mut o_{field}: {} = unsafe {{ core::mem::zeroed() }};",
                    pointee(&a.rust)
                );
            }
            Plan::OutString { len } => {
                let _ = writeln!(
                    s,
                    "    let mut o_{0} = calls::buffer::<u8>(calls::size({1})?)?;",
                    a.name,
                    as_u64(op, len)
                );
            }
            Plan::OutArray { count, elem } => {
                let _ = writeln!(
                    s,
                    "    let mut o_{0} = calls::buffer::<{elem}>(calls::size({1})?)?;",
                    a.name,
                    as_u64(op, count)
                );
            }
            _ => {}
        }
    }
    // The call.
    let mut args = Vec::new();
    for a in &call.args {
        let mutable = a.rust.starts_with("*mut");
        args.push(match &a.plan {
            Plan::Scalar { field, .. } | Plan::DevPtr { field, .. } => format!("a_{field}"),
            Plan::Handle { field, .. } => format!("calls::as_ptr(a_{field})"),
            Plan::InRecord { field, .. } | Plan::InScalar { field, .. } => {
                if mutable {
                    format!("&mut a_{field}")
                } else {
                    format!("&a_{field}")
                }
            }
            Plan::InStr { .. } => format!("a_{}.as_ptr()", a.name),
            Plan::InArray { .. } => {
                if mutable {
                    format!("a_{}.as_mut_ptr()", a.name)
                } else {
                    format!("a_{}.as_ptr()", a.name)
                }
            }
            Plan::Out { field, want, .. }
            | Plan::OutHandle { field, want, .. }
            | Plan::OutRecord { field, want, .. } => match want {
                Some(w) => format!("calls::wanted(r.{w}, &mut o_{field})"),
                None => format!("&mut o_{field}"),
            },
            Plan::OutString { .. } => format!("o_{}.as_mut_ptr().cast()", a.name),
            Plan::OutArray { .. } => format!("o_{}.as_mut_ptr()", a.name),
        });
    }
    let _ = writeln!(
        s,
        "    let f = entry(s.driver.{})?;\n    // SAFETY: the prototype is the ABI table's; every pointer is to a live local\n    // of the pointee's type, sized as the call reads or writes it, or NULL\n    // where the application passed NULL; handles are this session's own.\n    ok(unsafe {{ f({}) }})?;",
        call.export.name,
        args.join(", ")
    );
    for (field, k) in &call.destroys {
        let _ = writeln!(
            s,
            "    s.tables().forget_other({}, r.{field}.get());",
            kind(k)
        );
    }
    // The reply.
    let out_handles: Vec<&Arg> = call
        .args
        .iter()
        .filter(|a| matches!(a.plan, Plan::OutHandle { .. }))
        .collect();
    if !out_handles.is_empty() {
        s.push_str("    let mut t = s.tables();\n");
        for a in out_handles {
            if let Plan::OutHandle { field, kind: k, .. } = &a.plan {
                let _ = writeln!(
                    s,
                    "    let id_{field} = t.id_of({}, o_{field} as usize, req.ctx);",
                    kind(k)
                );
            }
        }
        s.push_str("    drop(t);\n");
    }
    let mut fields = Vec::new();
    for a in &call.args {
        match &a.plan {
            Plan::Out { field, ty, .. } => {
                fields.push(format!("{field}: {}", encode(&format!("o_{field}"), ty)))
            }
            Plan::OutHandle { field, .. } => fields.push(format!("{field}: U64::new(id_{field})")),
            Plan::OutRecord { field, .. } => {
                fields.push(format!("{field}: calls::record_bytes(&o_{field})"));
            }
            _ => {}
        }
    }
    let mut blob_parts = Vec::new();
    for a in &call.args {
        match &a.plan {
            Plan::OutString { .. } => blob_parts.push(format!("o_{}", a.name)),
            Plan::OutArray { .. } => {
                blob_parts.push(format!("calls::elements_bytes(&o_{})", a.name))
            }
            _ => {}
        }
    }
    let blob = match blob_parts.len() {
        0 => "Vec::new()".to_string(),
        1 => blob_parts.remove(0),
        _ => format!("[{}].concat()", blob_parts.join(", ")),
    };
    let _ = writeln!(
        s,
        "    Ok(Reply::new(&{m}::Reply {{ {} }}, {blob}))\n}}\n",
        fields.join(", ")
    );
}

/// The pointee of a pointer type as written.
fn pointee(rust: &str) -> &str {
    rust.strip_prefix("*mut ")
        .or_else(|| rust.strip_prefix("*const "))
        .unwrap_or(rust)
}
