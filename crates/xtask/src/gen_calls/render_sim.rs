//! `crates/sim/src/exports/generated/mod.rs`: the simulated device's export
//! of every table call. Each converts its raw arguments (out-pointers to
//! `Out`, strings to `&CStr`) and calls the model function of the same name
//! in its area's module (`sim/src/exports/<area>.rs`), which is written by
//! hand: the simulated device's semantics.

use std::fmt::Write;

use super::model::{Model, Op, Plan};

pub fn render(model: &Model) -> String {
    let mut ops: Vec<&Op> = model.ops.iter().filter(|o| o.call.is_some()).collect();
    ops.sort_by_key(|o| o.call.as_ref().map(|c| c.export.name));
    let mut s = String::from(
        "//! The simulated device's exports of the table calls, generated from the\n\
         //! remoting table by `cargo xtask gen-calls`; the model functions they\n\
         //! call are written by hand in their area's module.\n\n\
         #![allow(non_snake_case, unused_imports, clippy::too_many_arguments, clippy::redundant_field_names, clippy::needless_borrow, clippy::unnecessary_cast, clippy::redundant_slicing, clippy::useless_conversion, clippy::identity_op)]\n\n\
         use crate::cu::*;\n\
         use crate::ffi::{c_str, run, Out};\n\n",
    );
    for op in &ops {
        let c = op.call.as_ref().expect("filtered");
        let params: Vec<String> = c
            .args
            .iter()
            .map(|a| format!("{}: {}", a.name, a.rust))
            .collect();
        let mut conv = String::new();
        let mut args = Vec::new();
        for a in &c.args {
            let n = &a.name;
            match &a.plan {
                Plan::Out { want: None, .. }
                | Plan::OutHandle { want: None, .. }
                | Plan::OutRecord { want: None, .. } => {
                    let _ = writeln!(conv, "        // SAFETY: the caller's pointer, valid as the CUDA API requires.\n        let {n} = unsafe {{ Out::new({n}, \"{n}\") }}?;");
                    args.push(n.clone());
                }
                Plan::Out { .. } | Plan::OutHandle { .. } | Plan::OutRecord { .. } => {
                    let _ = writeln!(conv, "        // SAFETY: the caller's pointer, valid as the CUDA API requires.\n        let {n} = unsafe {{ Out::optional({n}) }};");
                    args.push(n.clone());
                }
                Plan::InStr { .. } => {
                    let _ = writeln!(conv, "        // SAFETY: the caller's string, NUL-terminated as the CUDA API requires.\n        let {n} = unsafe {{ c_str({n}, \"{n}\") }}?;");
                    args.push(n.clone());
                }
                _ => args.push(n.clone()),
            }
        }
        let raw = c.args.iter().any(|a| {
            matches!(
                a.plan,
                Plan::InRecord { .. }
                    | Plan::InScalar { .. }
                    | Plan::InArray { .. }
                    | Plan::OutString { .. }
                    | Plan::OutArray { .. }
            )
        });
        let call = if raw {
            format!(
                "        // SAFETY: the caller's pointers, valid as the CUDA API requires.\n        unsafe {{ super::{}::{}({}) }}",
                op.area,
                op.snake,
                args.join(", ")
            )
        } else {
            format!(
                "        super::{}::{}({})",
                op.area,
                op.snake,
                args.join(", ")
            )
        };
        let pointers = c.args.iter().any(|a| {
            !matches!(
                a.plan,
                Plan::Scalar { .. } | Plan::Handle { .. } | Plan::DevPtr { .. }
            )
        });
        let (safety, unsafety) = if pointers {
            (
                "///\n/// # Safety\n/// Every pointer is NULL or valid as the CUDA API requires of its caller.\n",
                "unsafe ",
            )
        } else {
            ("", "")
        };
        let _ = writeln!(
            s,
            "/// `{0}`.\n{safety}#[no_mangle]\npub {unsafety}extern \"C\" fn {0}({1}) -> CUresult {{\n    run(\"{0}\", || {{\n{conv}{call}\n    }})\n}}\n",
            c.export.name,
            params.join(", "),
        );
    }
    s.push_str("/// Every generated export.\npub const EXPORTS: &[&str] = &[\n");
    for op in &ops {
        let _ = writeln!(
            s,
            "    \"{}\",",
            op.call.as_ref().expect("filtered").export.name
        );
    }
    s.push_str(
        "];\n\n// Compile-time ABI check: each export has exactly the driver's signature.\n",
    );
    for op in &ops {
        let n = op.call.as_ref().expect("filtered").export.name;
        let _ = writeln!(s, "const _: super::signature::{n} = {n};");
    }
    s
}
