//! Tests of peer access between the two simulated devices and copies between
//! their contexts. They share the parent module's lock and set-up.

use super::*;

const PEER_ACCESS_ALREADY_ENABLED: CUresult = CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
const PEER_ACCESS_NOT_ENABLED: CUresult = CUresult::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
const PEER_ACCESS_UNSUPPORTED: CUresult = CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
const INVALID_DEVICE: CUresult = CUresult::CUDA_ERROR_INVALID_DEVICE;

#[test]
fn two_devices_are_peers_and_a_device_is_not_its_own() {
    let _g = setup();
    let mut can = -1;
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuDeviceCanAccessPeer(&mut can, 0, 1), OK);
        assert_eq!(can, 1);
        assert_eq!(cuDeviceCanAccessPeer(&mut can, 1, 1), OK);
        assert_eq!(can, 0);
        let mut v = -1;
        let access = CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED;
        assert_eq!(cuDeviceGetP2PAttribute(&mut v, access, 0, 1), OK);
        assert_eq!(v, 1);
        assert_eq!(
            cuDeviceGetP2PAttribute(&mut v, access, 1, 1),
            INVALID_DEVICE
        );
    }
}

#[test]
fn peer_access_is_enabled_once_and_disabled_once() {
    let _g = setup();
    let c1 = primary(1);
    let c0 = primary(0);
    assert_eq!(cuCtxEnablePeerAccess(c0, 0), PEER_ACCESS_UNSUPPORTED);
    assert_eq!(cuCtxEnablePeerAccess(c1, 1), INVALID_VALUE);
    assert_eq!(cuCtxEnablePeerAccess(c1, 0), OK);
    assert_eq!(cuCtxEnablePeerAccess(c1, 0), PEER_ACCESS_ALREADY_ENABLED);
    assert_eq!(cuCtxDisablePeerAccess(c1), OK);
    assert_eq!(cuCtxDisablePeerAccess(c1), PEER_ACCESS_NOT_ENABLED);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(1), OK);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), OK);
}

#[test]
fn memcpy_peer_copies_between_devices_and_checks_both_ranges() {
    let _g = setup();
    let c1 = primary(1);
    let b = alloc(256);
    let c0 = primary(0);
    let a = alloc(256);
    let bytes: Vec<u8> = (0..=255).collect();
    let mut back = vec![0u8; 256];
    // SAFETY: host buffers of 256 bytes; device ranges of this test.
    unsafe {
        assert_eq!(cuMemcpyHtoD_v2(a, bytes.as_ptr().cast(), 256), OK);
        assert_eq!(cuMemcpyPeer(b, c1, a, c0, 256), OK);
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), b, 256), OK);
    }
    assert_eq!(back, bytes);
    assert_eq!(cuMemcpyPeer(b, c1, a + 8, c0, 256), INVALID_VALUE);
    assert_eq!(cuMemcpyPeer(b, null_mut(), a, c0, 16), INVALID_CONTEXT);
    assert_eq!(cuMemFree_v2(a), OK);
    assert_eq!(cuCtxSetCurrent(c1), OK);
    assert_eq!(cuMemFree_v2(b), OK);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(1), OK);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), OK);
}
