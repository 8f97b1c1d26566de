//! `crates/cli/tests/conformance/generated.rs`: one conformance test per
//! table call (generated or client-written). Each runs in a client child against a mediator
//! whose worker loads the recording driver: it calls the entry point through
//! `libvgpu-cuda.so` with the values `values.rs` derives, the recorder
//! checks they arrived (handles translated), and the test checks that the
//! values the recorder wrote into every output came back.

use std::fmt::Write;

use super::model::{Model, Op, Plan};
use super::render_recorder::{element_bytes, pattern_fn, tested};
use super::values::{self, count_value, fixture, sizing};

pub fn render(model: &Model) -> String {
    let mut s = String::from(
        "//! One conformance test per table call, from the remoting table\n\
         //! by `cargo xtask gen-calls` (the harness is `../conformance.rs`).\n\n\
         #![allow(non_snake_case, unused_mut, clippy::unreadable_literal, clippy::too_many_lines, clippy::redundant_field_names, clippy::needless_borrow, clippy::unnecessary_cast, clippy::redundant_slicing, clippy::useless_conversion, clippy::identity_op)]\n\n\
         use vgpu_abi::HandleKind;\n\n\
         use super::{case, handle, minted, Record};\n\n",
    );
    s.push_str(&pattern_fn());
    for op in tested(model) {
        render_test(&mut s, op);
    }
    s
}

