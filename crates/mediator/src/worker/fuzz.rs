//! The worker's handling of decoded requests under a fuzzer: request
//! frames from the input run, one after the other, on a lane of a session
//! whose driver is the simulated device (`libvgpu-sim.so`, a test double).
//! Everything a run made is released before the next: its contexts are
//! destroyed (the simulated device frees what they own), the primary
//! contexts reset, VMM handles released and the tables emptied, so a long
//! fuzzing run does not grow.
//!
//! The session is a remote one (as over TCP): nothing is shared with a
//! client here, so no request can name client memory the worker would map.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use vgpu_proto::{read_request_into, Request};

use super::{exec, nvml, order, registry, snapshot, tables, Peer, Session};
use crate::driver::{entry, Driver};

/// Most request frames one input runs.
const MAX_REQUESTS: usize = 32;

static SESSION: OnceLock<Session> = OnceLock::new();

/// The fuzzing session, made once per process with the simulated device at
/// `sim` (`cuInit` done).
fn session(sim: &Path) -> &'static Session {
    SESSION.get_or_init(|| {
        let driver = Driver::load(sim).expect("the simulated device loads");
        let welcome = snapshot::welcome(&driver);
        let tables = tables::Tables::default();
        Session {
            nvml: nvml::Nvml::new(&welcome.devices),
            device_count: welcome.devices.len(),
            driver,
            handles_gone: tables.gone_counter(),
            tables: Mutex::new(tables),
            order: order::Order::default(),
            contexts_changed: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            rings: false,
            remote: true,
            callbacks: std::sync::Arc::default(),
            output_opened: Mutex::new(false),
            peer: Peer {
                uid: None,
                tenant: None,
                label: "fuzzing session".into(),
            },
            registry: registry::Registry::off(),
            frame_timeout: Duration::from_secs(1),
            control: None,
        }
    })
}

/// Decodes and runs the request frames of `data` on a fresh lane of the
/// session whose driver is the simulated device at `sim`, then releases
/// everything they made. Undecodable bytes end the input, as they end a
/// lane.
pub fn run_requests(sim: &Path, data: &[u8]) {
    let s = session(sim);
    let mut lane = exec::Lane::default();
    let mut req = Request::empty();
    let mut rest = data;
    for _ in 0..MAX_REQUESTS {
        if rest.is_empty() || read_request_into(&mut rest, &mut req).is_err() {
            break;
        }
        let _ = lane.execute(s, &req);
    }
    release(s);
}

/// Frees what the last input made: the session is as new afterwards.
fn release(s: &Session) {
    let mut t = s.tables();
    t.vmm.release_all(&s.driver);
    let ctxs: Vec<_> = t.ctxs.drain().map(|(_, raw)| raw).collect();
    *t = tables::Tables::default();
    drop(t);
    for raw in ctxs {
        if let Ok(destroy) = entry(s.driver.cuCtxDestroy_v2) {
            // SAFETY: a context the driver handed out; destroying a primary
            // one fails harmlessly (it is reset below).
            let _ = unsafe { destroy(tables::as_handle(raw).cast()) };
        }
    }
    let mut count = 0;
    if let (Ok(get), Ok(reset)) = (
        entry(s.driver.cuDeviceGetCount),
        entry(s.driver.cuDevicePrimaryCtxReset_v2),
    ) {
        // SAFETY: the out-pointer is a live local; device ordinals below
        // the count are valid.
        unsafe {
            if get(&mut count) == crate::driver::Status::CUDA_SUCCESS {
                for dev in 0..count {
                    let _ = reset(dev);
                }
            }
        }
    }
}
