//! What the generated ABI crate says about Rust types: each export's
//! parameter types (from `generated/exports.rs`) and what each type name
//! resolves to (from `generated/types.rs`): a primitive, an enum newtype, a
//! pointer, a struct or a union.

use std::collections::HashMap;

use crate::Error;

/// A primitive the wire carries by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    /// `usize` / `size_t`: 64 bits on the wire.
    Usize,
    F32,
    F64,
}

impl Prim {
    /// The wire field type (zerocopy little-endian, alignment 1).
    pub fn wire(self) -> &'static str {
        match self {
            Prim::U8 => "u8",
            Prim::I8 => "i8",
            Prim::U16 => "U16",
            Prim::I16 => "I16",
            Prim::U32 => "U32",
            Prim::I32 => "I32",
            Prim::U64 | Prim::Usize => "U64",
            Prim::I64 => "I64",
            Prim::F32 => "F32",
            Prim::F64 => "F64",
        }
    }

    /// The wire type's name in the schema text.
    pub fn schema(self) -> &'static str {
        match self {
            Prim::U8 => "u8",
            Prim::I8 => "i8",
            Prim::U16 => "u16",
            Prim::I16 => "i16",
            Prim::U32 => "u32",
            Prim::I32 => "i32",
            Prim::U64 | Prim::Usize => "u64",
            Prim::I64 => "i64",
            Prim::F32 => "f32",
            Prim::F64 => "f64",
        }
    }

    /// Whether the wire field is a single byte (no `get`/`new` wrapper).
    pub fn is_byte(self) -> bool {
        matches!(self, Prim::U8 | Prim::I8)
    }

    fn from_rust(name: &str) -> Option<Prim> {
        Some(match name {
            "u8" | "::core::ffi::c_uchar" => Prim::U8,
            "i8" | "::core::ffi::c_char" | "::core::ffi::c_schar" => Prim::I8,
            "u16" | "::core::ffi::c_ushort" => Prim::U16,
            "i16" | "::core::ffi::c_short" => Prim::I16,
            "u32" | "::core::ffi::c_uint" => Prim::U32,
            "i32" | "::core::ffi::c_int" => Prim::I32,
            "u64" | "::core::ffi::c_ulonglong" | "::core::ffi::c_ulong" => Prim::U64,
            "i64" | "::core::ffi::c_longlong" | "::core::ffi::c_long" => Prim::I64,
            "usize" => Prim::Usize,
            "f32" => Prim::F32,
            "f64" => Prim::F64,
            _ => return None,
        })
    }
}

/// What a Rust type (as written in an export's signature) is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    Prim(Prim),
    /// A `#[repr(transparent)]` enum newtype over a primitive.
    Enum {
        name: String,
        inner: Prim,
    },
    /// A pointer: `*mut` (`mutable`) or `*const` to `to`.
    Ptr {
        mutable: bool,
        to: Box<Ty>,
    },
    /// A C struct or union, by its name in `vgpu_abi::types`, with what its
    /// fields hold.
    Record {
        name: String,
        pointers: bool,
    },
    /// `void`.
    Void,
    /// A function pointer (`Option<unsafe extern "C" fn …>`).
    Callback,
}

/// A Rust type as the ABI crate names it, and what it resolves to.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    /// The type as written, with `vgpu_abi::types::` paths.
    pub rust: String,
    pub ty: Ty,
}

/// The ABI crate's types and export signatures.
pub struct Abi {
    aliases: HashMap<String, String>,
    newtypes: HashMap<String, String>,
    /// Record name → its field types, as written.
    records: HashMap<String, Vec<String>>,
    /// Export name → its parameters (name, Rust type as written).
    exports: HashMap<String, Vec<(String, String)>>,
}

impl Abi {
    /// Reads `generated/types.rs` and `generated/exports.rs`.
    pub fn read(types_rs: &str, exports_rs: &str) -> Result<Abi, Error> {
        let mut abi = Abi {
            aliases: HashMap::new(),
            newtypes: HashMap::new(),
            records: HashMap::new(),
            exports: HashMap::new(),
        };
        let mut open: Option<String> = None;
        // rustfmt wraps a long `pub type A =\n    B;` over two lines.
        let mut wrapped: Option<String> = None;
        for line in types_rs.lines() {
            let joined;
            let mut t = line.trim();
            if let Some(head) = wrapped.take() {
                joined = format!("{head} {t}");
                t = &joined;
            } else if t.starts_with("pub type ") && t.ends_with(" =") {
                wrapped = Some(t.to_string());
                continue;
            }
            if let Some(name) = &open {
                if t == "}" {
                    open = None;
                } else if let Some((_, ty)) =
                    t.strip_prefix("pub ").and_then(|f| f.split_once(": "))
                {
                    let ty = ty.trim_end_matches(',').to_string();
                    abi.records.get_mut(name).expect("opened").push(ty);
                }
                continue;
            }
            if let Some(rest) = t.strip_prefix("pub type ") {
                if let Some((a, b)) = rest.trim_end_matches(';').split_once(" = ") {
                    abi.aliases.insert(a.to_string(), b.to_string());
                }
            } else if let Some(rest) = t.strip_prefix("pub use self::") {
                if let Some((a, b)) = rest.trim_end_matches(';').split_once(" as ") {
                    abi.aliases.insert(b.to_string(), a.to_string());
                }
            } else if let Some(rest) = t
                .strip_prefix("pub struct ")
                .or_else(|| t.strip_prefix("pub union "))
            {
                if let Some((name, inner)) = rest.split_once("(pub ") {
                    abi.newtypes
                        .insert(name.to_string(), inner.trim_end_matches(");").to_string());
                } else if let Some(name) = rest.strip_suffix(" {") {
                    abi.records.insert(name.to_string(), Vec::new());
                    open = Some(name.to_string());
                }
            }
        }
        for line in exports_rs.lines() {
            let t = line.trim();
            let Some(rest) = t.strip_prefix("fn ") else {
                continue;
            };
            let Some((name, rest)) = rest.split_once('(') else {
                continue;
            };
            let Some((params, _)) = rest.rsplit_once(") -> ") else {
                continue;
            };
            let params = split_params(params)
                .into_iter()
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (n, ty) = p.split_once(": ").ok_or("a parameter without a type")?;
                    Ok((n.trim().to_string(), ty.replace("$crate::types::", "")))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            abi.exports.insert(name.to_string(), params);
        }
        if abi.exports.is_empty() || abi.records.is_empty() {
            return Err("the generated ABI files could not be read".into());
        }
        Ok(abi)
    }

