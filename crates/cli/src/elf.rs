//! Just enough ELF64 reading to tell libraries apart without loading them:
//! the SONAME and the names of the defined dynamic symbols.
//!
//! Loading a driver runs its initialisers, so `vgpu` never `dlopen`s a
//! candidate; it reads the file. Only little-endian ELF64 is understood.
//! Every offset and size read from the file is checked against the file's
//! length before it is used.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

const SHT_DYNAMIC: u32 = 6;
const SHT_DYNSYM: u32 = 11;
const DT_NULL: u64 = 0;
const DT_SONAME: u64 = 14;
/// Largest section read (the driver's string table is well below this).
const MAX_SECTION: u64 = 64 << 20;

/// What the dynamic sections of a shared library say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DynInfo {
    /// `DT_SONAME`, if any.
    pub soname: Option<String>,
    /// Names of the symbols the library defines and exports.
    pub exports: Vec<String>,
}

impl DynInfo {
    /// True when the library exports `name`.
    pub fn exports(&self, name: &str) -> bool {
        self.exports.iter().any(|e| e == name)
    }
}

fn bad(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    )
}

struct Section {
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
}

struct Reader<'a> {
    file: File,
    len: u64,
    path: &'a Path,
}

impl Reader<'_> {
    fn read(&self, offset: u64, size: u64) -> io::Result<Vec<u8>> {
        let end = offset
            .checked_add(size)
            .ok_or_else(|| bad(self.path, "offset overflow"))?;
        if end > self.len || size > MAX_SECTION {
            return Err(bad(self.path, "a section lies outside the file"));
        }
        let mut buf =
            vec![0u8; usize::try_from(size).map_err(|_| bad(self.path, "section too large"))?];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn str_at(table: &[u8], at: u64) -> Option<String> {
    let start = usize::try_from(at).ok()?;
    let rest = table.get(start..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Reads the SONAME and exported symbol names of the ELF64 library at `path`.
pub fn read_dyn_info(path: &Path) -> io::Result<DynInfo> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let r = Reader { file, len, path };
    let head = r
        .read(0, 64)
        .map_err(|_| bad(path, "too short to be an ELF file"))?;
    if head[..4] != *b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return Err(bad(path, "not a little-endian 64-bit ELF file"));
    }
    let shoff = u64_at(&head, 0x28);
    let shentsize = u64::from(u16_at(&head, 0x3a));
    let shnum = u64::from(u16_at(&head, 0x3c));
    if shoff == 0 || shnum == 0 || shentsize < 64 {
        return Err(bad(path, "no section headers"));
    }
    let table = r.read(shoff, shentsize * shnum)?;
    let sections: Vec<Section> = table
        .chunks_exact(usize::from(u16_at(&head, 0x3a)))
        .map(|s| Section {
            kind: u32_at(s, 4),
            offset: u64_at(s, 24),
            size: u64_at(s, 32),
            link: u32_at(s, 40),
        })
        .collect();
    let strings_of = |s: &Section| -> io::Result<Vec<u8>> {
        let link = usize::try_from(s.link).map_err(|_| bad(path, "bad section link"))?;
        let strtab = sections
            .get(link)
            .ok_or_else(|| bad(path, "bad section link"))?;
        r.read(strtab.offset, strtab.size)
    };

    let mut info = DynInfo::default();
    for s in &sections {
        match s.kind {
            SHT_DYNSYM => {
                let strtab = strings_of(s)?;
                let syms = r.read(s.offset, s.size)?;
                // Elf64_Sym: st_name u32 @0, st_shndx u16 @6; 24 bytes each.
                for sym in syms.chunks_exact(24).skip(1) {
                    if u16_at(sym, 6) != 0 {
                        if let Some(name) = str_at(&strtab, u64::from(u32_at(sym, 0))) {
                            info.exports.push(name);
                        }
                    }
                }
            }
            SHT_DYNAMIC => {
                let strtab = strings_of(s)?;
                let dynamic = r.read(s.offset, s.size)?;
                // Elf64_Dyn: d_tag u64 @0, d_val u64 @8.
                for entry in dynamic.chunks_exact(16) {
                    match u64_at(entry, 0) {
                        DT_NULL => break,
                        DT_SONAME => info.soname = str_at(&strtab, u64_at(entry, 8)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(info)
}