fn render_test(s: &mut String, op: &Op) {
    let c = op.call.as_ref().expect("a table call");
    let name = c.export.name;
    let small = sizing(c);
    let types: Vec<&str> = c.args.iter().map(|a| a.rust.as_str()).collect();
    let mut setup = String::new();
    if c.capture {
        setup.push_str("        f.begin_capture();\n");
    }
    let mut args = Vec::new();
    let mut expect = String::new();
    for (i, a) in c.args.iter().enumerate() {
        let n = &a.name;
        let mutable = a.rust.starts_with("*mut");
        let ptr = if mutable { "as_mut_ptr" } else { "as_ptr" };
        match &a.plan {
            Plan::Scalar { ty, .. } => {
                args.push(values::arg_scalar(a, ty, op.id, i, small.contains(n)))
            }
            Plan::Handle { kind, .. } => {
                args.push(match fixture(*kind) {
                    Some((_, var)) => format!("handle(f.{var})"),
                    // A kind without a fixture travels as NULL.
                    None => "core::ptr::null_mut()".to_string(),
                });
            }
            Plan::DevPtr { narrow, .. } => {
                let off = 64 * i as u64;
                args.push(if *narrow {
                    format!("u32::try_from(f.dptr + {off}).expect(\"a 32-bit address\")")
                } else {
                    format!("f.dptr + {off}")
                });
            }
            Plan::InScalar { ty, .. } => {
                let _ = writeln!(
                    setup,
                    "        let mut i_{n} = {};",
                    values::scalar(ty, op.id, i, small.contains(n))
                );
                args.push(if mutable {
                    format!("&mut i_{n}")
                } else {
                    format!("&i_{n}")
                });
            }
            Plan::InRecord { ty, .. } => {
                let _ = writeln!(
                    setup,
                    "        let mut i_{n} = Record::<vgpu_abi::types::{ty}>::from_bytes(&pattern({}, {i}, core::mem::size_of::<vgpu_abi::types::{ty}>()));",
                    op.id
                );
                args.push(format!("i_{n}.{ptr}()"));
            }
            Plan::InStr { .. } => {
                let _ = writeln!(setup, "        let i_{n} = c\"{name}-{i}\";");
                args.push(format!("i_{n}.as_ptr()"));
            }
            Plan::InArray {
                count,
                elem,
                handle,
            } => {
                let k = count_value(op, count);
                // Handles travel as NULL, which every kind translates.
                let value = match handle {
                    Some(_) => format!("vec![0u8; {k} * {}]", element_bytes(elem)),
                    None => format!("pattern({}, {i}, {k} * {})", op.id, element_bytes(elem)),
                };
                let _ = writeln!(setup, "        let mut i_{n} = {value};");
                args.push(format!("i_{n}.{ptr}().cast()"));
            }
            Plan::Out { ty, .. } => {
                let _ = writeln!(
                    setup,
                    "        // SAFETY: every C value is valid when all zero.\n        let mut o_{n}: {} = unsafe {{ core::mem::zeroed() }};",
                    pointee(&a.rust)
                );
                args.push(format!("&mut o_{n}"));
                let want = values::scalar(ty, op.id, 100 + i, false);
                let _ = writeln!(
                    expect,
                    "        assert_eq!(o_{n}, {want}, \"{name}: {n}\");"
                );
            }
            Plan::OutHandle { kind, .. } => {
                let _ = writeln!(
                    setup,
                    "        let mut o_{n}: {} = core::ptr::null_mut();",
                    pointee(&a.rust)
                );
                args.push(format!("&mut o_{n}"));
                match fixture(*kind) {
                    Some((_, var)) => {
                        let _ = writeln!(
                            expect,
                            "        assert_eq!(o_{n} as usize as u64, f.{var}, \"{name}: {n} is the test's own handle\");"
                        );
                    }
                    None => {
                        let _ = writeln!(
                            expect,
                            "        assert!(minted(o_{n} as usize as u64, HandleKind::{kind:?}), \"{name}: {n}: {{:#x}} is not a worker-minted id\", o_{n} as usize);"
                        );
                    }
                }
            }
            Plan::OutRecord { ty, .. } => {
                let _ = writeln!(
                    setup,
                    "        let mut o_{n} = Record::<vgpu_abi::types::{ty}>::zeroed();"
                );
                args.push(format!("o_{n}.as_mut_ptr()"));
                let _ = writeln!(
                    expect,
                    "        assert_eq!(o_{n}.bytes(), pattern({}, {}, core::mem::size_of::<vgpu_abi::types::{ty}>()), \"{name}: {n}\");",
                    op.id,
                    100 + i
                );
            }
            Plan::OutString { len } => {
                let k = count_value(op, len);
                let _ = writeln!(setup, "        let mut o_{n} = vec![0u8; {k}];");
                args.push(format!("o_{n}.as_mut_ptr().cast()"));
                let _ = writeln!(
                    expect,
                    "        assert_eq!(o_{n}, pattern({}, {}, {k}), \"{name}: {n}\");",
                    op.id,
                    100 + i
                );
            }
            Plan::OutArray { count, elem } => {
                let k = count_value(op, count);
                let _ = writeln!(
                    setup,
                    "        let mut o_{n} = vec![0u8; {k} * {}];",
                    element_bytes(elem)
                );
                args.push(format!("o_{n}.as_mut_ptr().cast()"));
                let _ = writeln!(
                    expect,
                    "        assert_eq!(o_{n}, pattern({}, {}, {k} * {}), \"{name}: {n}\");",
                    op.id,
                    100 + i,
                    element_bytes(elem)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "/// `{name}` arrives with the values passed and its outputs come back.\n\
         #[test]\n\
         fn {name}() {{\n\
         \x20   case(\"generated::{name}\", |f| {{\n\
         \x20       let call: unsafe extern \"C\" fn({}) -> vgpu_abi::types::CUresult = f.sym(\"{name}\");\n\
         {setup}\
         \x20       // SAFETY: the prototype is the ABI table's; every pointer is to a live\n\
         \x20       // local sized as the call reads or writes it.\n\
         \x20       let st = unsafe {{ call({}) }};\n\
         \x20       f.ok(\"{name}\", st);\n\
         {expect}\
         \x20   }});\n\
         }}\n",
        types.join(", "),
        args.join(", ")
    );
}

/// The pointee of a pointer type as written.
fn pointee(rust: &str) -> &str {
    rust.strip_prefix("*mut ")
        .or_else(|| rust.strip_prefix("*const "))
        .unwrap_or(rust)
}
