//! `crates/recorder/src/generated/mod.rs`: the recording test driver's
//! export of every table call. Each checks that its arguments are
//! the values the conformance test passed (handles translated to the
//! recorder's own, strings, structs and arrays byte for byte), then writes
//! known values into every output (`values.rs` derives both).

use std::fmt::Write;

use super::model::{Model, Op, Plan};
use super::values::{self, count_value, fixture, sizing, FOREIGN};

/// The generated calls the conformance tests drive.
pub fn tested(model: &Model) -> Vec<&Op> {
    let mut ops: Vec<&Op> = model.ops.iter().filter(|o| o.call.is_some()).collect();
    ops.sort_by_key(|o| o.call.as_ref().map(|c| c.export.name));
    ops
}

/// The elements of an array parameter: its count and element type.
pub fn element_bytes(elem: &str) -> String {
    format!("core::mem::size_of::<{elem}>()")
}

pub fn render(model: &Model) -> String {
    let mut s = String::from(
        "//! The recording driver's exports of the table calls, from the\n\
         //! remoting table by `cargo xtask gen-calls`: each checks its arguments\n\
         //! against the values the conformance test passes and writes known\n\
         //! values into its outputs.\n\n\
         #![allow(non_snake_case, unused_mut, unused_variables, clippy::too_many_arguments, clippy::unreadable_literal, clippy::redundant_field_names, clippy::needless_borrow, clippy::unnecessary_cast, clippy::redundant_slicing, clippy::useless_conversion, clippy::identity_op)]\n\n\
         use vgpu_abi::types::CUresult;\n\n\
         use crate::Check;\n\n",
    );
    s.push_str(&pattern_fn());
    let ops = tested(model);
    for op in &ops {
        render_export(&mut s, op);
    }
    s.push_str("/// Every generated export.\npub const EXPORTS: &[&str] = &[\n");
    for op in &ops {
        let _ = writeln!(
            s,
            "    \"{}\",",
            op.call.as_ref().expect("tested").export.name
        );
    }
    s.push_str(
        "];\n\n// Compile-time ABI check: each export has exactly the driver's signature.\n",
    );
    for op in &ops {
        let n = op.call.as_ref().expect("tested").export.name;
        let _ = writeln!(s, "const _: crate::signature::{n} = {n};");
    }
    s
}

