//! The CUDA runtime's integrity check (export table `D4082055-…`, slot 1).
//!
//! cudart asks the driver for a keyed hash of values only its own process
//! knows and compares it with its own computation; a mismatch fails every
//! runtime call with `cudaErrorSoftwareValidityNotEstablished`. The hash is
//! HMAC-MD2 with a fixed key over, in order and little-endian:
//!
//! | bytes | value |
//! |---|---|
//! | 4 | driver version (what `cuDriverGetVersion` reports) |
//! | 4 | the caller's `version` argument |
//! | 4 | `getpid()` |
//! | 4 | `pthread_self()` of the calling thread, low 32 bits |
//! | 8 | address of the CUDART_INTERFACE table handed out |
//! | 8 | address of the INTEGRITY_CHECK table handed out |
//! | 8 | the function pointer in slot 1 of that table |
//! | 8 | the caller's `unix_seconds` argument |
//! | 28 × devices | UUID (16), PCI domain, bus and device (i32 each), per visible device |
//!
//! The 16-byte digest is returned as two little-endian `u64`s. When
//! `version % 10` is 0 or 1 the driver returns fixed constants instead.
//! These facts were established against the real 580 driver; the test
//! vectors below are its outputs.

use hmac::{Hmac, Mac};

/// HMAC key.
const KEY: [u8; 16] = [
    0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52, 0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F,
];

/// The fixed answers for `version % 10` of 0 and 1.
const SHORT: [[u64; 2]; 2] = [
    [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
    [0x1841_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
];

/// What one device contributes.
#[derive(Clone, Copy, Debug)]
pub struct DeviceId {
    pub uuid: [u8; 16],
    pub pci_domain: i32,
    pub pci_bus: i32,
    pub pci_device: i32,
}

/// Everything the hash covers, gathered by the caller.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub driver_version: u32,
    pub version: u32,
    pub pid: u32,
    pub thread: u32,
    pub cudart_table: u64,
    pub integrity_table: u64,
    pub check_fn: u64,
    pub unix_seconds: u64,
    pub devices: Vec<DeviceId>,
}

impl Inputs {
    fn message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(48 + 28 * self.devices.len());
        for v in [self.driver_version, self.version, self.pid, self.thread] {
            m.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            self.cudart_table,
            self.integrity_table,
            self.check_fn,
            self.unix_seconds,
        ] {
            m.extend_from_slice(&v.to_le_bytes());
        }
        for d in &self.devices {
            m.extend_from_slice(&d.uuid);
            for v in [d.pci_domain, d.pci_bus, d.pci_device] {
                m.extend_from_slice(&v.to_le_bytes());
            }
        }
        m
    }
}

/// The two words slot 1 writes.
pub fn answer(inputs: &Inputs) -> [u64; 2] {
    if inputs.version % 10 < 2 {
        return SHORT[(inputs.version % 10) as usize];
    }
    let mut mac = <Hmac<md2::Md2> as Mac>::new_from_slice(&KEY).expect("HMAC takes any key length");
    mac.update(&inputs.message());
    let digest = mac.finalize().into_bytes();
    let lo = u64::from_le_bytes(digest[..8].try_into().expect("16-byte digest"));
    let hi = u64::from_le_bytes(digest[8..16].try_into().expect("16-byte digest"));
    [lo, hi]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs and outputs observed on the real driver 580 (H100, one GPU).
    fn observed(version: u32, thread: u32) -> Inputs {
        Inputs {
            driver_version: 13000,
            version,
            pid: 0x187,
            thread,
            cudart_table: 0x7f28_0c0f_6680,
            integrity_table: 0x7f28_0c0f_6660,
            check_fn: 0x7f28_06a5_5350,
            unix_seconds: 0x682b_9cee,
            devices: vec![DeviceId {
                uuid: [
                    0xad, 0x78, 0x51, 0xf0, 0xeb, 0x11, 0x60, 0x94, 0xc2, 0xf1, 0x93, 0xab, 0x69,
                    0x17, 0xde, 0x52,
                ],
                pci_domain: 0,
                pci_bus: 0,
                pci_device: 6,
            }],
        }
    }

    #[test]
    fn matches_the_real_driver() {
        assert_eq!(
            answer(&observed(13002, 0x0cde_7140)),
            [0xc018_9338_747b_607f, 0xb473_83e5_56da_e4df]
        );
        assert_eq!(
            answer(&observed(12082, 0x0cde_7140)),
            [0xcd0e_0222_9d61_7962, 0x4c04_4107_dcfb_5650]
        );
        assert_eq!(
            answer(&observed(13005, 0x048c_26c0)),
            [0x70bb_adaf_863e_2c6e, 0x0b55_82a0_e3e0_2a54]
        );
    }

    #[test]
    fn short_answers() {
        assert_eq!(answer(&observed(13000, 1)), SHORT[0]);
        assert_eq!(answer(&observed(12341, 1)), SHORT[1]);
    }

    #[test]
    fn message_layout() {
        let m = observed(13002, 0x0cde_7140).message();
        assert_eq!(m.len(), 48 + 28);
        assert_eq!(&m[..8], &[0xc8, 0x32, 0, 0, 0xca, 0x32, 0, 0]);
        assert_eq!(&m[72..76], &[6, 0, 0, 0]);
    }
}
