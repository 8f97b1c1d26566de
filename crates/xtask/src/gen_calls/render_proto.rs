//! `crates/proto/src/generated/mod.rs`: the `Op` enum and one module of
//! typed, fixed-layout messages per operation.

use std::fmt::Write;

use super::model::{Field, Model, Op, Plan, Sync, Wire};

pub fn render(model: &Model) -> String {
    let mut ops: Vec<&Op> = model.ops.iter().collect();
    ops.sort_by_key(|o| o.id);
    let mut s = String::new();
    s.push_str(
        "//! The operations and their typed messages, generated from the remoting\n\
         //! table (`crates/abi/src/remote/table.rs`) by `cargo xtask gen-calls`.\n\n\
         #![allow(unused_imports, unused_mut, clippy::too_many_lines, clippy::unreadable_literal, clippy::redundant_field_names, clippy::needless_borrow, clippy::unnecessary_cast, clippy::redundant_slicing, clippy::useless_conversion, clippy::identity_op)]\n\n\
         use zerocopy::little_endian::{F32, F64, I16, I32, I64, U16, U32, U64};\n\
         use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};\n\n\
         use crate::message::{self, Message, RequestMessage};\n\
         use crate::ProtoError;\n\n",
    );
    // The enum.
    s.push_str(
        "/// One remoted operation. The discriminant is the wire id.\n\
         #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n\
         #[repr(u16)]\n#[allow(non_camel_case_types)]\npub enum Op {\n",
    );
    for op in &ops {
        for line in op.doc.lines() {
            let _ = writeln!(s, "    /// {line}");
        }
        let _ = writeln!(s, "    {} = {},", op.name, op.id);
    }
    s.push_str("}\n\nimpl Op {\n    /// Every operation, in wire-id order.\n    pub const ALL: &'static [Op] = &[");
    for op in &ops {
        let _ = write!(s, "Op::{}, ", op.name);
    }
    s.push_str("];\n\n");
    method(
        &mut s,
        "The operation's name, as used in logs and the schema.",
        "name",
        "&'static str",
        &ops,
        |o| format!("\"{}\"", o.name),
    );
    method(
        &mut s,
        "Whether a request may be posted (`flags::POSTED`): it returns nothing but a status.",
        "postable",
        "bool",
        &ops,
        |o| o.posted.to_string(),
    );
    method(
        &mut s,
        "Whether the worker makes the calling thread's context current for it.",
        "needs_context",
        "bool",
        &ops,
        |o| o.context.to_string(),
    );
    method(
        &mut s,
        "Whether a descriptor follows a successful reply (SCM_RIGHTS).",
        "passes_fd",
        "bool",
        &ops,
        |o| o.fd.to_string(),
    );
    method(
        &mut s,
        "Whether a descriptor follows the request (SCM_RIGHTS).",
        "takes_fd",
        "bool",
        &ops,
        |o| o.fd_in.to_string(),
    );
    method(
        &mut s,
        "Bytes of the request's fixed part.",
        "request_len",
        "usize",
        &ops,
        |o| format!("core::mem::size_of::<{}::Request>()", o.snake),
    );
    method(
        &mut s,
        "Bytes of a successful reply's fixed part.",
        "reply_len",
        "usize",
        &ops,
        |o| format!("core::mem::size_of::<{}::Reply>()", o.snake),
    );
    // synchronizes
    s.push_str(
        "    /// Whether a request with this fixed part is a synchronizing call: one that\n\
         \x20   /// reports the lane's deferred failure of a posted call instead of running\n\
         \x20   /// (`docs/adr/0004-async-errors.md`).\n\
         \x20   pub fn synchronizes(self, fixed: &[u8]) -> bool {\n        match self {\n",
    );
    for op in &ops {
        match &op.sync {
            Sync::Never => {}
            Sync::Always => {
                let _ = writeln!(s, "            Op::{} => true,", op.name);
            }
            Sync::Unless(f) => {
                let _ = writeln!(
                    s,
                    "            Op::{} => {}::Request::ref_from_bytes(fixed).is_ok_and(|r| r.{f} == 0),",
                    op.name, op.snake
                );
            }
        }
    }
    s.push_str("            _ => false,\n        }\n    }\n\n");
    for (what, ty) in [("request", "Request"), ("reply", "Reply")] {
        let _ = writeln!(
            s,
            "    /// Checks a {what}'s fixed part (its length and every field) and the\n\
             \x20   /// length of its blob.\n\
             \x20   pub fn check_{what}(self, fixed: &[u8], blob_len: usize) -> Result<(), ProtoError> {{\n\
             \x20       match self {{"
        );
        for op in &ops {
            let _ = writeln!(
                s,
                "            Op::{} => message::check::<{}::{ty}>(fixed, blob_len),",
                op.name, op.snake
            );
        }
        s.push_str("        }\n    }\n\n");
    }
    s.push_str("}\n\n");
    s.push_str(
        "impl TryFrom<u16> for Op {\n    type Error = ProtoError;\n    fn try_from(id: u16) -> Result<Self, ProtoError> {\n        match id {\n",
    );
    for op in &ops {
        let _ = writeln!(s, "            {} => Ok(Op::{}),", op.id, op.name);
    }
    s.push_str("            other => Err(ProtoError::UnknownOp(other)),\n        }\n    }\n}\n\n");
    // Schema.
    s.push_str(
        "/// Every operation's id, name, options and message layouts, one line each:\n\
         /// what [`SCHEMA_HASH`] covers.\npub const SCHEMA: &str = concat!(\n",
    );
    for op in &ops {
        let _ = writeln!(s, "    \"{}\\n\",", schema_line(op));
    }
    s.push_str(");\n\n");
    // Messages.
    for op in &ops {
        render_op(&mut s, op);
    }
    s.push_str(&samples(&ops));
    s
}