    /// The parameters of export `name`, resolved.
    pub fn params(&self, name: &str) -> Result<Vec<Param>, Error> {
        let params = self
            .exports
            .get(name)
            .ok_or_else(|| format!("{name} is not an export of the ABI table"))?;
        params
            .iter()
            .map(|(n, rust)| {
                Ok(Param {
                    name: n.clone(),
                    rust: qualify(rust),
                    ty: self.resolve(rust)?,
                })
            })
            .collect()
    }

    /// What a type as written resolves to.
    pub fn resolve(&self, rust: &str) -> Result<Ty, Error> {
        let t = rust.trim();
        if let Some(rest) = t.strip_prefix("*mut ") {
            return Ok(Ty::Ptr {
                mutable: true,
                to: Box::new(self.resolve(rest)?),
            });
        }
        if let Some(rest) = t.strip_prefix("*const ") {
            return Ok(Ty::Ptr {
                mutable: false,
                to: Box::new(self.resolve(rest)?),
            });
        }
        if t == "::core::ffi::c_void" {
            return Ok(Ty::Void);
        }
        if t.starts_with("::core::option::Option<") || t.starts_with("Option<") {
            return Ok(Ty::Callback);
        }
        if let Some(p) = Prim::from_rust(t) {
            return Ok(Ty::Prim(p));
        }
        if let Some(target) = self.aliases.get(t) {
            return match self.resolve(target)? {
                // An alias of a record or newtype keeps the name the
                // signature uses, which is what generated code writes.
                Ty::Record { pointers, .. } => Ok(Ty::Record {
                    name: t.to_string(),
                    pointers,
                }),
                Ty::Enum { inner, .. } => Ok(Ty::Enum {
                    name: t.to_string(),
                    inner,
                }),
                other => Ok(other),
            };
        }
        if let Some(inner) = self.newtypes.get(t) {
            let inner = Prim::from_rust(inner)
                .ok_or_else(|| format!("{t} wraps {inner}, not a primitive"))?;
            return Ok(Ty::Enum {
                name: t.to_string(),
                inner,
            });
        }
        if self.records.contains_key(t) {
            return Ok(Ty::Record {
                name: t.to_string(),
                pointers: self.record_has_pointers(t, 0),
            });
        }
        Err(format!("unknown type {t}").into())
    }

    /// Whether a record holds a pointer or handle anywhere inside it.
    fn record_has_pointers(&self, name: &str, depth: usize) -> bool {
        if depth > 8 {
            return true;
        }
        let Some(fields) = self.records.get(name) else {
            return false;
        };
        fields.iter().any(|f| {
            let f = f
                .trim_start_matches('[')
                .split(';')
                .next()
                .unwrap_or(f)
                .trim();
            match self.resolve(f) {
                Ok(Ty::Ptr { .. } | Ty::Callback) => true,
                Ok(Ty::Record { name, .. }) => {
                    let target = self.canonical(&name);
                    self.record_has_pointers(&target, depth + 1)
                }
                Ok(_) => false,
                Err(_) => true,
            }
        })
    }

    /// A type name with its aliases followed.
    fn canonical(&self, name: &str) -> String {
        let mut n = name.to_string();
        for _ in 0..16 {
            match self.aliases.get(&n) {
                Some(next) => n = next.clone(),
                None => break,
            }
        }
        n
    }
}

/// Splits a parameter list at top-level commas.
fn split_params(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in s.chars() {
        match c {
            '(' | '<' | '[' => depth += 1,
            ')' | '>' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_string());
    out
}

/// A type as written in the ABI crate, with its names made paths into
/// `vgpu_abi::types` (primitives and `::core` paths stay as they are).
fn qualify(rust: &str) -> String {
    let mut out = String::new();
    for (i, word) in rust.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let bare = word.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && !matches!(
                word,
                "mut"
                    | "const"
                    | "u8"
                    | "i8"
                    | "u16"
                    | "i16"
                    | "u32"
                    | "i32"
                    | "u64"
                    | "i64"
                    | "usize"
                    | "f32"
                    | "f64"
            );
        if bare && !word.starts_with("::") {
            out.push_str("vgpu_abi::types::");
        }
        out.push_str(word);
    }
    out
}
