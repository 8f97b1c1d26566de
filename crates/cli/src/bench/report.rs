//! The results of `vgpu bench`: one row per figure and transport, the ratio
//! vgpu/native, the targets, the printed table and the JSON report.

use serde_json::{json, Value};

use super::catalog::{Figure, Target};

/// The result of one figure on one side.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Measured, in the figure's unit.
    Value(f64),
    /// The program failed, timed out or printed no value; the reason.
    Fail(String),
    /// Not run on purpose (e.g. PyTorch missing); the reason.
    Skip(String),
}

impl Outcome {
    /// The value, if measured.
    pub fn value(&self) -> Option<f64> {
        match self {
            Outcome::Value(v) => Some(*v),
            _ => None,
        }
    }

    fn status(&self) -> &'static str {
        match self {
            Outcome::Value(_) => "ok",
            Outcome::Fail(_) => "fail",
            Outcome::Skip(_) => "skip",
        }
    }

    fn reason(&self) -> Option<&str> {
        match self {
            Outcome::Value(_) => None,
            Outcome::Fail(r) | Outcome::Skip(r) => Some(r),
        }
    }

    fn cell(&self) -> String {
        match self {
            Outcome::Value(v) => format_value(*v),
            Outcome::Fail(_) => "FAIL".into(),
            Outcome::Skip(_) => "SKIP".into(),
        }
    }
}

/// One row of the table: a figure on one transport, with the native value
/// measured in the same run.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The benchmark that produced it (what `--only` takes).
    pub benchmark: String,
    /// The figure.
    pub figure: Figure,
    /// The `VGPU_TRANSPORT` value of the vgpu side.
    pub transport: String,
    /// The vgpu side.
    pub vgpu: Outcome,
    /// The native side.
    pub native: Outcome,
    /// Each round's vgpu value, in the order run (the figure is their median).
    pub vgpu_runs: Vec<f64>,
    /// Each round's native value, in the order run.
    pub native_runs: Vec<f64>,
}

/// One side's outcome for each figure of a benchmark run over several rounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rounds {
    /// Per figure: the median of the rounds' values, or the first failure
    /// (any failed round fails the figure), or the skip.
    pub outcomes: Vec<Outcome>,
    /// Per figure: every round's value, in order.
    pub values: Vec<Vec<f64>>,
}

impl Rounds {
    /// Combines `rounds` (each a run's outcome per figure) for `figures`
    /// figures; a round with too few outcomes fails the missing figures.
    pub fn of(rounds: &[Vec<Outcome>], figures: usize) -> Rounds {
        let mut out = Rounds::default();
        for i in 0..figures {
            let mut values = Vec::new();
            let mut first_bad = None;
            for r in rounds {
                match r.get(i) {
                    Some(Outcome::Value(v)) => values.push(*v),
                    Some(o @ Outcome::Fail(_)) => {
                        first_bad = Some(o.clone());
                        break;
                    }
                    Some(o @ Outcome::Skip(_)) => {
                        first_bad.get_or_insert_with(|| o.clone());
                    }
                    None => {
                        first_bad = Some(Outcome::Fail("no result".into()));
                        break;
                    }
                }
            }
            let outcome = match first_bad {
                Some(o) => o,
                None if values.is_empty() => Outcome::Fail("no result".into()),
                None => Outcome::Value(super::median(&mut values.clone())),
            };
            out.outcomes.push(outcome);
            out.values.push(values);
        }
        out
    }

    /// Whether the last round failed or skipped any figure: later rounds of
    /// this side would only repeat it.
    pub fn settled(rounds: &[Vec<Outcome>]) -> bool {
        rounds
            .last()
            .is_some_and(|r| r.iter().any(|o| !matches!(o, Outcome::Value(_))))
    }
}

/// Whether a row met its target.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Met.
    Met,
    /// Missed; by how much, in words.
    Missed(String),
}

impl Row {
    /// vgpu/native, when both were measured and native is not zero.
    pub fn ratio(&self) -> Option<f64> {
        ratio(self.vgpu.value()?, self.native.value()?)
    }

    /// True when either side failed.
    pub fn failed(&self) -> bool {
        matches!(self.vgpu, Outcome::Fail(_)) || matches!(self.native, Outcome::Fail(_))
    }

    /// True when the row was skipped on purpose and nothing failed.
    pub fn skipped(&self) -> bool {
        !self.failed()
            && (matches!(self.vgpu, Outcome::Skip(_)) || matches!(self.native, Outcome::Skip(_)))
    }

