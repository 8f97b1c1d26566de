//! What `vgpu bench` measures: every benchmark, the figures (rows) it
//! produces, how its program is run, and the targets.
//!
//! A *benchmark* is one program run per side (native, then vgpu once per
//! transport); it prints one or more *figures*, each a row of the table.
//! `--only` takes benchmark names and the groups in [`GROUPS`].

use std::time::Duration;

/// Which way is better for a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Throughput: more is better.
    Higher,
    /// Latency or time: less is better.
    Lower,
}

impl Better {
    /// `"higher"` or `"lower"`, as written in the JSON report.
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

/// A target from the issue, checked on every transport's row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// vgpu/native must be at least this.
    RatioAtLeast(f64),
    /// vgpu/native must be at most this (a time).
    RatioAtMost(f64),
    /// vgpu may exceed native by at most this, in the figure's unit.
    PlusAtMost(f64),
}

/// One figure: a row of the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    /// The name the program prints, e.g. `memcpy_8b_pinned_h2d`.
    pub name: &'static str,
    /// The unit the program prints, e.g. `us`, `GB/s`.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// The target, if it sets one.
    pub target: Option<Target>,
}

/// Iteration counts: full run, then `--quick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub full: u64,
    pub quick: u64,
}

impl Counts {
    /// The count for this run.
    pub fn get(self, quick: bool) -> u64 {
        if quick {
            self.quick
        } else {
            self.full
        }
    }
}

/// How a benchmark's program is run on one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// `vgpu_bench MODE -t THREADS -b BYTES -n ITERS -w WARMUP` (the C program).
    C {
        mode: &'static str,
        threads: u64,
        bytes: u64,
        iters: Counts,
        warmup: Counts,
    },
    /// Fresh `vgpu_bench first_kernel` processes, timed by `vgpu bench` from
    /// spawn to the line `first_kernel_done`; one unmeasured run first, then
    /// the median of `runs`.
    ColdStart { runs: Counts },
    /// `python3 torch_train.py MODEL --warmup W --steps S`.
    Torch {
        model: &'static str,
        warmup: Counts,
        steps: Counts,
    },
}

/// One benchmark.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Benchmark {
    /// The name `--only` takes.
    pub name: &'static str,
    /// What it measures, in a few words (for `--list` and the docs).
    pub about: &'static str,
    /// The figures it prints.
    pub figures: &'static [Figure],
    /// How its program is run.
    pub program: Program,
    /// Time limit of one side's run: full, then `--quick` (seconds).
    pub timeout_s: Counts,
}

impl Benchmark {
    /// The time limit of one side's run (`--timeout` overrides it).
    pub fn timeout(&self, quick: bool, flag: Option<u64>) -> Duration {
        Duration::from_secs(flag.unwrap_or_else(|| self.timeout_s.get(quick)))
    }

    /// True for the PyTorch benchmarks.
    pub fn is_torch(&self) -> bool {
        matches!(self.program, Program::Torch { .. })
    }

    /// True for the benchmarks run by the C program.
    pub fn needs_c(&self) -> bool {
        !self.is_torch()
    }
}

const fn fig(name: &'static str, unit: &'static str, better: Better) -> Figure {
    Figure {
        name,
        unit,
        better,
        target: None,
    }
}

const fn with(f: Figure, target: Target) -> Figure {
    Figure {
        target: Some(target),
        ..f
    }
}

const fn n(full: u64, quick: u64) -> Counts {
    Counts { full, quick }
}

const C_TIMEOUT: Counts = n(120, 60);

const fn c(mode: &'static str, threads: u64, bytes: u64, iters: Counts, warmup: Counts) -> Program {
    Program::C {
        mode,
        threads,
        bytes,
        iters,
        warmup,
    }
}

use Better::{Higher, Lower};
use Target::{PlusAtMost, RatioAtLeast, RatioAtMost};

/// One thread's launches: a posted launch must cost the application no
/// more than the driver's own (issue 10).
const LAUNCH_1T_TARGET: Target = RatioAtLeast(1.0);
const LAUNCH_TARGET: Target = RatioAtLeast(0.90);

