//! A small parser for the `PFN_` typedefs of `cuda*Typedefs.h`.
//!
//! It reads `typedef RET (CUDAAPI *PFN_name_vNNNN[_ptds|_ptsz])(PARAMS);` statements,
//! whatever preprocessor condition surrounds them; parameters are `[const] TYPE [*
//! [const]]... NAME` (the headers use no arrays and no inline function pointers, and the
//! parser fails loudly if that changes).

use crate::Error;

/// A C type: base name, its `const`, and one entry per `*` saying whether that pointer
/// itself is `const`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CType {
    pub base: String,
    pub base_const: bool,
    pub ptrs: Vec<bool>,
}

impl CType {
    /// Normalised C spelling, e.g. `const char * const *`.
    pub fn c_spelling(&self) -> String {
        let mut s = String::new();
        if self.base_const {
            s.push_str("const ");
        }
        s.push_str(&self.base);
        for &c in &self.ptrs {
            s.push_str(if c { " * const" } else { " *" });
        }
        s
    }

    /// Whether the pointee of the outermost pointer is `const`.
    pub fn pointee_const(&self) -> bool {
        match self.ptrs.len() {
            0 => false,
            1 => self.base_const,
            n => self.ptrs[n - 2],
        }
    }
}

#[derive(Debug, Clone)]
pub struct CParam {
    pub name: String,
    pub ty: CType,
}

/// One `PFN_` typedef.
#[derive(Debug, Clone)]
pub struct Typedef {
    /// The API name, e.g. `cuMemAlloc`.
    pub base: String,
    /// The ABI version, e.g. 3020.
    pub version: u32,
    /// `""`, `"_ptds"` or `"_ptsz"`.
    pub per_thread: &'static str,
    pub ret: CType,
    pub params: Vec<CParam>,
}

/// Removes comments and preprocessor lines (with their continuations).
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |e| &r[e + 2..]);
            out.push(' ');
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |e| &r[e..]);
        } else {
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
    }
    let mut kept = String::with_capacity(out.len());
    let mut continued = false;
    for line in out.lines() {
        let directive = continued || line.trim_start().starts_with('#');
        continued = directive && line.trim_end().ends_with('\\');
        if !directive {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parses `[const] BASE [const] (* [const])*` from tokens (no name).
fn parse_type(toks: &[String]) -> Result<CType, Error> {
    let mut base_words: Vec<&str> = Vec::new();
    let mut base_const = false;
    let mut ptrs: Vec<bool> = Vec::new();
    for t in toks {
        match t.as_str() {
            "const" if ptrs.is_empty() => base_const = true,
            "const" => {
                if let Some(last) = ptrs.last_mut() {
                    *last = true;
                }
            }
            "*" => ptrs.push(false),
            "CUDAAPI" | "struct" | "enum" => {}
            w if ptrs.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                base_words.push(w);
            }
            other => return Err(format!("unexpected token `{other}` in type {toks:?}").into()),
        }
    }
    if base_words.is_empty() {
        return Err(format!("no type in {toks:?}").into());
    }
    let base = match base_words.join(" ").as_str() {
        "unsigned" => "unsigned int".to_string(),
        b => b.to_string(),
    };
    Ok(CType {
        base,
        base_const,
        ptrs,
    })
}

fn parse_params(s: &str, what: &str) -> Result<Vec<CParam>, Error> {
    let toks = tokens(s);
    if toks.is_empty() || (toks.len() == 1 && toks[0] == "void") {
        return Ok(Vec::new());
    }
    let mut params = Vec::new();
    for chunk in toks.split(|t| t == ",") {
        if chunk
            .iter()
            .any(|t| matches!(t.as_str(), "(" | ")" | "[" | "]"))
        {
            return Err(format!("{what}: unsupported declarator {chunk:?}").into());
        }
        let (name, ty) = chunk
            .split_last()
            .ok_or_else(|| format!("{what}: empty parameter"))?;
        if ty.is_empty() || ty.last().is_some_and(|t| t == "const") && ty.len() == 1 {
            return Err(format!("{what}: unnamed parameter {chunk:?}").into());
        }
        params.push(CParam {
            name: name.clone(),
            ty: parse_type(ty)?,
        });
    }
    Ok(params)
}

/// Splits `cuX_v3020_ptds` into (`cuX`, 3020, `_ptds`); `None` for an unversioned name.
fn split_typedef_name(name: &str) -> Option<(String, u32, &'static str)> {
    let (stem, per_thread) = if let Some(s) = name.strip_suffix("_ptds") {
        (s, "_ptds")
    } else if let Some(s) = name.strip_suffix("_ptsz") {
        (s, "_ptsz")
    } else {
        (name, "")
    };
    let (base, ver) = stem.rsplit_once("_v")?;
    if ver.is_empty() || !ver.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((base.to_string(), ver.parse().ok()?, per_thread))
}

/// Parses every versioned `PFN_` typedef of one header. Unversioned ones (the 12.9
/// headers have a few, duplicates of versioned ones) are skipped.
pub fn parse_typedefs(text: &str, file: &str) -> Result<Vec<Typedef>, Error> {
    let clean = strip(text);
    let mut out = Vec::new();
    for stmt in clean.split(';') {
        // A statement may start with leftovers such as `extern "C" {`.
        let Some(start) = stmt.find("typedef ") else {
            continue;
        };
        let stmt = stmt[start..].trim();
        let Some(rest) = stmt.strip_prefix("typedef") else {
            continue;
        };
        if !stmt.contains("PFN_") {
            continue;
        }
        let what = format!(
            "{file}: `{}`",
            stmt.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let open = rest.find('(').ok_or_else(|| format!("{what}: no `(`"))?;
        let ret = parse_type(&tokens(&rest[..open]))?;
        let after = &rest[open + 1..];
        let close = after.find(')').ok_or_else(|| format!("{what}: no `)`"))?;
        let name_toks = tokens(&after[..close]);
        let name = name_toks
            .iter()
            .find_map(|t| t.strip_prefix("PFN_"))
            .ok_or_else(|| format!("{what}: no PFN_ name"))?;
        let after = &after[close + 1..];
        let (Some(po), Some(pc)) = (after.find('('), after.rfind(')')) else {
            return Err(format!("{what}: no parameter list").into());
        };
        let Some((base, version, per_thread)) = split_typedef_name(name) else {
            continue;
        };
        let params = parse_params(&after[po + 1..pc], &what)?;
        out.push(Typedef {
            base,
            version,
            per_thread,
            ret,
            params,
        });
    }
    Ok(out)
}
