//! `crates/client/src/generated/mod.rs`: every table call's `implement!`
//! line, and the client stub of every generated call: NULL out-pointer
//! checks, handle ids, encoding, posting or waiting, and writing the
//! outputs back.

use std::fmt::Write;

use vgpu_abi::remote::Mode;
use vgpu_abi::{HandleKind, PerThread};

use super::abi_types::{Prim, Ty};
use super::model::{Model, Op, Plan, Range};

pub fn render(model: &Model) -> String {
    let mut ops: Vec<&Op> = model.ops.iter().filter(|o| o.call.is_some()).collect();
    ops.sort_by_key(|o| o.call.as_ref().map(|c| c.export.name));
    let mut s = String::from(
        "//! The client side of the table calls, generated from the remoting table\n\
         //! by `cargo xtask gen-calls`: an `implement!` line for every table call\n\
         //! (generated ones call the stubs below, client-written ones the\n\
         //! function of the same name in their area's module), and the stubs.\n\n\
         #![allow(non_snake_case, unused_mut, unused_variables, unused_imports, clippy::too_many_arguments, clippy::let_unit_value, clippy::redundant_field_names, clippy::needless_borrow, clippy::unnecessary_cast, clippy::redundant_slicing, clippy::useless_conversion, clippy::identity_op)]\n\n\
         use vgpu_abi::types::*;\n\
         use zerocopy::little_endian::{F32, F64, I16, I32, I64, U16, U32, U64};\n\n\
         use crate::api::stream;\n\
         use crate::edge::{non_null, wire, write_out, CuError, CuResult};\n\
         use crate::lane::Follows;\n\
         use crate::runtime::runtime;\n\
         use crate::call;\n\n\
         crate::api::implement! {\n",
    );
    for op in &ops {
        let c = op.call.as_ref().expect("filtered");
        let names: Vec<&str> = c.args.iter().map(|a| a.name.as_str()).collect();
        let target = match c.mode {
            Mode::Generated => format!("self::{}", op.snake),
            Mode::ClientWritten => format!("crate::api::{}::{}", op.area, op.snake),
        };
        let _ = writeln!(
            s,
            "    {}({}) => {target}({});",
            c.export.name,
            names.join(", "),
            names.join(", ")
        );
    }
    s.push_str("}\n\n");
    for op in &ops {
        if op.call.as_ref().is_some_and(|c| c.mode == Mode::Generated) {
            render_stub(&mut s, op);
        }
    }
    s
}

/// The expression turning parameter `v` of `ty` into its wire field.
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

/// The expression turning reply field `rep.<f>` into a value of `ty`.
fn decode(f: &str, ty: &Ty) -> String {
    match ty {
        Ty::Prim(p) if p.is_byte() => format!("rep.{f}"),
        Ty::Prim(Prim::Usize) => format!("wire::usize(rep.{f}.get())"),
        Ty::Prim(_) => format!("rep.{f}.get()"),
        Ty::Enum { name, inner } if inner.is_byte() => format!("{name}(rep.{f})"),
        Ty::Enum { name, .. } => format!("{name}(rep.{f}.get())"),
        other => panic!("no decoding for {other:?}"),
    }
}

