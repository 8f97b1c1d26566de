//! The simulated JIT linker: inputs are simulator module images (see the
//! crate header); linking merges their kernels, globals and references into
//! one image, which modules then load. Nothing is compiled: this is a test
//! double that checks the linker's handles, inputs and logs.

use crate::cu::CUresult;
use crate::error::{err, Error, Res};
use crate::image::{self, Image, MAGIC};

/// Where the JIT options of `cuLinkCreate` put their logs: (buffer, size
/// slot) addresses in the application, written during later calls.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LogSlots {
    pub info: (usize, usize),
    pub error: (usize, usize),
}

/// A live link.
#[derive(Debug, Default)]
pub(crate) struct Link {
    pub logs: LogSlots,
    pub inputs: Vec<Image>,
    /// The image of the last `cuLinkComplete`, NUL-terminated, valid until
    /// the link is destroyed.
    pub linked: Option<Vec<u8>>,
}

/// Input types `cuLinkAddData` knows (`CU_JIT_INPUT_CUBIN` to `CU_JIT_INPUT_NVVM`).
const INPUT_TYPES: u32 = 6;
/// `CU_JIT_INPUT_PTX`.
const INPUT_PTX: u32 = 1;

/// Parses one input as the driver's JIT does: an input in no format it
/// knows fails with `CUDA_ERROR_INVALID_IMAGE` ("not recognized"); a
/// simulator image that does not parse fails as PTX that does not compile
/// (`CUDA_ERROR_INVALID_PTX`) when given as PTX, else as a bad image.
pub(crate) fn parse_input(kind: u32, name: &str, bytes: &[u8]) -> Res<Image> {
    if kind >= INPUT_TYPES {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "unknown CUjitInputType");
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let text = &bytes[..end];
    if !text.starts_with(MAGIC.as_bytes()) {
        return Err(Error {
            code: CUresult::CUDA_ERROR_INVALID_IMAGE,
            why: format!("error   : the format of input {name} is not recognized").into(),
        });
    }
    image::parse(text).map_err(|why| Error {
        code: if kind == INPUT_PTX {
            CUresult::CUDA_ERROR_INVALID_PTX
        } else {
            CUresult::CUDA_ERROR_INVALID_IMAGE
        },
        why: format!("error   : input {name}: {why}").into(),
    })
}

/// Merges the inputs into one image (NUL-terminated text); a name defined
/// twice is an error, as it is for the driver's linker. A link without
/// inputs (or whose inputs all failed) gives an empty image, as the
/// driver's does.
pub(crate) fn link(inputs: &[Image]) -> Res<Vec<u8>> {
    let mut text = format!("{MAGIC}\n");
    let mut seen = std::collections::HashSet::new();
    for input in inputs {
        let lines = input
            .kernels
            .iter()
            .map(|k| ("kernel", k.as_str(), String::new()))
            .chain(
                input
                    .globals
                    .iter()
                    .map(|(g, n)| ("global", g.as_str(), format!(" {n}"))),
            )
            .chain(
                input
                    .texrefs
                    .iter()
                    .map(|t| ("texref", t.as_str(), String::new())),
            )
            .chain(
                input
                    .surfrefs
                    .iter()
                    .map(|t| ("surfref", t.as_str(), String::new())),
            );
        for (what, name, rest) in lines {
            if !seen.insert((what, name.to_string())) {
                return Err(Error {
                    code: CUresult::CUDA_ERROR_INVALID_IMAGE,
                    why: format!("multiple definition of {what} {name}").into(),
                });
            }
            text.push_str(&format!("{what} {name}{rest}\n"));
        }
    }
    let mut bytes = text.into_bytes();
    bytes.push(0);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_inputs_and_refuses_bad_ones() {
        let a = parse_input(1, "a", b"VGPU-SIM-MODULE 1\nkernel vector_add\n\0").expect("valid");
        let b = parse_input(0, "b", b"VGPU-SIM-MODULE 1\nglobal counter 4\n").expect("valid");
        let linked = link(&[a.clone(), b]).expect("links");
        let img = image::parse(&linked[..linked.len() - 1]).expect("parses");
        assert_eq!(img.kernels, ["vector_add"]);
        assert_eq!(img.globals, [("counter".to_string(), 4)]);
        let e = link(&[a.clone(), a]).expect_err("duplicate");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_IMAGE);
        let e = parse_input(1, "bad", b"VGPU-SIM-MODULE 1\nbogus").expect_err("bad PTX");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_PTX);
        let e = parse_input(1, "bad", b"junk").expect_err("unknown format");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_IMAGE);
        let empty = link(&[]).expect("an empty link completes");
        assert!(image::parse(&empty[..empty.len() - 1])
            .expect("parses")
            .kernels
            .is_empty());
    }
}