/// Every benchmark, in the order they run.
pub const BENCHMARKS: &[Benchmark] = &[
    Benchmark {
        name: "launch_1t",
        about: "empty-kernel launches per second from 1 thread (one stream, one sync at the end)",
        figures: &[with(
            fig("launch_1t", "launches/s", Higher),
            LAUNCH_1T_TARGET,
        )],
        program: c("launch", 1, 0, n(200_000, 5_000), n(2_000, 100)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "launch_4t",
        about: "empty-kernel launches per second from 4 threads, each on its own stream",
        figures: &[with(fig("launch_4t", "launches/s", Higher), LAUNCH_TARGET)],
        program: c("launch", 4, 0, n(100_000, 2_000), n(2_000, 100)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "launch_sync",
        about: "median latency of one empty-kernel launch plus cuStreamSynchronize",
        figures: &[with(fig("launch_sync", "us", Lower), PlusAtMost(1.0))],
        program: c("launch_sync", 1, 0, n(20_000, 500), n(200, 20)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "graph_100",
        about: "median replay of a captured graph of 100 empty kernels (cuGraphLaunch + \
                cuStreamSynchronize)",
        figures: &[with(fig("graph_100", "us", Lower), RatioAtMost(1.05))],
        program: c("graph", 1, 0, n(2_000, 100), n(50, 5)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "sync_idle",
        about: "median cuStreamSynchronize on an idle stream",
        figures: &[fig("sync_idle", "us", Lower)],
        program: c("sync_idle", 1, 0, n(20_000, 500), n(200, 20)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "memcpy_8b",
        about: "median time of an 8-byte copy, pinned (async + sync) and pageable, both ways",
        figures: &[
            fig("memcpy_8b_pinned_h2d", "us", Lower),
            fig("memcpy_8b_pinned_d2h", "us", Lower),
            fig("memcpy_8b_pageable_h2d", "us", Lower),
            fig("memcpy_8b_pageable_d2h", "us", Lower),
        ],
        program: c("memcpy", 1, 8, n(5_000, 200), n(100, 10)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "memcpy_256mb",
        about: "bandwidth of a 256 MiB copy (median of several), pinned and pageable, both ways",
        figures: &[
            with(
                fig("memcpy_256mb_pinned_h2d", "GB/s", Higher),
                RatioAtLeast(0.95),
            ),
            with(
                fig("memcpy_256mb_pinned_d2h", "GB/s", Higher),
                RatioAtLeast(0.95),
            ),
            with(
                fig("memcpy_256mb_pageable_h2d", "GB/s", Higher),
                RatioAtLeast(1.0),
            ),
            with(
                fig("memcpy_256mb_pageable_d2h", "GB/s", Higher),
                RatioAtLeast(1.0),
            ),
        ],
        program: c("memcpy", 1, 256 << 20, n(10, 2), n(2, 1)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "alloc_4kb",
        about: "median cuMemAlloc and cuMemFree of 4 KiB",
        figures: &[fig("alloc_4kb", "us", Lower), fig("free_4kb", "us", Lower)],
        program: c("alloc", 1, 4 << 10, n(2_000, 100), n(20, 5)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "alloc_1mb",
        about: "median cuMemAlloc and cuMemFree of 1 MiB",
        figures: &[fig("alloc_1mb", "us", Lower), fig("free_1mb", "us", Lower)],
        program: c("alloc", 1, 1 << 20, n(1_000, 50), n(10, 3)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "alloc_1gb",
        about: "median cuMemAlloc and cuMemFree of 1 GiB",
        figures: &[fig("alloc_1gb", "us", Lower), fig("free_1gb", "us", Lower)],
        program: c("alloc", 1, 1 << 30, n(20, 3), n(2, 1)),
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "cold_start",
        about: "process start to first kernel finished, timed around a fresh process (median)",
        figures: &[with(fig("cold_start", "ms", Lower), PlusAtMost(100.0))],
        program: Program::ColdStart { runs: n(5, 2) },
        timeout_s: C_TIMEOUT,
    },
    Benchmark {
        name: "resnet50",
        about: "PyTorch ResNet-50 training, bf16 autocast, batch 64, random data",
        figures: &[with(
            fig("resnet50_train", "images/s", Higher),
            RatioAtLeast(0.97),
        )],
        program: Program::Torch {
            model: "resnet50",
            warmup: n(20, 3),
            steps: n(200, 5),
        },
        timeout_s: n(600, 300),
    },
    Benchmark {
        name: "gpt2",
        about:
            "PyTorch GPT-2-small-sized transformer training, bf16 autocast, batch 8 x 1024 tokens",
        figures: &[with(
            fig("gpt2_train", "tokens/s", Higher),
            RatioAtLeast(0.97),
        )],
        program: Program::Torch {
            model: "gpt2",
            warmup: n(10, 2),
            steps: n(60, 3),
        },
        timeout_s: n(600, 300),
    },
    Benchmark {
        name: "small_transformer",
        about: "PyTorch launch-bound training: a 4-layer, 256-wide transformer, batch 16 x 64 \
                tokens, fp32, Adam; hundreds of short kernels per step",
        figures: &[with(
            fig("small_transformer_train", "tokens/s", Higher),
            RatioAtLeast(1.05),
        )],
        program: Program::Torch {
            model: "small_transformer",
            warmup: n(20, 3),
            steps: n(300, 10),
        },
        timeout_s: n(600, 300),
    },
    Benchmark {
        name: "compile_ro",
        about: "PyTorch torch.compile(mode=\"reduce-overhead\") inference of the small \
                transformer: each step replays one CUDA graph",
        figures: &[with(
            fig("compile_ro_infer", "tokens/s", Higher),
            RatioAtLeast(0.97),
        )],
        program: Program::Torch {
            model: "compile_ro",
            warmup: n(20, 3),
            steps: n(2_000, 20),
        },
        timeout_s: n(600, 300),
    },
];

/// Names `--only` accepts besides benchmark names, and what they stand for.
pub const GROUPS: &[(&str, &[&str])] = &[
    ("launch", &["launch_1t", "launch_4t"]),
    ("memcpy", &["memcpy_8b", "memcpy_256mb"]),
    ("alloc", &["alloc_4kb", "alloc_1mb", "alloc_1gb"]),
    (
        "torch",
        &["resnet50", "gpt2", "small_transformer", "compile_ro"],
    ),
];

/// Checks one `--only` name (a benchmark or a group).
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if BENCHMARKS.iter().any(|b| b.name == name) || GROUPS.iter().any(|(g, _)| *g == name) {
        return Ok(name.to_owned());
    }
    let mut known: Vec<&str> = BENCHMARKS.iter().map(|b| b.name).collect();
    known.extend(GROUPS.iter().map(|(g, _)| *g));
    Err(format!(
        "unknown benchmark {name:?}; known: {}",
        known.join(", ")
    ))
}

/// The benchmarks selected by `--only` (all when empty), in catalog order.
pub fn select(only: &[String]) -> Vec<&'static Benchmark> {
    if only.is_empty() {
        return BENCHMARKS.iter().collect();
    }
    let wanted = |b: &Benchmark| {
        only.iter().any(|o| {
            o == b.name
                || GROUPS
                    .iter()
                    .any(|(g, members)| g == o && members.contains(&b.name))
        })
    };
    BENCHMARKS.iter().filter(|b| wanted(b)).collect()
}

/// The arguments of the C program for `program` (empty for other kinds).
pub fn c_args(program: &Program, quick: bool) -> Vec<String> {
    match *program {
        Program::C {
            mode,
            threads,
            bytes,
            iters,
            warmup,
        } => {
            let mut args = vec![mode.to_owned()];
            if threads > 1 {
                args.extend(["-t".to_owned(), threads.to_string()]);
            }
            if bytes > 0 {
                args.extend(["-b".to_owned(), bytes.to_string()]);
            }
            args.extend([
                "-n".to_owned(),
                iters.get(quick).to_string(),
                "-w".to_owned(),
                warmup.get(quick).to_string(),
            ]);
            args
        }
        Program::ColdStart { .. } => vec!["first_kernel".to_owned()],
        Program::Torch { .. } => Vec::new(),
    }
}

/// The text of `vgpu bench --list`.
pub fn list() -> String {
    let mut s = String::from("benchmarks (run in this order; --only takes these names):\n");
    for b in BENCHMARKS {
        s.push_str(&format!("  {:<13} {}\n", b.name, b.about));
        for f in b.figures {
            s.push_str(&format!("  {:<13}   -> {} ({})\n", "", f.name, f.unit));
        }
    }
    s.push_str("groups:\n");
    for (g, members) in GROUPS {
        s.push_str(&format!("  {:<13} {}\n", g, members.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_groups_name_real_benchmarks() {
        let mut names: Vec<&str> = BENCHMARKS.iter().map(|b| b.name).collect();
        names.extend(GROUPS.iter().map(|(g, _)| *g));
        let mut figures: Vec<&str> = BENCHMARKS
            .iter()
            .flat_map(|b| b.figures.iter().map(|f| f.name))
            .collect();
        let (n, f) = (names.len(), figures.len());
        names.sort_unstable();
        names.dedup();
        figures.sort_unstable();
        figures.dedup();
        assert_eq!((names.len(), figures.len()), (n, f));
        for (_, members) in GROUPS {
            for m in *members {
                assert!(BENCHMARKS.iter().any(|b| b.name == *m), "{m}");
            }
        }
    }

    #[test]
    fn selection_keeps_catalog_order_and_expands_groups() {
        let only = |v: &[&str]| -> Vec<&str> {
            let v: Vec<String> = v.iter().map(|s| (*s).to_owned()).collect();
            select(&v).iter().map(|b| b.name).collect()
        };
        assert_eq!(only(&[]).len(), BENCHMARKS.len());
        assert_eq!(
            only(&["memcpy_8b", "launch_sync"]),
            ["launch_sync", "memcpy_8b"]
        );
        assert_eq!(
            only(&["alloc", "launch"]),
            [
                "launch_1t",
                "launch_4t",
                "alloc_4kb",
                "alloc_1mb",
                "alloc_1gb"
            ]
        );
        assert!(check_name("nope").is_err_and(|e| e.contains("launch_sync")));
        assert_eq!(check_name(" torch ").as_deref(), Ok("torch"));
    }

    #[test]
    fn c_arguments_follow_quick() {
        let b = BENCHMARKS
            .iter()
            .find(|b| b.name == "launch_4t")
            .map(|b| b.program);
        let b = b.as_ref().map(|p| c_args(p, true));
        assert_eq!(
            b.as_deref(),
            Some(&["launch", "-t", "4", "-n", "2000", "-w", "100"].map(String::from)[..])
        );
        let m = BENCHMARKS
            .iter()
            .find(|b| b.name == "memcpy_256mb")
            .map(|b| c_args(&b.program, false));
        assert_eq!(
            m.as_deref(),
            Some(&["memcpy", "-b", "268435456", "-n", "10", "-w", "2"].map(String::from)[..])
        );
    }
}
