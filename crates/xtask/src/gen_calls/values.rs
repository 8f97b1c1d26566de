//! The values a conformance test passes for each parameter of a generated
//! call, and those the recording driver writes into each output: both are
//! derived here, at generation time, so the two generated files agree
//! byte for byte.

use vgpu_abi::HandleKind;

use super::abi_types::{Prim, Ty};
use super::model::{Arg, CallModel, Op, Plan, Range};

/// The recording driver's fixture objects: the real handle it hands out
/// when the test creates one of each kind, and the client-side variable
/// the test keeps it in.
pub const FIXTURES: &[(HandleKind, u64, &str)] = &[
    (HandleKind::Context, 0x0000_5100_0000_0001, "ctx"),
    (HandleKind::Stream, 0x0000_5200_0000_0002, "stream"),
    (HandleKind::Event, 0x0000_5300_0000_0003, "event"),
    (HandleKind::Module, 0x0000_5400_0000_0004, "module"),
    (HandleKind::Function, 0x0000_5500_0000_0005, "function"),
    (HandleKind::Library, 0x0000_5600_0000_0006, "library"),
    (HandleKind::Kernel, 0x0000_5700_0000_0007, "kernel"),
    (HandleKind::MemPool, 0x0000_5800_0000_0008, "pool"),
    (HandleKind::Array, 0x0000_5900_0000_0009, "array"),
    (HandleKind::MipmappedArray, 0x0000_5A00_0000_000A, "mipmap"),
];

/// The recording driver's one device allocation: below 4 GiB, so the
/// 32-bit `_v1` forms can name it too.
pub const DPTR: u64 = 0x1000_0000;

/// The real handle of a kind without a fixture that the recording driver
/// writes into an output (the worker mints an id for it).
pub const FOREIGN: u64 = 0x0000_5f00_0000_00f0;

/// The fixture of `kind`, if the test makes one.
pub fn fixture(kind: HandleKind) -> Option<(u64, &'static str)> {
    FIXTURES
        .iter()
        .find(|(k, _, _)| *k == kind)
        .map(|&(_, real, var)| (real, var))
}

/// A 64-bit value for (operation, slot), spread by splitmix64.
pub fn word(id: u16, slot: usize) -> u64 {
    let mut z = (u64::from(id) << 32 | (slot as u64 + 1)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Parameters whose values size something: counts, lengths and range
/// factors get small values, so arrays stay short and ranges stay inside
/// the fixture allocation.
pub fn sizing(call: &CallModel) -> Vec<String> {
    let mut v = Vec::new();
    for a in &call.args {
        match &a.plan {
            Plan::InArray { count, .. } | Plan::OutArray { count, .. } => v.push(count.clone()),
            Plan::OutString { len } => v.push(len.clone()),
            _ => {}
        }
    }
    for r in &call.ranges {
        match r {
            Range::Linear { bytes, .. } => v.extend(bytes.iter().cloned()),
            Range::Pitched {
                pitch,
                width,
                height,
                ..
            } => {
                v.push(pitch.clone());
                v.extend(width.iter().cloned());
                v.push(height.clone());
            }
        }
    }
    v
}

/// The ordinal a device parameter takes: the recording driver's second
/// device, so that it cannot pass for a default 0 (the client checks
/// ordinals against the devices it knows).
pub const DEVICE: i32 = 1;

/// The literal argument `a` (a scalar of `ty`) takes for (operation, slot):
/// [`DEVICE`] for a device ordinal, else [`scalar`].
pub fn arg_scalar(a: &Arg, ty: &Ty, id: u16, slot: usize, small: bool) -> String {
    if a.rust.ends_with("::CUdevice") || a.rust.ends_with("::CUdevice_v1") {
        return format!("{DEVICE}i32");
    }
    scalar(ty, id, slot, small)
}

/// The literal a scalar of `ty` takes for (operation, slot); `small` for
/// sizing parameters.
pub fn scalar(ty: &Ty, id: u16, slot: usize, small: bool) -> String {
    let w = word(id, slot);
    let w = if small { 2 + w % 7 } else { w };
    let prim = match ty {
        Ty::Prim(p) | Ty::Enum { inner: p, .. } => *p,
        other => panic!("no scalar value for {other:?}"),
    };
    let lit = prim_literal(prim, w);
    match ty {
        Ty::Enum { name, .. } => format!("vgpu_abi::types::{name}({lit})"),
        _ => lit,
    }
}

/// A literal of primitive `p` from `w`.
#[allow(clippy::cast_possible_truncation)]
pub fn prim_literal(p: Prim, w: u64) -> String {
    match p {
        Prim::U8 => format!("{}u8", w as u8),
        Prim::I8 => format!("{}i8", w as i8),
        Prim::U16 => format!("{}u16", w as u16),
        Prim::I16 => format!("{}i16", w as i16),
        Prim::U32 => format!("{}u32", w as u32),
        Prim::I32 => format!("{}i32", w as i32),
        Prim::U64 => format!("{w}u64"),
        Prim::I64 => format!("{}i64", w as i64),
        Prim::Usize => format!("{w}usize"),
        Prim::F32 => format!("{}.25f32", w % 1000),
        Prim::F64 => format!("{}.5f64", w % 1000),
    }
}

/// The value of a sizing parameter, as the generated code computes ranges.
pub fn small_value(id: u16, slot: usize) -> u64 {
    2 + word(id, slot) % 7
}

/// The slot of parameter `name` in `op`'s call.
pub fn slot(op: &Op, name: &str) -> usize {
    op.call
        .as_ref()
        .and_then(|c| c.args.iter().position(|a| a.name == name))
        .unwrap_or_else(|| panic!("{}: no parameter {name}", op.name))
}

/// The value of count or length `expr` (a parameter or a literal).
pub fn count_value(op: &Op, expr: &str) -> u64 {
    expr.parse::<u64>()
        .unwrap_or_else(|_| small_value(op.id, slot(op, expr)))
}