fn method(
    s: &mut String,
    doc: &str,
    name: &str,
    ret: &str,
    ops: &[&Op],
    f: impl Fn(&Op) -> String,
) {
    let _ = writeln!(
        s,
        "    /// {doc}\n    pub const fn {name}(self) -> {ret} {{\n        match self {{"
    );
    for op in ops {
        let _ = writeln!(s, "            Op::{} => {},", op.name, f(op));
    }
    s.push_str("        }\n    }\n\n");
}

fn fields_schema(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| format!("{}:{}", f.name, f.wire.schema()))
        .collect::<Vec<_>>()
        .join(",")
}

fn blob_schema(parts: &Option<Vec<String>>) -> String {
    match parts {
        None => String::new(),
        Some(p) if p.is_empty() => "+blob".into(),
        Some(p) => format!("+blob({})", p.join(",")),
    }
}

fn schema_line(op: &Op) -> String {
    let sync = match &op.sync {
        Sync::Never => String::new(),
        Sync::Always => " sync".into(),
        Sync::Unless(f) => format!(" sync_unless({f})"),
    };
    format!(
        "{} {} {{{}}}{} => {{{}}}{}{}{}{}{}{}",
        op.id,
        op.name,
        fields_schema(&op.request),
        blob_schema(&op.request_blob),
        fields_schema(&op.reply),
        blob_schema(&op.reply_blob),
        if op.posted { " posted" } else { "" },
        sync,
        if op.context { "" } else { " nocontext" },
        if op.fd { " fd" } else { "" },
        if op.fd_in { " fd_in" } else { "" },
    )
}

fn render_struct(s: &mut String, doc: &str, name: &str, fields: &[Field]) {
    let _ = writeln!(
        s,
        "    /// {doc}\n\
         \x20   #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]\n\
         \x20   #[repr(C)]\n    pub struct {name} {{"
    );
    for f in fields {
        let _ = writeln!(s, "        pub {}: {},", f.name, f.wire.rust());
    }
    s.push_str("    }\n\n");
}

/// The statements checking a message's fields and blob length.
fn checks(op: &Op, fields: &[Field], parts: &Option<Vec<String>>, request: bool) -> String {
    let mut c = String::new();
    for f in fields {
        if f.wire == Wire::Bool {
            let _ = writeln!(
                c,
                "            message::check_bool(Self::OP, \"{0}\", self.{0})?;",
                f.name
            );
        }
    }
    match parts {
        None => c.push_str("            message::no_blob(Self::OP, blob_len)\n"),
        Some(p) if p.is_empty() || !request => {
            c.push_str("            message::any_blob(Self::OP, blob_len)\n")
        }
        Some(_) => {
            c.push_str("            let mut want: u64 = 0;\n");
            let call = op.call.as_ref().expect("parts come from table calls");
            for a in &call.args {
                match &a.plan {
                    Plan::InStr { len_field } => {
                        let _ = writeln!(
                            c,
                            "            want = message::add(Self::OP, want, message::string_len(Self::OP, \"{len_field}\", self.{len_field}.get())?)?;"
                        );
                    }
                    Plan::InArray { count, elem, .. } => {
                        let n = literal(count).map_or_else(
                            || format!("u64::from(self.{}.get())", field_of(op, count)),
                            |n| format!("{n}u64"),
                        );
                        let _ = writeln!(
                            c,
                            "            want = message::add(Self::OP, want, message::array_len(Self::OP, {n}, core::mem::size_of::<{elem}>())?)?;"
                        );
                    }
                    _ => {}
                }
            }
            c.push_str("            message::blob_is(Self::OP, blob_len, want)\n");
        }
    }
    c
}

/// A count written as a number (`array(4)`) rather than a parameter's name.
fn literal(count: &str) -> Option<u64> {
    count.parse().ok()
}