fn render_stub(s: &mut String, op: &Op) {
    let c = op.call.as_ref().expect("a table call");
    let m = format!("vgpu_proto::{}", op.snake);
    let params: Vec<String> = c
        .args
        .iter()
        .map(|a| format!("{}: {}", a.name, a.rust))
        .collect();
    let _ = writeln!(
        s,
        "/// `{}`, generated.\n///\n/// # Safety\n/// Every pointer is NULL or valid as the CUDA API requires of its caller.\npub unsafe fn {}({}) -> CuResult<()> {{\n    let s = runtime().session()?;",
        c.export.name,
        op.snake,
        params.join(", ")
    );
    // Required pointers, before any work.
    for a in &c.args {
        let required = matches!(
            &a.plan,
            Plan::Out { want: None, .. }
                | Plan::OutHandle { want: None, .. }
                | Plan::OutRecord { want: None, .. }
                | Plan::InRecord { .. }
                | Plan::InScalar { .. }
                | Plan::InStr { .. }
                | Plan::OutString { .. }
        );
        if required {
            let _ = writeln!(s, "    non_null({})?;", a.name);
        }
    }
    // The request.
    let mut fields = Vec::new();
    let mut blob = Vec::new();
    for a in &c.args {
        let n = &a.name;
        match &a.plan {
            Plan::Scalar { field, ty } => fields.push(format!("{field}: {}", encode(n, ty))),
            Plan::Handle { field, .. } => {
                fields.push(format!("{field}: U64::new({n} as usize as u64)"))
            }
            Plan::DevPtr { field, narrow } => fields.push(if *narrow {
                format!("{field}: U32::new({n})")
            } else {
                format!("{field}: U64::new({n})")
            }),
            Plan::InRecord { field, .. } => {
                let _ = writeln!(
                    s,
                    "    // SAFETY: checked non-NULL; the application's struct.\n    let b_{n} = unsafe {{ call::record_bytes_at({n}) }};"
                );
                fields.push(format!("{field}: b_{n}"));
            }
            Plan::InScalar { field, ty } => {
                let _ = writeln!(
                    s,
                    "    // SAFETY: checked non-NULL; the application's value.\n    let v_{n} = unsafe {{ {n}.read_unaligned() }};"
                );
                fields.push(format!("{field}: {}", encode(&format!("v_{n}"), ty)));
            }
            Plan::InStr { len_field } => {
                let _ = writeln!(
                    s,
                    "    // SAFETY: checked non-NULL; the application's NUL-terminated string.\n    let b_{n} = unsafe {{ call::c_string({n}) }};"
                );
                fields.push(format!(
                    "{len_field}: U32::new(call::len_u32(b_{n}.len())?)"
                ));
                blob.push(format!("b_{n}"));
            }
            Plan::InArray { count, elem, .. } => {
                let _ = writeln!(
                    s,
                    "    // SAFETY: the application's array of `{count}` elements.\n    let b_{n} = unsafe {{ call::elements_at::<{elem}>({n}, {count} as usize) }}?;"
                );
                blob.push(format!("b_{n}"));
            }
            Plan::Out { .. } | Plan::OutHandle { .. } | Plan::OutRecord { .. } => {}
            Plan::OutString { .. } | Plan::OutArray { .. } => {}
        }
        if let Plan::Out { want: Some(w), .. }
        | Plan::OutHandle { want: Some(w), .. }
        | Plan::OutRecord { want: Some(w), .. } = &a.plan
        {
            fields.push(format!("{w}: u8::from(!{n}.is_null())"));
        }
    }
    // Reorder the request's fields as the struct declares them.
    let order: Vec<&str> = op.request.iter().map(|f| f.name.as_str()).collect();
    fields.sort_by_key(|f| {
        let name = f.split(':').next().unwrap_or("").trim();
        order.iter().position(|o| *o == name).unwrap_or(usize::MAX)
    });
    let blob_expr = match blob.len() {
        0 => "&[]".to_string(),
        1 => format!("&{}", blob[0]),
        _ => format!(
            "&[{}].concat()",
            blob.iter()
                .map(|b| format!("&{b}[..]"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let _ = writeln!(s, "    let r = {m}::Request {{ {} }};", fields.join(", "));
    if op.posted {
        // Posted when everything the driver checks at once is checked here.
        let mut checks = vec!["o.contexts.contains_key(&ctx)".to_string()];
        for a in &c.args {
            if let Plan::Handle { kind, .. } = &a.plan {
                let n = &a.name;
                let sid = stream_id(c.export.per_thread, n);
                match kind {
                    HandleKind::Stream => checks.push(format!("o.stream_ok(ctx, {sid})")),
                    HandleKind::Event => {
                        checks.push(format!("o.event_ok(ctx, {n} as usize as u64)"))
                    }
                    HandleKind::Context => {
                        checks.push(format!("o.contexts.contains_key(&({n} as usize as u64))"))
                    }
                    HandleKind::GraphExec => {
                        checks.push(format!("o.graph_exec_ok(ctx, {n} as usize as u64)"))
                    }
                    _ => checks.push("false".into()),
                }
            }
        }
        for r in &c.ranges {
            match r {
                Range::Linear { ptr, bytes } => checks.push(format!(
                    "call::product(&[{}]).is_some_and(|n| o.range_ok({ptr} as u64, n))",
                    factors(bytes)
                )),
                Range::Pitched { ptr, pitch, width, height } => checks.push(format!(
                    "call::pitched({pitch} as u64, call::product(&[{}]), {height} as u64).is_some_and(|n| o.range_ok({ptr} as u64, n))",
                    factors(width)
                )),
            }
        }
        let follows = match &c.follows_stream {
            Some(p) => format!("Follows::Stream({})", stream_id(c.export.per_thread, p)),
            None => "Follows::Everything".to_string(),
        };
        let _ = writeln!(
            s,
            "    let ctx = crate::context::current();\n    let postable = {{\n        let o = s.objects();\n        {}\n    }};\n    s.post_or_request(&r, {blob_expr}, postable, {follows})?;\n    Ok(())\n}}\n",
            checks.join("\n            && ")
        );
        return;
    }
    let _ = writeln!(s, "    let (rep, back) = s.request(&r, {blob_expr})?;");
    // The reply's blob parts.
    let mut at = false;
    for a in &c.args {
        let n = &a.name;
        match &a.plan {
            Plan::OutString { len } => {
                if !at {
                    s.push_str("    let mut at = 0usize;\n");
                    at = true;
                }
                let _ = writeln!(
                    s,
                    "    let p_{n} = call::part(s, &back, &mut at, {len} as usize)?;"
                );
            }
            Plan::OutArray { count, elem } => {
                if !at {
                    s.push_str("    let mut at = 0usize;\n");
                    at = true;
                }
                let _ = writeln!(
                    s,
                    "    let p_{n} = call::part(s, &back, &mut at, ({count} as usize).saturating_mul(core::mem::size_of::<{elem}>()))?;"
                );
            }
            _ => {}
        }
    }
    if at {
        s.push_str("    call::all_read(s, &back, at)?;\n");
    } else {
        s.push_str("    call::all_read(s, &back, 0)?;\n");
    }
    // The outputs, written back.
    let writes_back = c.args.iter().any(|a| {
        matches!(
            a.plan,
            Plan::Out { .. }
                | Plan::OutHandle { .. }
                | Plan::OutRecord { .. }
                | Plan::OutString { .. }
                | Plan::OutArray { .. }
        )
    });
    // Executable graphs are known here, so a launch of one may be posted.
    for (field, kind) in &c.destroys {
        if *kind == HandleKind::GraphExec {
            let _ = writeln!(s, "    s.objects().graph_execs.remove(&r.{field}.get());");
        }
    }
    for a in &c.args {
        if let Plan::OutHandle {
            field,
            kind: HandleKind::GraphExec,
            ..
        } = &a.plan
        {
            let _ = writeln!(
                s,
                "    s.objects().graph_execs.insert(rep.{field}.get(), crate::context::current());"
            );
        }
    }
    if !writes_back {
        s.push_str("    Ok(())\n}\n\n");
        return;
    }
    s.push_str("    // SAFETY: the application's pointers, checked non-NULL where required.\n    unsafe {\n");
    for a in &c.args {
        let n = &a.name;
        let optional = |w: &Option<String>, body: String| match w {
            Some(_) => format!("        if !{n}.is_null() {{\n            {body}?;\n        }}\n"),
            None => format!("        {body}?;\n"),
        };
        match &a.plan {
            Plan::Out { field, ty, want } => {
                s.push_str(&optional(
                    want,
                    format!("write_out({n}, {})", decode(field, ty)),
                ));
            }
            Plan::OutHandle { field, want, .. } => {
                s.push_str(&optional(
                    want,
                    format!("write_out({n}, wire::handle(rep.{field}.get()))"),
                ));
            }
            Plan::OutRecord { field, want, .. } => {
                s.push_str(&optional(
                    want,
                    format!("call::write_record({n}, &rep.{field})"),
                ));
            }
            Plan::OutString { .. } => {
                let _ = writeln!(s, "        call::write_bytes({n}.cast(), p_{n})?;");
            }
            Plan::OutArray { .. } => {
                let _ = writeln!(s, "        call::write_bytes({n}.cast(), p_{n})?;");
            }
            _ => {}
        }
    }
    s.push_str("    }\n    Ok(())\n}\n\n");
}

fn stream_id(per_thread: PerThread, param: &str) -> String {
    match per_thread {
        PerThread::Ptsz => format!("stream::id_ptsz({param})"),
        _ => format!("stream::id({param})"),
    }
}

fn factors(f: &[String]) -> String {
    f.iter()
        .map(|x| {
            if x.chars().all(|c| c.is_ascii_digit() || c == '_') {
                format!("{x}u64")
            } else {
                format!("{x} as u64")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
