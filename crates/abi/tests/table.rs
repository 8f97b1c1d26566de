//! The function table against the real driver's export list, and signature spot checks.

use vgpu_abi::{find, HandleKind, ParamKind, PerThread, FUNCTIONS};

const EXPORTS: &str = include_str!("../../../fixtures/libcuda-580-exports.txt");

#[test]
fn table_names_equal_the_driver_exports() {
    let mut expected: Vec<&str> = EXPORTS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    expected.sort_unstable();
    let names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
    assert_eq!(expected.len(), 707);
    assert_eq!(names, expected);
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "table must be sorted and unique"
    );
}

#[test]
fn every_known_signature_has_a_version_and_unknown_ones_have_no_params() {
    for f in FUNCTIONS {
        if f.signature_known {
            assert!(f.version >= 2000, "{}", f.name);
            assert!(f.name.starts_with(f.base), "{}", f.name);
        } else {
            assert!(f.params.is_empty(), "{}", f.name);
            assert_eq!(f.version, 0, "{}", f.name);
        }
        let suffix = match f.per_thread {
            PerThread::None => None,
            PerThread::Ptds => Some("_ptds"),
            PerThread::Ptsz => Some("_ptsz"),
        };
        assert_eq!(
            suffix.is_some(),
            f.name.ends_with("_ptds") || f.name.ends_with("_ptsz"),
            "{}",
            f.name
        );
        if let Some(s) = suffix {
            assert!(f.name.ends_with(s), "{}", f.name);
        }
    }
    let unknown: Vec<&str> = FUNCTIONS
        .iter()
        .filter(|f| !f.signature_known)
        .map(|f| f.name)
        .collect();
    // Debugger hooks (cudbg*) and a few internal entry points have no public typedef.
    assert!(
        unknown.iter().all(|n| n.starts_with("cudbg")
            || ["cuEGLApiInit", "cuMemGetAttribute", "cuMemGetAttribute_v2"].contains(n)),
        "{unknown:?}"
    );
}

fn kinds(name: &str) -> Vec<(&'static str, ParamKind)> {
    let f = find(name).unwrap_or_else(|| panic!("{name} missing"));
    assert!(f.signature_known, "{name}");
    f.params.iter().map(|p| (p.name, p.kind)).collect()
}

#[test]
fn mem_alloc_v2() {
    let f = find("cuMemAlloc_v2").expect("exported");
    assert_eq!(
        (f.base, f.version, f.per_thread),
        ("cuMemAlloc", 3020, PerThread::None)
    );
    assert_eq!(f.params[0].c_type, "CUdeviceptr_v2 *");
    assert_eq!(f.params[1].c_type, "size_t");
    assert_eq!(
        kinds("cuMemAlloc_v2"),
        vec![("dptr", ParamKind::Out), ("bytesize", ParamKind::Scalar)]
    );
    // The legacy 32-bit variant comes from the 12.9 headers.
    let legacy = find("cuMemAlloc").expect("exported");
    assert_eq!(legacy.version, 2000);
    assert_eq!(legacy.params[1].c_type, "unsigned int");
}

#[test]
fn launch_kernel() {
    let k = kinds("cuLaunchKernel");
    assert_eq!(k.len(), 11);
    assert_eq!(k[0], ("f", ParamKind::Handle(HandleKind::Function)));
    assert_eq!(k[1], ("gridDimX", ParamKind::Scalar));
    assert_eq!(k[8], ("hStream", ParamKind::Handle(HandleKind::Stream)));
    // From the override table: the header's `void **` says nothing about the layout.
    assert_eq!(k[9], ("kernelParams", ParamKind::Opaque));
    assert_eq!(k[10], ("extra", ParamKind::Opaque));
    let ptsz = find("cuLaunchKernel_ptsz").expect("exported");
    assert_eq!(
        (ptsz.base, ptsz.version, ptsz.per_thread),
        ("cuLaunchKernel", 7000, PerThread::Ptsz)
    );
    assert_eq!(ptsz.params.len(), 11);
}

#[test]
fn memcpy_host_buffers() {
    let f = find("cuMemcpyHtoD_v2_ptds").expect("exported");
    assert_eq!(
        (f.base, f.version, f.per_thread),
        ("cuMemcpyHtoD", 7000, PerThread::Ptds)
    );
    assert_eq!(
        kinds("cuMemcpyHtoD_v2_ptds"),
        vec![
            ("dstDevice", ParamKind::DevPtr),
            ("srcHost", ParamKind::HostBuf { len_param: 2 }),
            ("ByteCount", ParamKind::Scalar)
        ]
    );
    assert_eq!(
        kinds("cuMemcpyDtoHAsync_v2"),
        vec![
            ("dstHost", ParamKind::HostBuf { len_param: 2 }),
            ("srcDevice", ParamKind::DevPtr),
            ("ByteCount", ParamKind::Scalar),
            ("hStream", ParamKind::Handle(HandleKind::Stream)),
        ]
    );
}

#[test]
fn other_kinds() {
    assert_eq!(kinds("cuInit"), vec![("Flags", ParamKind::Scalar)]);
    assert_eq!(
        kinds("cuDeviceGetAttribute")[1],
        ("attrib", ParamKind::Scalar)
    );
    assert_eq!(
        kinds("cuDeviceGetAttribute")[2],
        ("dev", ParamKind::Handle(HandleKind::Device))
    );
    assert_eq!(kinds("cuCtxCreate_v2")[0], ("pctx", ParamKind::Out));
    // An image has no length parameter: its size comes from its own header.
    assert_eq!(kinds("cuModuleLoadData")[1], ("image", ParamKind::Opaque));
    assert_eq!(kinds("cuModuleGetFunction")[2], ("name", ParamKind::In));
    assert_eq!(
        kinds("cuStreamAddCallback")[1],
        ("callback", ParamKind::Callback)
    );
    assert_eq!(kinds("cuLaunchHostFunc")[1].1, ParamKind::Callback);
    assert_eq!(kinds("cuGetErrorString")[0], ("error", ParamKind::Scalar));
    assert_eq!(kinds("cuDeviceGetUuid_v2")[0], ("uuid", ParamKind::Out));
    assert_eq!(kinds("cuMemsetD32_v2")[0], ("dstDevice", ParamKind::DevPtr));
    assert_eq!(kinds("cuVDPAUGetDevice")[2].1, ParamKind::Callback);
    assert_eq!(kinds("cuGraphicsGLRegisterBuffer")[0].1, ParamKind::Out);
    // cuMemcpyBatchAsync dropped `failIdx` in 13.0: two variants, two signatures.
    assert_eq!(find("cuMemcpyBatchAsync").map(|f| f.params.len()), Some(9));
    assert_eq!(
        find("cuMemcpyBatchAsync_v2").map(|f| f.params.len()),
        Some(8)
    );
    assert_eq!(kinds("cuGraphGetNodes")[2], ("numNodes", ParamKind::InOut));
    assert_eq!(kinds("cuMemcpyBatchAsync_v2")[0], ("dsts", ParamKind::In));
    assert!(!find("cudbgApiInit").expect("exported").signature_known);
}