/// The request field that carries parameter `param`.
pub fn field_of(op: &Op, param: &str) -> String {
    let call = op.call.as_ref().expect("a table call");
    for a in &call.args {
        if a.name == param {
            match &a.plan {
                Plan::Scalar { field, .. } | Plan::InScalar { field, .. } => return field.clone(),
                _ => {}
            }
        }
    }
    panic!("{}: {param} is not a scalar parameter", op.name)
}

fn render_op(s: &mut String, op: &Op) {
    let title = match &op.call {
        Some(c) => format!("`{}`", c.export.name),
        None => format!("The hand-written operation {}", op.name),
    };
    let _ = writeln!(
        s,
        "/// {title}: wire id {}.\npub mod {} {{\n    use super::*;\n",
        op.id, op.snake
    );
    render_struct(s, "The request's fixed part.", "Request", &op.request);
    render_struct(s, "A successful reply's fixed part.", "Reply", &op.reply);
    for (ty, fields, parts, request) in [
        ("Request", &op.request, &op.request_blob, true),
        ("Reply", &op.reply, &op.reply_blob, false),
    ] {
        let _ = writeln!(
            s,
            "    impl Message for {ty} {{\n        const OP: Op = Op::{};\n        fn check(&self, blob_len: usize) -> Result<(), ProtoError> {{\n{}        }}\n    }}\n",
            op.name,
            checks(op, fields, parts, request)
        );
    }
    s.push_str("    impl RequestMessage for Request {\n        type Reply = Reply;\n    }\n}\n\n");
}

/// A sample request of every generated operation, for the golden fixtures
/// and the fuzz corpus: every field a fixed pattern, lengths consistent.
fn samples(ops: &[&Op]) -> String {
    let mut s = String::from(
        "/// Sample requests of the table calls, for the golden fixtures and the\n\
         /// fuzz corpus: (fixed part, blob). Hand-written operations have their\n\
         /// samples in the protocol tests.\n\
         #[doc(hidden)]\npub fn sample_request(op: Op) -> Option<(Vec<u8>, Vec<u8>)> {\n    match op {\n",
    );
    for op in ops {
        let Some(call) = &op.call else { continue };
        let mut blob_len = 0usize;
        let mut counts: Vec<(String, usize)> = Vec::new();
        for a in &call.args {
            match &a.plan {
                Plan::InStr { len_field } => counts.push((len_field.clone(), 7)),
                Plan::InArray { count, .. } if literal(count).is_none() => {
                    counts.push((field_of(op, count), 2));
                }
                _ => {}
            }
        }
        let mut body = String::new();
        let _ = writeln!(
            body,
            "            let mut r = {}::Request::new_zeroed();",
            op.snake
        );
        body.push_str("            let mut blob = Vec::new();\n");
        for (i, f) in op.request.iter().enumerate() {
            let v = (u64::from(op.id) * 131 + i as u64 * 17 + 3) & 0x7f;
            let count = counts.iter().find(|(n, _)| n == &f.name).map(|(_, c)| *c);
            let value = match (&f.wire, count) {
                (Wire::Bool, _) => format!("{}", i % 2),
                (Wire::Prim(p), Some(c)) if p.is_byte() => format!("{c}"),
                (Wire::Prim(p), Some(c)) => format!("{}::new({c})", p.wire()),
                (Wire::Prim(p), None) if p.is_byte() => format!("{v}"),
                (Wire::Prim(p), None) if p.wire().starts_with('F') => {
                    format!("{}::new({v}.5)", p.wire())
                }
                (Wire::Prim(p), None) => format!("{}::new({v})", p.wire()),
                (Wire::Handle(_) | Wire::DevPtr, _) => {
                    format!("U64::new(0x4100_0000_0000_{v:04x})")
                }
                (Wire::Bytes(_), _) => {
                    let _ = writeln!(body, "            r.{}.fill({v});", f.name);
                    continue;
                }
            };
            let _ = writeln!(body, "            r.{} = {value};", f.name);
        }
        for a in &call.args {
            match &a.plan {
                Plan::InStr { .. } => {
                    body.push_str("            blob.extend_from_slice(b\"sample7\");\n");
                    blob_len += 7;
                }
                Plan::InArray { count, elem, .. } => {
                    let n = literal(count).unwrap_or(2);
                    let _ = writeln!(
                        body,
                        "            blob.extend(std::iter::repeat_n(0x5au8, {n} * core::mem::size_of::<{elem}>()));"
                    );
                }
                _ => {}
            }
        }
        let _ = blob_len;
        let _ = writeln!(
            s,
            "        Op::{} => {{\n{body}            Some((r.as_bytes().to_vec(), blob))\n        }}",
            op.name
        );
    }
    s.push_str("        _ => None,\n    }\n}\n");
    s
}
