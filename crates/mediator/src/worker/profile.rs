//! `VGPU_LANE_PROFILE`: where a lane's time goes, logged when it closes.
//!
//! Set in the mediator's environment, each lane splits its time into:
//! - `read_us`: for posted requests, from asking for the next request
//!   until it may run: waiting for it to arrive (an idle lane's time is
//!   here), taking it off the lane (ring or socket), decoding it, and
//!   waiting for its turn in the session's order;
//! - `posted_us`: running them, of which `launch_us` in `cuLaunchKernel`
//!   requests (the worker's translation, then the driver's own launch);
//! - `read_answered_us` and `answered_us`: the same for requests that are
//!   answered (the second includes the driver call and sending the reply);
//! - `other_us`: the rest of the loop.
//!
//! When the lane has a backlog (a program that launches faster than the
//! driver does), `read_us` is the worker's own cost per request, and
//! `launch_us` over `launches`, set against a native program's time per
//! `cuLaunchKernel`, tells the driver's cost from the worker's
//! (`gpu/launch_probe.sh`). Off, a lane pays one branch per request; on,
//! about four clock reads.

use std::time::{Duration, Instant};

/// One lane's running totals.
#[derive(Debug)]
pub struct Profile {
    started: Instant,
    /// When the part being timed began.
    mark: Instant,
    /// When the request being run started.
    run: Instant,
    read: Duration,
    posted: Duration,
    launches: (u64, Duration),
    read_answered: Duration,
    answered: (u64, Duration),
    other: Duration,
}

impl Profile {
    /// A profile when `VGPU_LANE_PROFILE` is set.
    pub fn from_env() -> Option<Profile> {
        std::env::var_os("VGPU_LANE_PROFILE").map(|_| Profile::new())
    }

    fn new() -> Profile {
        let now = Instant::now();
        Profile {
            started: now,
            mark: now,
            run: now,
            read: Duration::ZERO,
            posted: Duration::ZERO,
            launches: (0, Duration::ZERO),
            read_answered: Duration::ZERO,
            answered: (0, Duration::ZERO),
            other: Duration::ZERO,
        }
    }

    /// The lane is about to read its next request.
    pub fn reading(&mut self) {
        let now = Instant::now();
        self.other += now - self.mark;
        self.mark = now;
    }

    /// A request was read and runs now; `answered`: it is not posted.
    pub fn running(&mut self, answered: bool) {
        let now = Instant::now();
        let read = now - self.mark;
        if answered {
            self.read_answered += read;
        } else {
            self.read += read;
        }
        self.mark = now;
        self.run = now;
    }

    /// The posted request ran; `launch`: it was a `cuLaunchKernel`.
    pub fn ran_posted(&mut self, launch: bool) {
        let now = Instant::now();
        let took = now - self.run;
        self.posted += took;
        if launch {
            self.launches.0 += 1;
            self.launches.1 += took;
        }
        self.mark = now;
    }

    /// The request ran and was answered.
    pub fn answered(&mut self) {
        let now = Instant::now();
        self.answered.0 += 1;
        self.answered.1 += now - self.run;
        self.mark = now;
    }

    /// Logs the totals for a lane that read `requests`, `posted` of them
    /// posted.
    pub fn log(&self, requests: u64, posted: u64) {
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        tracing::info!(
            requests,
            posted,
            launches = self.launches.0,
            answered = self.answered.0,
            total_us = us(self.started.elapsed()),
            read_us = us(self.read),
            posted_us = us(self.posted),
            launch_us = us(self.launches.1),
            read_answered_us = us(self.read_answered),
            answered_us = us(self.answered.1),
            other_us = us(self.other),
            "lane profile"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_of_the_loop_lands_in_its_total() {
        let mut p = Profile::new();
        // Long enough that a busy machine's preemption between two calls stays
        // well below it.
        let nap = Duration::from_millis(20);
        // A posted launch: read, run.
        p.reading();
        std::thread::sleep(nap);
        p.running(false);
        std::thread::sleep(nap);
        p.ran_posted(true);
        // An answered request: read, run.
        p.reading();
        std::thread::sleep(nap);
        p.running(true);
        std::thread::sleep(nap);
        p.answered();
        assert_eq!((p.launches.0, p.answered.0), (1, 1));
        for (part, d) in [
            ("read", p.read),
            ("posted", p.posted),
            ("read_answered", p.read_answered),
            ("answered", p.answered.1),
        ] {
            assert!(d >= nap, "{part}: {d:?} < {nap:?}");
        }
        assert_eq!(
            p.launches.1, p.posted,
            "the only posted request was a launch"
        );
        // Nothing slept between a run's end and the next read.
        assert!(p.other < nap, "{:?}", p.other);
        let sum = p.read + p.posted + p.read_answered + p.answered.1 + p.other;
        assert!(sum <= p.started.elapsed());
    }
}
