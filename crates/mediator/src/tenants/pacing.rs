//! Compute weights: busy tenants share launches in proportion to their
//! `weight`, paced in the workers.
//!
//! Each tenant has a virtual clock in the quota table ([`super::quota`]):
//! every launch of the tenant (a kernel, a grid, a graph) advances it by
//! [`COST`] / weight. Before a worker runs a launch, it waits while its
//! tenant's clock is more than [`SLACK`] ahead of the slowest clock among
//! the other busy tenants (those that launched in the last [`BUSY`]). So
//! with weights 1 and 3, the second tenant runs three launches for each of
//! the first's while both are busy; a tenant alone is never slowed; and a
//! tenant that comes back from idle starts at the busy tenants' clock
//! instead of spending credit it saved while idle.
//!
//! Launches are counted, not timed: tenants whose kernels differ in length
//! share launches by weight, not GPU time. A launch waits at most
//! [`MAX_WAIT`], so a stalled peer cannot stop a tenant.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use vgpu_proto::Op;

/// Clock ticks one launch costs a tenant of weight 1.
pub const COST: u64 = 1_000_000;
/// How far ahead of the slowest busy tenant a tenant may run: 8 launches
/// of weight 1.
pub const SLACK: u64 = 8 * COST;
/// A tenant that launched within this long is busy.
pub const BUSY: Duration = Duration::from_millis(100);
/// The longest one launch waits.
pub const MAX_WAIT: Duration = Duration::from_millis(50);
/// How long a waiting launch sleeps between looks.
const NAP: Duration = Duration::from_micros(100);

/// Whether `op` launches work on the GPU.
pub fn is_launch(op: Op) -> bool {
    matches!(
        op,
        Op::LaunchKernel
            | Op::LaunchKernelEx
            | Op::Launch
            | Op::LaunchGrid
            | Op::LaunchGridAsync
            | Op::GraphLaunch
            | Op::GraphLaunch_ptsz
            | Op::LaunchMultiDevice
    )
}

fn now_ms() -> u64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// The tenants' clocks and when each last launched (milliseconds since the
/// Unix epoch), by tenant index.
pub struct Clocks<'a> {
    pub clock: &'a [AtomicU64],
    pub busy_until: &'a [AtomicU64],
}

impl Clocks<'_> {
    /// The slowest clock among the busy tenants other than `tenant`.
    fn slowest_other(&self, tenant: usize, now: u64) -> Option<u64> {
        self.clock
            .iter()
            .zip(self.busy_until)
            .enumerate()
            .filter(|&(i, (_, until))| i != tenant && until.load(SeqCst) > now)
            .map(|(_, (clock, _))| clock.load(SeqCst))
            .min()
    }

    /// Paces one launch of `tenant`, of weight `weight`: waits while it is
    /// ahead, then charges the launch. Returns how long it waited.
    pub fn pace(&self, tenant: usize, weight: u32) -> Duration {
        let (Some(clock), Some(until)) = (self.clock.get(tenant), self.busy_until.get(tenant))
        else {
            return Duration::ZERO;
        };
        let busy_ms = u64::try_from(BUSY.as_millis()).unwrap_or(100);
        let now = now_ms();
        let was_idle = until.swap(now + busy_ms, SeqCst) <= now;
        if was_idle {
            if let Some(slowest) = self.slowest_other(tenant, now) {
                clock.fetch_max(slowest, SeqCst);
            }
        }
        let start = Instant::now();
        loop {
            let now = now_ms();
            let ahead = self
                .slowest_other(tenant, now)
                .is_some_and(|slowest| clock.load(SeqCst) > slowest.saturating_add(SLACK));
            if !ahead || start.elapsed() >= MAX_WAIT {
                break;
            }
            until.store(now + busy_ms, SeqCst);
            std::thread::sleep(NAP);
        }
        clock.fetch_add(COST / u64::from(weight.max(1)), SeqCst);
        start.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clocks(n: usize) -> (Vec<AtomicU64>, Vec<AtomicU64>) {
        (
            (0..n).map(|_| AtomicU64::new(0)).collect(),
            (0..n).map(|_| AtomicU64::new(0)).collect(),
        )
    }

    #[test]
    fn a_tenant_alone_never_waits_and_a_busy_pair_shares_by_weight() {
        let (clock, busy_until) = clocks(2);
        let c = Clocks {
            clock: &clock,
            busy_until: &busy_until,
        };
        for _ in 0..100 {
            assert!(c.pace(0, 1) < MAX_WAIT, "alone");
        }
        // Tenant 1 (weight 3) comes in: it starts at tenant 0's clock.
        c.pace(1, 3);
        assert!(clock[1].load(SeqCst) >= 100 * COST);
        // Interleave: tenant 0 waits once it is SLACK ahead.
        let (mut a, mut b) = (0u32, 0u32);
        for _ in 0..400 {
            let ahead0 = clock[0].load(SeqCst) > clock[1].load(SeqCst) + SLACK;
            if ahead0 {
                c.pace(1, 3);
                b += 1;
            } else {
                c.pace(0, 1);
                a += 1;
            }
        }
        let ratio = f64::from(b) / f64::from(a);
        assert!((2.5..=3.5).contains(&ratio), "{b} : {a}");
        // A launch of a tenant far ahead waits, but not past MAX_WAIT.
        clock[0].store(clock[1].load(SeqCst) + 100 * SLACK, SeqCst);
        let waited = c.pace(0, 1);
        assert!(waited >= MAX_WAIT && waited < MAX_WAIT * 4, "{waited:?}");
        assert!(is_launch(Op::LaunchKernel) && !is_launch(Op::MemAlloc));
    }
}
