//! The simulator's module image format (see the crate header): reading a NUL-terminated
//! image without over-reading a binary one, and parsing it.

/// The first line of every simulator module.
pub(crate) const MAGIC: &str = "VGPU-SIM-MODULE 1";
/// Longest image accepted, NUL excluded.
pub(crate) const MAX_IMAGE: usize = 1 << 20;
/// Largest module global.
const MAX_GLOBAL: usize = 1 << 30;

/// A parsed image: kernel names, (global name, size), texture and surface reference
/// names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Image {
    pub kernels: Vec<String>,
    pub globals: Vec<(String, usize)>,
    pub texrefs: Vec<String>,
    pub surfrefs: Vec<String>,
}

fn valid_name(s: &str) -> bool {
    (1..=255).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Parses a module image (without its NUL).
pub(crate) fn parse(text: &[u8]) -> Result<Image, String> {
    let text = std::str::from_utf8(text).map_err(|_| "image is not UTF-8 text".to_string())?;
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some(MAGIC) {
        return Err(format!("image does not start with {MAGIC:?}"));
    }
    let mut image = Image::default();
    for (no, line) in lines.enumerate().map(|(i, l)| (i + 2, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["kernel", name] if valid_name(name) => {
                if image.kernels.iter().any(|k| k == name) {
                    return Err(format!("line {no}: kernel {name} declared twice"));
                }
                image.kernels.push((*name).to_string());
            }
            ["global", name, size] if valid_name(name) => {
                let size: usize = size
                    .parse()
                    .ok()
                    .filter(|s| (1..=MAX_GLOBAL).contains(s))
                    .ok_or_else(|| format!("line {no}: global size must be 1..={MAX_GLOBAL}"))?;
                if image.globals.iter().any(|(g, _)| g == name) {
                    return Err(format!("line {no}: global {name} declared twice"));
                }
                image.globals.push(((*name).to_string(), size));
            }
            [kind @ ("texref" | "surfref"), name] if valid_name(name) => {
                let list = if *kind == "texref" {
                    &mut image.texrefs
                } else {
                    &mut image.surfrefs
                };
                if list.iter().any(|t| t == name) {
                    return Err(format!("line {no}: {kind} {name} declared twice"));
                }
                list.push((*name).to_string());
            }
            _ => return Err(format!("line {no}: cannot parse {line:?}")),
        }
    }
    Ok(image)
}

/// Reads a NUL-terminated image, stopping at the first byte that rules it out, so a
/// short binary image (cubin, fatbin) is never over-read.
///
/// # Safety
/// `image` must be non-NULL and readable up to its NUL terminator or up to the first
/// byte that differs from [`MAGIC`], whichever comes first.
pub(crate) unsafe fn read_image(image: *const u8) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    loop {
        // SAFETY: we read no further than the contract allows: we stop at NUL, at the first
        // mismatch with MAGIC, and after MAX_IMAGE bytes.
        let b = unsafe { image.add(bytes.len()).read() };
        if b == 0 {
            return Ok(bytes);
        }
        if bytes.len() < MAGIC.len() && MAGIC.as_bytes()[bytes.len()] != b {
            return Err(format!(
                "not a vgpu-sim module (PTX, cubin and fatbin images need a GPU); expected {MAGIC:?}"
            ));
        }
        if bytes.len() == MAX_IMAGE {
            return Err(format!("image longer than {MAX_IMAGE} bytes"));
        }
        bytes.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_format() {
        let img = parse(b"VGPU-SIM-MODULE 1\n# c\n\nkernel vector_add\nglobal counter 4\n")
            .expect("valid image");
        assert_eq!(img.kernels, ["vector_add"]);
        assert_eq!(img.globals, [("counter".to_string(), 4)]);
        let img = parse(b"VGPU-SIM-MODULE 1\ntexref tex\nsurfref tex\nsurfref surf\n")
            .expect("valid image");
        assert_eq!(img.texrefs, ["tex"]);
        assert_eq!(img.surfrefs, ["tex", "surf"]);
    }

    #[test]
    fn rejects_bad_images() {
        for bad in [
            &b"VGPU-SIM-MODULE 2\n"[..],
            b"kernel x\n",
            b"VGPU-SIM-MODULE 1\nkernel\n",
            b"VGPU-SIM-MODULE 1\nkernel a b\n",
            b"VGPU-SIM-MODULE 1\nglobal g 0\n",
            b"VGPU-SIM-MODULE 1\nglobal g x\n",
            b"VGPU-SIM-MODULE 1\nkernel a\nkernel a\n",
            b"VGPU-SIM-MODULE 1\nkernel a-b\n",
            b"VGPU-SIM-MODULE 1\nlaunch a\n",
            b"VGPU-SIM-MODULE 1\ntexref t\ntexref t\n",
            b"VGPU-SIM-MODULE 1\nsurfref\n",
            b"VGPU-SIM-MODULE 1\ntexref a b\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn read_image_stops_at_nul_and_at_mismatch() {
        let ok = b"VGPU-SIM-MODULE 1\nkernel saxpy\n\0trailing";
        // SAFETY: NUL-terminated buffer.
        let bytes = unsafe { read_image(ok.as_ptr()) }.expect("reads");
        assert_eq!(bytes, &ok[..ok.len() - 9]);
        // An ELF header: rejected at its first byte, nothing past it is read.
        let elf = [0x7fu8];
        // SAFETY: the first byte mismatches, so only one byte is read.
        assert!(unsafe { read_image(elf.as_ptr()) }.is_err());
    }
}
