//! Figures: one measured quantity of one scenario with its parameters, the
//! values of the repetitions, the upstream C++ figure where bench/README.md has one
//! and the project's target where there is one. Printed as one JSON object per
//! line as soon as a scenario finishes, and as a table at the end.

use crate::json::ObjWriter;

/// Whether a larger value is better (throughput) or worse (time, bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// A performance target the project set itself (bench/README.md), and how
/// the repetitions of a figure are judged against it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// The median of the repetitions at least this.
    AtLeast(f64),
    /// The median of the repetitions at most this.
    AtMost(f64),
    /// A bounded maximum (a longest lock or index hold, a p99 latency):
    /// every repetition at most this, so it is judged on the worst
    /// (largest) one; one long hold in three runs is a missed target, not
    /// an outlier. [`Figure::target`] makes an `AtMost` of a figure whose
    /// name says it is a maximum ([`is_maximum`]) this kind.
    Max(f64),
}

impl Target {
    /// Whether the finite repetitions `values` meet the target: their
    /// median, or for [`Target::Max`] their worst; `None` without any.
    pub fn met(self, values: &[f64]) -> Option<bool> {
        Some(match self {
            Target::AtLeast(t) => median(values)? >= t,
            Target::AtMost(t) => median(values)? <= t,
            Target::Max(t) => worst_of(values)? <= t,
        })
    }

    /// Whether it is judged on the worst repetition.
    pub fn bounded_max(self) -> bool {
        matches!(self, Target::Max(_))
    }

    pub fn label(self) -> String {
        match self {
            Target::AtLeast(t) => format!(">= {}", human(t)),
            Target::AtMost(t) => format!("<= {}", human(t)),
            Target::Max(t) => format!("<= {} (worst rep)", human(t)),
        }
    }
}

/// The largest of `values` (a bounded maximum's worst repetition).
fn worst_of(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::max)
}

/// Whether a figure named `name` is a maximum over its run, so that its
/// upper-bound target bounds every repetition ([`Target::Max`]): a name
/// with the word `hold`, `longest` or `max`, or one starting with `p99`
/// (`longest_index_hold`, `eviction_longest_shard_lock_hold`,
/// `putend_p99_during_wave`). Words are split at anything but a letter or
/// a digit.
pub fn is_maximum(name: &str) -> bool {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| matches!(w, "hold" | "longest" | "max") || w.starts_with("p99"))
}

/// "10^7" for 10 000 000, the number itself when it is no power of ten.
pub fn power_of_ten(n: u64) -> String {
    let mut k = 0;
    let mut x = n;
    while x >= 10 && x % 10 == 0 {
        x /= 10;
        k += 1;
    }
    if x == 1 && k > 0 {
        format!("10^{k}")
    } else {
        n.to_string()
    }
}

/// The upstream figure: median, and the min–max text of bench/README.md.
#[derive(Debug, Clone, Copy)]
pub struct Cpp {
    pub median: f64,
    pub range: &'static str,
}

#[derive(Debug, Clone)]
pub struct Figure {
    pub scenario: String,
    pub name: String,
    pub params: Vec<(String, String)>,
    pub unit: &'static str,
    pub better: Better,
    pub values: Vec<f64>,
    pub cpp: Option<Cpp>,
    pub target: Option<Target>,
    pub note: Option<String>,
    /// The N the target is stated at and the N this figure was measured
    /// at ([`target_stated_at`](Self::target_stated_at)).
    pub target_n: Option<(u64, u64)>,
    /// Repetitions of a case this figure reads that failed (a child that
    /// exited non-zero, a failed assertion, unreadable output), each
    /// with its reason: the figure is failed and misses its target.
    pub failures: Vec<String>,
}

impl Figure {
    pub fn new(
        scenario: &str,
        name: &str,
        params: &[(&str, String)],
        unit: &'static str,
        better: Better,
        values: Vec<f64>,
    ) -> Self {
        Figure {
            scenario: scenario.to_owned(),
            name: name.to_owned(),
            params: params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            unit,
            better,
            values,
            cpp: None,
            target: None,
            note: None,
            target_n: None,
            failures: Vec::new(),
        }
    }

    pub fn cpp(mut self, cpp: Option<Cpp>) -> Self {
        self.cpp = cpp;
        self
    }

