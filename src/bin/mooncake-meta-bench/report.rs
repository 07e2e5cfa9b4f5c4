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

/// A performance target the project set itself (bench/README.md).
#[derive(Debug, Clone, Copy)]
pub enum Target {
    AtLeast(f64),
    AtMost(f64),
}

impl Target {
    pub fn met(self, median: f64) -> bool {
        match self {
            Target::AtLeast(t) => median >= t,
            Target::AtMost(t) => median <= t,
        }
    }

    pub fn label(self) -> String {
        match self {
            Target::AtLeast(t) => format!(">= {}", human(t)),
            Target::AtMost(t) => format!("<= {}", human(t)),
        }
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
        }
    }

    pub fn cpp(mut self, cpp: Option<Cpp>) -> Self {
        self.cpp = cpp;
        self
    }

    pub fn target(mut self, t: Target) -> Self {
        self.target = Some(t);
        self
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

    pub fn met(&self) -> Option<bool> {
        Some(self.target?.met(self.median()?))
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
            .opt_num("median", self.median())
            .opt_num("min", self.min())
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
        if let Some(n) = &self.note {
            w.str("note", n);
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
                Some(true) => "met".into(),
                Some(false) => "MISSED".into(),
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
    for f in figures.iter().filter(|f| f.note.is_some()) {
        let seen = annotated
            .iter()
            .any(|a| a.scenario == f.scenario && a.name == f.name && a.note == f.note);
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
                f.note.as_deref().unwrap_or("")
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
}