fn render_export(s: &mut String, op: &Op) {
    let c = op.call.as_ref().expect("a table call");
    let name = c.export.name;
    let small = sizing(c);
    let params: Vec<String> = c
        .args
        .iter()
        .map(|a| format!("{}: {}", a.name, a.rust))
        .collect();
    let mut checks = String::new();
    let mut writes = String::new();
    for (i, a) in c.args.iter().enumerate() {
        let n = &a.name;
        match &a.plan {
            Plan::Scalar { ty, .. } | Plan::InScalar { ty, .. } => {
                let want = if matches!(a.plan, Plan::Scalar { .. }) {
                    values::arg_scalar(a, ty, op.id, i, small.contains(n))
                } else {
                    values::scalar(ty, op.id, i, small.contains(n))
                };
                let got = if matches!(a.plan, Plan::InScalar { .. }) {
                    let _ = writeln!(checks, "    c.non_null(\"{n}\", {n});");
                    format!("if {n}.is_null() {{ {want} }} else {{ unsafe {{ {n}.read_unaligned() }} }}")
                } else {
                    n.clone()
                };
                let _ = writeln!(checks, "    c.eq(\"{n}\", {got}, {want});");
            }
            Plan::Handle { kind, .. } => {
                // A kind without a fixture travels as NULL.
                let real = fixture(*kind).map_or(0, |(r, _)| r);
                let _ = writeln!(
                    checks,
                    "    c.eq(\"{n}\", {n} as usize as u64, {real:#x}u64);"
                );
            }
            Plan::DevPtr { narrow, .. } => {
                let off = 64 * i as u64;
                if *narrow {
                    let _ = writeln!(
                        checks,
                        "    c.eq(\"{n}\", u64::from({n}), {:#x}u64);",
                        values::DPTR + off
                    );
                } else {
                    let _ = writeln!(
                        checks,
                        "    c.eq(\"{n}\", {n}, {:#x}u64);",
                        values::DPTR + off
                    );
                }
            }
            Plan::InRecord { ty, .. } => {
                let _ = writeln!(
                    checks,
                    "    // SAFETY: checked non-NULL first; the worker passes a whole `{ty}`.\n    unsafe {{ c.bytes(\"{n}\", {n}.cast(), &pattern({}, {i}, core::mem::size_of::<vgpu_abi::types::{ty}>())) }};",
                    op.id
                );
            }
            Plan::InStr { .. } => {
                let _ = writeln!(
                    checks,
                    "    // SAFETY: checked non-NULL first; a NUL-terminated string.\n    unsafe {{ c.c_str(\"{n}\", {n}, \"{}-{i}\") }};",
                    name
                );
            }
            Plan::InArray {
                count,
                elem,
                handle,
            } => {
                let k = count_value(op, count);
                let want = match handle {
                    Some(_) => format!("vec![0u8; {k} * {}]", element_bytes(elem)),
                    None => format!("pattern({}, {i}, {k} * {})", op.id, element_bytes(elem)),
                };
                let _ = writeln!(
                    checks,
                    "    // SAFETY: checked non-NULL first; `{count}` elements.\n    unsafe {{ c.bytes(\"{n}\", {n}.cast(), &{want}) }};"
                );
            }
            Plan::Out { ty, .. } => {
                let _ = writeln!(checks, "    c.non_null(\"{n}\", {n});");
                let v = values::scalar(ty, op.id, 100 + i, false);
                let _ = writeln!(
                    writes,
                    "    // SAFETY: checked non-NULL.\n    unsafe {{ {n}.write_unaligned({v}) }};"
                );
            }
            Plan::OutHandle { kind, .. } => {
                let _ = writeln!(checks, "    c.non_null(\"{n}\", {n});");
                let real = fixture(*kind).map_or(FOREIGN, |(r, _)| r);
                let _ = writeln!(
                    writes,
                    "    // SAFETY: checked non-NULL.\n    unsafe {{ {n}.write_unaligned({real:#x}usize as _) }};"
                );
            }
            Plan::OutRecord { ty, .. } => {
                let _ = writeln!(checks, "    c.non_null(\"{n}\", {n});");
                let _ = writeln!(
                    writes,
                    "    // SAFETY: checked non-NULL; a whole `{ty}`.\n    unsafe {{ crate::write({n}.cast(), &pattern({}, {}, core::mem::size_of::<vgpu_abi::types::{ty}>())) }};",
                    op.id,
                    100 + i
                );
            }
            Plan::OutString { len } => {
                let _ = writeln!(checks, "    c.non_null(\"{n}\", {n});");
                let k = count_value(op, len);
                let _ = writeln!(
                    writes,
                    "    // SAFETY: checked non-NULL; `{len}` bytes.\n    unsafe {{ crate::write({n}.cast(), &pattern({}, {}, {k})) }};",
                    op.id,
                    100 + i
                );
            }
            Plan::OutArray { count, elem } => {
                let _ = writeln!(checks, "    c.non_null(\"{n}\", {n});");
                let k = count_value(op, count);
                let _ = writeln!(
                    writes,
                    "    // SAFETY: checked non-NULL; `{count}` elements.\n    unsafe {{ crate::write({n}.cast(), &pattern({}, {}, {k} * {})) }};",
                    op.id,
                    100 + i,
                    element_bytes(elem)
                );
            }
        }
    }
    let pointers = c.args.iter().any(|a| {
        !matches!(
            a.plan,
            Plan::Scalar { .. } | Plan::Handle { .. } | Plan::DevPtr { .. }
        )
    });
    let (safety, unsafety) = if pointers {
        (
            "///\n/// # Safety\n/// Pointers as the CUDA API requires; NULL ones are reported, not used.\n",
            "unsafe ",
        )
    } else {
        ("", "")
    };
    let _ = writeln!(
        s,
        "/// `{name}`: checks the arguments, writes the outputs.\n{safety}#[no_mangle]\npub {unsafety}extern \"C\" fn {name}({}) -> CUresult {{\n    let mut c = Check::new(\"{name}\");\n{checks}    if let Some(e) = c.failed() {{\n        return e;\n    }}\n{writes}    CUresult::CUDA_SUCCESS\n}}\n",
        params.join(", ")
    );
}

/// The `pattern` function both generated files carry: `n` bytes for
/// (operation, slot), the same on both sides.
pub fn pattern_fn() -> String {
    "/// `n` bytes for (operation, slot): what the test passes and the\n\
     /// recorder expects, or what the recorder writes and the test expects.\n\
     pub(crate) fn pattern(id: u16, slot: usize, n: usize) -> Vec<u8> {\n\
     \x20   let word = |k: u64| {\n\
     \x20       let mut z = (u64::from(id) << 32 | (slot as u64 * 64 + k + 1001)).wrapping_add(0x9E37_79B9_7F4A_7C15);\n\
     \x20       z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);\n\
     \x20       z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);\n\
     \x20       z ^ (z >> 31)\n\
     \x20   };\n\
     \x20   (0..n.div_ceil(8) as u64).flat_map(|k| word(k).to_le_bytes()).take(n).collect()\n\
     }\n\n"
        .to_string()
}
