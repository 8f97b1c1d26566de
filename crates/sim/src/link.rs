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

/// Parses one input; a bad one fails as the driver's JIT does: PTX with
/// `CUDA_ERROR_INVALID_PTX`, other inputs with `CUDA_ERROR_INVALID_IMAGE`.
pub(crate) fn parse_input(kind: u32, name: &str, bytes: &[u8]) -> Res<Image> {
    if kind >= INPUT_TYPES {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "unknown CUjitInputType");
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    image::parse(&bytes[..end]).map_err(|why| Error {
        code: if kind == INPUT_PTX {
            CUresult::CUDA_ERROR_INVALID_PTX
        } else {
            CUresult::CUDA_ERROR_INVALID_IMAGE
        },
        why: format!("input {name}: {why}").into(),
    })
}

/// Merges the inputs into one image (NUL-terminated text); a name defined
/// twice is an error, as it is for the driver's linker.
pub(crate) fn link(inputs: &[Image]) -> Res<Vec<u8>> {
    if inputs.is_empty() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "nothing was added to the link",
        );
    }
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
        let e = parse_input(1, "bad", b".version 8.0\nbogus").expect_err("bad PTX");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_PTX);
        let e = parse_input(2, "bad", b"junk").expect_err("bad image");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_IMAGE);
        assert!(link(&[]).is_err());
    }
}