    /// The target's verdict, when the figure has a target and both sides ran.
    pub fn verdict(&self) -> Option<Verdict> {
        let target = self.figure.target?;
        let (v, n) = (self.vgpu.value()?, self.native.value()?);
        Some(match target {
            Target::RatioAtLeast(min) => {
                let r = ratio(v, n)?;
                if r >= min {
                    Verdict::Met
                } else {
                    Verdict::Missed(format!("{:.3} below", min - r))
                }
            }
            Target::RatioAtMost(max) => {
                let r = ratio(v, n)?;
                if r <= max {
                    Verdict::Met
                } else {
                    Verdict::Missed(format!("{:.3} above", r - max))
                }
            }
            Target::PlusAtMost(max) => {
                let over = v - n - max;
                if over <= 0.0 {
                    Verdict::Met
                } else {
                    Verdict::Missed(format!("{} {} over", format_value(over), self.figure.unit))
                }
            }
        })
    }

    /// The last column: FAIL/SKIP reasons, else the target and its verdict.
    pub fn note(&self) -> String {
        let mut parts = Vec::new();
        for (side, o) in [("native", &self.native), ("vgpu", &self.vgpu)] {
            if let Outcome::Fail(r) = o {
                parts.push(format!("FAIL {side}: {r}"));
            }
        }
        if !parts.is_empty() {
            return parts.join("; ");
        }
        for o in [&self.native, &self.vgpu] {
            if let Outcome::Skip(r) = o {
                return format!("SKIP {r}");
            }
        }
        match (self.figure.target, self.verdict()) {
            (Some(t), Some(Verdict::Met)) => format!("{}: met", target_text(t, self.figure.unit)),
            (Some(t), Some(Verdict::Missed(by))) => {
                format!("{}: MISSED ({by})", target_text(t, self.figure.unit))
            }
            (Some(t), None) => target_text(t, self.figure.unit),
            (None, _) => String::new(),
        }
    }
}

/// vgpu/native, or None when native is zero or either is not finite.
pub fn ratio(vgpu: f64, native: f64) -> Option<f64> {
    let r = vgpu / native;
    (native != 0.0 && r.is_finite()).then_some(r)
}

/// A target in words, e.g. `target >= 0.90x native`.
pub fn target_text(t: Target, unit: &str) -> String {
    match t {
        Target::RatioAtLeast(r) => format!("target >= {r:.2}x native"),
        Target::RatioAtMost(r) => format!("target <= {r:.2}x native"),
        Target::PlusAtMost(d) => format!("target <= native + {} {unit}", format_value(d)),
    }
}

/// A value with about four significant digits and no exponent.
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The column headers of the table.
pub const HEADERS: [&str; 7] = [
    "figure",
    "transport",
    "vgpu",
    "native",
    "vgpu/native",
    "unit",
    "target / note",
];