    /// Sets the target. An `AtMost` of a figure that is a maximum over its
    /// run ([`is_maximum`]: longest holds, p99 latencies) becomes a
    /// bounded maximum ([`Target::Max`]), judged on the worst repetition.
    pub fn target(mut self, t: Target) -> Self {
        self.target = Some(match t {
            Target::AtMost(x) if is_maximum(&self.name) => Target::Max(x),
            t => t,
        });
        self
    }

    /// Says that the target is stated at `stated_n` objects (bench/README.md's
    /// targets table: "at 10^7") and that this figure was measured at
    /// `run_n`. Below `stated_n` the figure is not judged: `met` is null and
    /// the note says "target at 10^7". At or above it, nothing changes.
    /// Call it beside [`target`](Self::target), in either order.
    pub fn target_stated_at(mut self, stated_n: u64, run_n: u64) -> Self {
        self.target_n = Some((stated_n, run_n));
        self
    }

    /// Marks the figure failed: a repetition it reads failed, for `why`.
    pub fn fail(&mut self, why: impl Into<String>) {
        self.failures.push(why.into());
    }

    /// Whether a repetition it reads failed.
    pub fn failed(&self) -> bool {
        !self.failures.is_empty()
    }

    /// Whether the target is stated at a larger N than the run's.
    fn below_stated_n(&self) -> bool {
        self.target.is_some() && self.target_n.is_some_and(|(stated, run)| run < stated)
    }

    /// The note as printed: the failures first, then whether the target is
    /// judged at this N, then the scenario's note.
    pub fn full_note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.failed() {
            parts.push(format!("FAILED: {}", self.failures.join("; ")));
        }
        if let (true, Some((stated, _))) = (self.below_stated_n(), self.target_n) {
            parts.push(format!("target at {}", power_of_ten(stated)));
        }
        parts.extend(self.note.clone());
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    pub fn note(mut self, n: impl Into<String>) -> Self {
        self.note = Some(n.into());
        self
    }

    fn finite(&self) -> Vec<f64> {
        self.values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect()
    }

    pub fn median(&self) -> Option<f64> {
        median(&self.finite())
    }

    pub fn min(&self) -> Option<f64> {
        self.finite().into_iter().reduce(f64::min)
    }

    pub fn max(&self) -> Option<f64> {
        self.finite().into_iter().reduce(f64::max)
    }

    /// ours / C++.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.median()? / self.cpp?.median)
    }

    /// How many times better than C++ (> 1: ours is better).
    pub fn advantage(&self) -> Option<f64> {
        let r = self.ratio()?;
        Some(match self.better {
            Better::Higher => r,
            Better::Lower => 1.0 / r,
        })
    }

    /// The worst repetition of a bounded maximum (the largest), what its
    /// target is judged on; printed as `worst` beside the median.
    pub fn worst(&self) -> Option<f64> {
        worst_of(&self.finite())
    }

    /// Whether the target is met: `None` without a target, without a
    /// repetition to judge, or when the target is stated at a larger N
    /// than the run's; `false` whenever a repetition failed; else the
    /// median, or for a bounded maximum the worst repetition, against it.
    pub fn met(&self) -> Option<bool> {
        let t = self.target?;
        if self.failed() {
            return Some(false);
        }
        if self.below_stated_n() {
            return None;
        }
        t.met(&self.finite())
    }

    pub fn to_json(&self) -> String {
        let mut params = ObjWriter::new();
        for (k, v) in &self.params {
            match v.parse::<f64>() {
                Ok(x) if !v.is_empty() => params.num(k, x),
                _ => params.str(k, v),
            };
        }
        let mut w = ObjWriter::new();
        w.str("scenario", &self.scenario)
            .str("figure", &self.name)
            .raw("params", &params.finish())
            .str("unit", self.unit)
            .opt_num("median", self.median());
        if self.target.is_some_and(Target::bounded_max) {
            w.opt_num("worst", self.worst());
        }
        w.opt_num("min", self.min())
            .opt_num("max", self.max())
            .num("reps", self.values.len() as f64)
            .str(
                "better",
                match self.better {
                    Better::Higher => "higher",
                    Better::Lower => "lower",
                },
            );
        if let Some(c) = self.cpp {
            w.num("cpp_median", c.median)
                .str("cpp_range", c.range)
                .opt_num("ratio", self.ratio())
                .opt_num("advantage", self.advantage());
        }
        if let Some(t) = self.target {
            w.str("target", &t.label());
            match self.met() {
                Some(m) => w.bool("met", m),
                None => w.raw("met", "null"),
            };
        }
        if self.failed() {
            w.bool("failed", true);
        }
        if let Some(n) = self.full_note() {
            w.str("note", &n);
        }
        w.finish()
    }
}

pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// 1234567 → "1.23 M", 0.000123 → "123 µ"-style compact numbers.
pub fn human(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    let (v, suffix) = if a >= 1e9 {
        (x / 1e9, " G")
    } else if a >= 1e6 {
        (x / 1e6, " M")
    } else if a >= 1e4 {
        (x / 1e3, " k")
    } else {
        (x, "")
    };
    let digits = if v.abs() >= 100.0 || v == v.trunc() {
        0
    } else if v.abs() >= 10.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$}{suffix}")
}

fn opt(x: Option<f64>) -> String {
    x.map(human).unwrap_or_else(|| "-".into())
}

/// The human-readable table of every figure.
pub fn table(figures: &[Figure], notes: &[String]) -> String {
    let header = [
        "scenario", "figure", "params", "median", "min..max", "unit", "C++", "x better", "target",
        "met",
    ];
    let mut rows: Vec<[String; 10]> = Vec::new();
    for f in figures {
        let params = f
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        rows.push([
            f.scenario.clone(),
            f.name.clone(),
            params,
            opt(f.median()),
            format!("{}..{}", opt(f.min()), opt(f.max())),
            f.unit.to_owned(),
            f.cpp.map(|c| human(c.median)).unwrap_or_default(),
            f.advantage().map(|a| format!("{a:.2}")).unwrap_or_default(),
            f.target.map(Target::label).unwrap_or_default(),
            match f.met() {
                _ if f.failed() => "FAILED".into(),
                Some(true) => "met".into(),
                Some(false) => "MISSED".into(),
                None if f.below_stated_n() => "at larger N".into(),
                None => String::new(),
            },
        ]);
    }
    let mut width = header.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        for (i, (c, w)) in cells.iter().zip(width.iter()).enumerate() {
            let pad = w - c.chars().count();
            // Numbers right-aligned, text left-aligned.
            if (3..=4).contains(&i) || (6..=7).contains(&i) {
                out.push_str(&" ".repeat(pad));
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(pad));
            }
            out.push_str(if i + 1 < cells.len() { " | " } else { "\n" });
        }
    };
    line(&header.map(String::from), &mut out);
    line(&width.map(|w| "-".repeat(w)), &mut out);
    let mut last = String::new();
    for r in &rows {
        if r[0] != last && !last.is_empty() {
            line(&width.map(|_| String::new()), &mut out);
        }
        last = r[0].clone();
        line(r, &mut out);
    }
    let mut annotated: Vec<&Figure> = Vec::new();
    for f in figures.iter().filter(|f| f.full_note().is_some()) {
        let seen = annotated.iter().any(|a| {
            a.scenario == f.scenario && a.name == f.name && a.full_note() == f.full_note()
        });
        if !seen {
            annotated.push(f);
        }
    }
    if !annotated.is_empty() || !notes.is_empty() {
        out.push_str("\nNotes:\n");
        for f in annotated {
            out.push_str(&format!(
                "- {}/{}: {}\n",
                f.scenario,
                f.name,
                f.full_note().unwrap_or_default()
            ));
        }
        for n in notes {
            out.push_str(&format!("- {n}\n"));
        }
    }
    out.push_str(
        "\n\"x better\" = how many times better than the C++ figure (>1: ours is better; \
         throughput ours/C++, time and bytes C++/ours).\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max_and_advantage_follow_the_direction() {
        // A time figure 2x lower than C++ is 2x better; a rate 2x higher likewise.
        let t =
            Figure::new("s", "t", &[], "ms", Better::Lower, vec![3.0, 1.0, 2.0]).cpp(Some(Cpp {
                median: 4.0,
                range: "",
            }));
        assert_eq!(
            (t.median(), t.min(), t.max()),
            (Some(2.0), Some(1.0), Some(3.0))
        );
        assert_eq!(t.advantage(), Some(2.0));
        let r = Figure::new("s", "r", &[], "ops/s", Better::Higher, vec![8.0, f64::NAN])
            .target(Target::AtLeast(10.0));
        assert_eq!(r.median(), Some(8.0));
        assert_eq!(r.met(), Some(false));
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
    }

    #[test]
    fn a_bounded_maximum_is_judged_on_the_worst_repetition() {
        // Holds of 0.2, 0.3 and 1.5 ms: the median meets <= 1 ms, the worst does not.
        let holds = vec![0.2, 1.5, 0.3];
        let f = Figure::new(
            "s",
            "longest_index_hold",
            &[],
            "ms",
            Better::Lower,
            holds.clone(),
        )
        .target(Target::AtMost(1.0));
        assert_eq!(f.target, Some(Target::Max(1.0)), "a hold is a maximum");
        assert_eq!((f.median(), f.worst()), (Some(0.3), Some(1.5)));
        assert_eq!(f.met(), Some(false));
        let json = f.to_json();
        assert!(json.contains("\"median\":0.3,\"worst\":1.5"), "{json}");
        assert!(json.contains("\"target\":\"<= 1 (worst rep)\""), "{json}");
        // Every repetition within the bound: met.
        let f = Figure::new("s", "p99_latency", &[], "us", Better::Lower, vec![5.0, 9.0])
            .target(Target::AtMost(10.0));
        assert_eq!(f.met(), Some(true));
        // Not a maximum: the median still judges an upper bound.
        let f = Figure::new("s", "per_object_examined", &[], "ns", Better::Lower, holds)
            .target(Target::AtMost(1.0));
        assert_eq!(f.target, Some(Target::AtMost(1.0)));
        assert_eq!(f.met(), Some(true));
        assert!(!f.to_json().contains("worst"));
        // An explicit bounded maximum, whatever the name.
        assert_eq!(Target::Max(2.0).met(&[1.0, 2.5, 1.0]), Some(false));
        assert_eq!(Target::Max(2.0).met(&[]), None);
    }

    #[test]
    fn maxima_are_told_by_their_names() {
        for name in [
            "longest_index_hold",
            "build_longest_index_hold",
            "eviction_longest_shard_lock_hold",
            "longest_index_hold_register",
            "index_lock_hold_100pct_due",
            "putend_p99_during_wave",
            "get_max_during_eviction",
        ] {
            assert!(is_maximum(name), "{name}");
        }
        for name in [
            "index_work_per_batch",
            "collection_slice_cpu",
            "put_pin_slowdown",
            "threshold_ratio",
            "maximal",
            "put pairs/s, journal on / off (interleaved blocks, one process)",
        ] {
            assert!(!is_maximum(name), "{name}");
        }
    }

    #[test]
    fn a_target_stated_at_a_larger_n_is_not_judged() {
        let f = Figure::new(
            "s",
            "batch_exist_64",
            &[],
            "keys/s",
            Better::Higher,
            vec![5e6],
        )
        .note("a note")
        .target(Target::AtLeast(8e6))
        .target_stated_at(10_000_000, 1_000_000);
        assert_eq!(f.met(), None);
        let json = f.to_json();
        assert!(json.contains("\"met\":null"), "{json}");
        assert!(
            json.contains("\"note\":\"target at 10^7; a note\""),
            "{json}"
        );
        // At the stated N it is judged as usual.
        let f = Figure::new(
            "s",
            "batch_exist_64",
            &[],
            "keys/s",
            Better::Higher,
            vec![5e6],
        )
        .target_stated_at(10_000_000, 10_000_000)
        .target(Target::AtLeast(8e6));
        assert_eq!(f.met(), Some(false));
        assert_eq!(f.full_note(), None);
        assert_eq!(power_of_ten(10_000_000), "10^7");
        assert_eq!(power_of_ten(1_000_000), "10^6");
        assert_eq!(power_of_ten(20_000), "20000");
    }

    #[test]
    fn a_failed_figure_misses_its_target() {
        let mut f = Figure::new("s", "r", &[], "ops/s", Better::Higher, vec![20.0])
            .target(Target::AtLeast(10.0));
        assert_eq!(f.met(), Some(true));
        f.fail("case rep 1: child failed");
        assert_eq!(f.met(), Some(false));
        assert!(f.to_json().contains("\"failed\":true"));
        // Without a target it is still marked failed.
        let mut g = Figure::new("s", "r", &[], "ops/s", Better::Higher, vec![20.0]);
        g.fail("why");
        assert_eq!(g.met(), None);
        assert!(g.to_json().contains("\"failed\":true"));
        assert!(table(&[g], &[]).contains("FAILED"));
    }
}