/// The table: a header line, a rule, then one line per row. Columns are
/// separated by at least two spaces; numbers are right-aligned.
pub fn table(rows: &[Row]) -> String {
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.name.to_owned(),
                r.transport.clone(),
                r.vgpu.cell(),
                r.native.cell(),
                r.ratio().map_or_else(|| "-".into(), |x| format!("{x:.3}")),
                r.figure.unit.to_owned(),
                r.note(),
            ]
        })
        .collect();
    let mut width = HEADERS.map(str::len);
    for c in &cells {
        for (w, s) in width.iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    let line = |c: &[String; 7]| {
        let mut s = String::new();
        for (i, (cell, w)) in c.iter().zip(width).enumerate() {
            let right = (2..=4).contains(&i);
            match (i, right) {
                (6, _) => s.push_str(cell),
                (_, true) => s.push_str(&format!("{cell:>w$}  ")),
                (_, false) => s.push_str(&format!("{cell:<w$}  ")),
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(&HEADERS.map(String::from));
    let rule: usize = width[..6].iter().map(|w| w + 2).sum::<usize>() + HEADERS[6].len();
    out.push_str(&"-".repeat(rule));
    out.push('\n');
    for c in &cells {
        out.push_str(&line(c));
    }
    out
}

fn outcome_json(o: &Outcome) -> Value {
    o.value().map_or(Value::Null, |v| json!(v))
}

/// One row of the JSON report.
pub fn row_json(r: &Row) -> Value {
    let target = r.figure.target.map(|t| match t {
        Target::RatioAtLeast(x) => json!({"kind": "ratio_at_least", "value": x}),
        Target::RatioAtMost(x) => json!({"kind": "ratio_at_most", "value": x}),
        Target::PlusAtMost(x) => json!({"kind": "native_plus_at_most", "value": x}),
    });
    json!({
        "figure": r.figure.name,
        "benchmark": r.benchmark,
        "transport": r.transport,
        "unit": r.figure.unit,
        "better": r.figure.better.as_str(),
        "vgpu": outcome_json(&r.vgpu),
        "native": outcome_json(&r.native),
        "vgpu_runs": r.vgpu_runs,
        "native_runs": r.native_runs,
        "ratio": r.ratio(),
        "vgpu_status": r.vgpu.status(),
        "native_status": r.native.status(),
        "vgpu_reason": r.vgpu.reason(),
        "native_reason": r.native.reason(),
        "target": target,
        "target_met": r.verdict().map(|v| v == Verdict::Met),
    })
}

/// What the report says about the run besides the rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunInfo {
    /// `--quick` was given.
    pub quick: bool,
    /// The transports measured.
    pub transports: Vec<String>,
    /// Rounds of each C benchmark (`--rounds`).
    pub rounds: u64,
    /// Rounds of each PyTorch model (`--model-rounds`).
    pub model_rounds: u64,
    /// The native side: driver choice, device, library, CUDA version.
    pub native: SideInfo,
    /// The vgpu side: the mediator's driver, device, library, CUDA version.
    pub vgpu: SideInfo,
    /// Warnings printed by the programs.
    pub warnings: Vec<String>,
}

/// What one side ran on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SideInfo {
    /// How the driver was chosen, in words.
    pub driver: String,
    /// The device name the program saw.
    pub device: Option<String>,
    /// The libcuda the program mapped.
    pub library: Option<String>,
    /// The CUDA version the driver reported.
    pub cuda_version: Option<String>,
}

fn side_json(s: &SideInfo) -> Value {
    json!({
        "driver": s.driver,
        "device": s.device,
        "library": s.library,
        "cuda_version": s.cuda_version,
    })
}

/// The whole JSON report.
pub fn report_json(info: &RunInfo, rows: &[Row]) -> Value {
    json!({
        "vgpu_version": env!("CARGO_PKG_VERSION"),
        "quick": info.quick,
        "transports": info.transports,
        "rounds": info.rounds,
        "model_rounds": info.model_rounds,
        "native": side_json(&info.native),
        "vgpu": side_json(&info.vgpu),
        "warnings": info.warnings,
        "failed": rows.iter().filter(|r| r.failed()).count(),
        "figures": rows.iter().map(row_json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::catalog::{Better, Figure, Target};

    const LAT: Figure = Figure {
        name: "launch_sync",
        unit: "us",
        better: Better::Lower,
        target: Some(Target::PlusAtMost(1.5)),
    };
    const THR: Figure = Figure {
        name: "launch_1t",
        unit: "launches/s",
        better: Better::Higher,
        target: Some(Target::RatioAtLeast(0.9)),
    };
    const PLAIN: Figure = Figure {
        name: "sync_idle",
        unit: "us",
        better: Better::Lower,
        target: None,
    };

    fn row(figure: Figure, vgpu: Outcome, native: Outcome) -> Row {
        Row {
            benchmark: figure.name.into(),
            figure,
            transport: "rings".into(),
            vgpu,
            native,
            vgpu_runs: Vec::new(),
            native_runs: Vec::new(),
        }
    }

    #[test]
    fn rounds_give_the_median_or_the_first_failure() {
        let v = Outcome::Value;
        let fail = |r: &str| Outcome::Fail(r.into());
        let skip = |r: &str| Outcome::Skip(r.into());
        let runs = [
            vec![v(3.0), v(10.0)],
            vec![v(1.0), fail("timed out")],
            vec![v(2.0), fail("crashed")],
        ];
        let r = Rounds::of(&runs, 2);
        assert_eq!(r.outcomes, vec![v(2.0), fail("timed out")]);
        assert_eq!(r.values, vec![vec![3.0, 1.0, 2.0], vec![10.0]]);
        assert_eq!(
            Rounds::of(&runs[..2], 1).outcomes,
            vec![v(2.0)],
            "even: the mean of the middle two"
        );
        assert_eq!(
            Rounds::of(&[vec![skip("no torch")]], 1).outcomes,
            vec![skip("no torch")]
        );
        assert_eq!(
            Rounds::of(&[vec![v(1.0)]], 2).outcomes[1],
            fail("no result")
        );
        assert_eq!(Rounds::of(&[], 1).outcomes, vec![fail("no result")]);
        assert!(Rounds::settled(&runs[..2]));
        assert!(!Rounds::settled(&runs[..1]));
        assert!(!Rounds::settled(&[]));
    }

    #[test]
    fn values_keep_about_four_digits() {
        assert_eq!(format_value(384_123.4), "384123");
        assert_eq!(format_value(255.55), "255.6");
        assert_eq!(format_value(55.456), "55.46");
        assert_eq!(format_value(7.6), "7.60");
        assert_eq!(format_value(0.2345), "0.234");
        assert_eq!(format_value(-2.5), "-2.50");
    }

    #[test]
    fn ratio_is_vgpu_over_native() {
        assert_eq!(ratio(9.0, 10.0), Some(0.9));
        assert_eq!(ratio(1.0, 0.0), None);
        let r = row(THR, Outcome::Value(350.0), Outcome::Value(400.0));
        assert_eq!(r.ratio(), Some(0.875));
        let r = row(THR, Outcome::Fail("x".into()), Outcome::Value(400.0));
        assert_eq!(r.ratio(), None);
    }

    #[test]
    fn targets_by_ratio_and_by_difference() {
        let met = row(THR, Outcome::Value(360.0), Outcome::Value(400.0));
        assert_eq!(met.verdict(), Some(Verdict::Met));
        assert_eq!(met.note(), "target >= 0.90x native: met");
        let missed = row(THR, Outcome::Value(200.0), Outcome::Value(400.0));
        assert_eq!(
            missed.note(),
            "target >= 0.90x native: MISSED (0.400 below)"
        );
        let lat = row(LAT, Outcome::Value(9.0), Outcome::Value(7.6));
        assert_eq!(lat.note(), "target <= native + 1.50 us: met");
        let lat = row(LAT, Outcome::Value(10.0), Outcome::Value(7.6));
        assert_eq!(lat.verdict(), Some(Verdict::Missed("0.900 us over".into())));
        let graph = Figure {
            target: Some(Target::RatioAtMost(1.05)),
            ..LAT
        };
        let g = row(graph, Outcome::Value(10.4), Outcome::Value(10.0));
        assert_eq!(g.note(), "target <= 1.05x native: met");
        let g = row(graph, Outcome::Value(11.0), Outcome::Value(10.0));
        assert_eq!(g.verdict(), Some(Verdict::Missed("0.050 above".into())));
        assert_eq!(
            row(PLAIN, Outcome::Value(1.0), Outcome::Value(1.0)).note(),
            ""
        );
    }

    #[test]
    fn failures_and_skips_name_their_side_and_reason() {
        let r = row(
            PLAIN,
            Outcome::Fail("timed out after 60 s".into()),
            Outcome::Value(0.2),
        );
        assert!(r.failed() && !r.skipped());
        assert_eq!(r.note(), "FAIL vgpu: timed out after 60 s");
        let both = row(PLAIN, Outcome::Fail("a".into()), Outcome::Fail("b".into()));
        assert_eq!(both.note(), "FAIL native: b; FAIL vgpu: a");
        let s = row(
            THR,
            Outcome::Skip("no torch".into()),
            Outcome::Skip("no torch".into()),
        );
        assert!(s.skipped() && !s.failed());
        assert_eq!(s.note(), "SKIP no torch");
    }

    #[test]
    fn table_aligns_columns_and_marks_failures() {
        let rows = [
            row(THR, Outcome::Value(350_000.0), Outcome::Value(384_000.0)),
            row(PLAIN, Outcome::Fail("boom".into()), Outcome::Value(0.2)),
        ];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("figure"));
        assert!(lines[0].ends_with("target / note"));
        assert!(lines[1].chars().all(|c| c == '-'));
        assert_eq!(lines[1].len(), lines[0].len());
        let w: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            w[..6],
            [
                "launch_1t",
                "rings",
                "350000",
                "384000",
                "0.911",
                "launches/s"
            ]
        );
        let w: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(w[..6], ["sync_idle", "rings", "FAIL", "0.200", "-", "us"]);
        assert!(lines[3].ends_with("FAIL vgpu: boom"));
        // Right-aligned numbers end in the same column.
        let end = |l: &str, word: &str| l.find(word).map(|i| i + word.len());
        assert_eq!(end(lines[2], "384000"), end(lines[3], "0.200"));
    }

    #[test]
    fn json_has_every_field() {
        let info = RunInfo {
            quick: true,
            transports: vec!["rings".into()],
            ..RunInfo::default()
        };
        let rows = [
            row(LAT, Outcome::Value(9.0), Outcome::Value(7.5)),
            row(
                PLAIN,
                Outcome::Fail("boom".into()),
                Outcome::Skip("x".into()),
            ),
        ];
        let v = report_json(&info, &rows);
        assert_eq!(v["quick"], true);
        assert_eq!(v["failed"], 1);
        let f = &v["figures"][0];
        assert_eq!(f["figure"], "launch_sync");
        assert_eq!(f["vgpu"], 9.0);
        assert_eq!(f["native"], 7.5);
        assert_eq!(f["ratio"], 1.2);
        assert_eq!(f["better"], "lower");
        assert_eq!(f["target"]["kind"], "native_plus_at_most");
        assert_eq!(f["target_met"], true);
        let g = &v["figures"][1];
        assert_eq!(g["vgpu"], Value::Null);
        assert_eq!(g["vgpu_status"], "fail");
        assert_eq!(g["vgpu_reason"], "boom");
        assert_eq!(g["native_status"], "skip");
        assert_eq!(g["target"], Value::Null);
        assert_eq!(g["target_met"], Value::Null);
    }
}
