//! mooncake-meta-bench: the benchmark harness (bench/README.md).
//!
//! Every scenario runs its measurements in child processes (the harness
//! re-executes itself with a hidden `--child` argument and reads back one
//! JSON line), one process per repetition, so memory figures always start
//! from a fresh process and no scenario inherits another's heap. Figures
//! are printed as one JSON object per line on stdout; a table follows on
//! stderr (or stdout with `--table`). The run exits 1, after a line naming
//! what failed, when a repetition, a correctness check or `read-c` failed
//! (not for a missed target). See bench/README.md.

mod anchor;
mod batch;
mod churn;
mod cleanup;
mod clock;
mod evict;
mod footprint;
mod journal;
mod json;
mod read;
mod read_c;
mod report;
mod retention;
mod scale;
mod snapshot;
mod standby;
mod util;
mod write;

use report::Figure;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;
use util::{Params, Sample};

/// How the whole run is sized.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    pub quick: bool,
    /// `--scale`: the scale run (10^7 objects, the 10^8 footprint).
    pub scale: bool,
    pub reps: usize,
}

/// Every sample of one scenario, by case, in repetition order, and the
/// repetitions that failed.
#[derive(Default, Clone)]
pub struct Results {
    /// Each case and the samples of its repetitions that succeeded.
    pub cases: Vec<(Params, Vec<Sample>)>,
    /// The repetition number of each sample of `cases`, in the same
    /// order (a case without an entry here: its samples are repetitions
    /// 0, 1, 2, …).
    pub reps: Vec<Vec<usize>>,
    /// Repetitions that failed: (case index, repetition, why).
    pub failures: Vec<(usize, usize, String)>,
}

impl Results {
    /// Results for `cases`, no repetition run yet.
    pub fn new(cases: &[Params]) -> Self {
        Results {
            cases: cases.iter().map(|c| (c.clone(), Vec::new())).collect(),
            reps: vec![Vec::new(); cases.len()],
            failures: Vec::new(),
        }
    }

    /// Records repetition `rep` of case `case`: its sample, or why it failed.
    pub fn record(&mut self, case: usize, rep: usize, got: Result<Sample, String>) {
        match got {
            Ok(s) => {
                self.cases[case].1.push(s);
                if self.reps.len() <= case {
                    self.reps.resize(case + 1, Vec::new());
                }
                self.reps[case].push(rep);
            }
            Err(why) => self.failures.push((case, rep, why)),
        }
    }

    /// The index of the case whose parameters include all of `want`.
    fn case(&self, want: &[(&str, &str)]) -> Option<usize> {
        self.cases.iter().position(|(p, _)| {
            want.iter()
                .all(|(k, v)| p.0.iter().any(|(pk, pv)| pk == k && pv == v))
        })
    }

    /// The repetition number of the `i`-th sample of case `case`.
    fn rep_of(&self, case: usize, i: usize) -> usize {
        self.reps
            .get(case)
            .and_then(|r| r.get(i))
            .copied()
            .unwrap_or(i)
    }

    /// Samples of the case whose parameters include all of `want` (the
    /// repetitions that succeeded).
    pub fn samples(&self, want: &[(&str, &str)]) -> &[Sample] {
        self.case(want)
            .map(|i| self.cases[i].1.as_slice())
            .unwrap_or(&[])
    }

    /// One metric over the repetitions of a case.
    pub fn values(&self, want: &[(&str, &str)], metric: &str) -> Vec<f64> {
        self.samples(want).iter().map(|s| s.get(metric)).collect()
    }

    /// `f(a, b)` per repetition of two metrics of a case.
    pub fn zip(
        &self,
        want: &[(&str, &str)],
        a: &str,
        b: &str,
        f: impl Fn(f64, f64) -> f64,
    ) -> Vec<f64> {
        self.samples(want)
            .iter()
            .map(|s| f(s.get(a), s.get(b)))
            .collect()
    }

    /// `f(a, b)` per repetition of one metric in two cases, paired by
    /// repetition number (the cases interleave, so repetition r of both
    /// ran one right after the other); a repetition that failed on
    /// either side makes no pair.
    pub fn pair(
        &self,
        a: &[(&str, &str)],
        b: &[(&str, &str)],
        metric: &str,
        f: impl Fn(f64, f64) -> f64,
    ) -> Vec<f64> {
        let (Some(ca), Some(cb)) = (self.case(a), self.case(b)) else {
            return Vec::new();
        };
        let (sa, sb) = (&self.cases[ca].1, &self.cases[cb].1);
        sa.iter()
            .enumerate()
            .filter_map(|(i, x)| {
                let rep = self.rep_of(ca, i);
                let j = (0..sb.len()).find(|&j| self.rep_of(cb, j) == rep)?;
                Some(f(x.get(metric), sb[j].get(metric)))
            })
            .collect()
    }

    /// Whether a figure with parameters `fig` may read case `case`: none
    /// of its parameters names a value the case has otherwise.
    fn may_read(&self, case: usize, fig: &[(String, String)]) -> bool {
        let params = &self.cases[case].0;
        fig.iter()
            .all(|(k, v)| params.0.iter().all(|(ck, cv)| ck != k || same_value(cv, v)))
    }
}

/// Marks failed every figure of `figs` that reads a repetition that
/// failed, the note naming the case, the repetition and why. The figures
/// do not say which cases they read, so this asks `s.figures` again: on
/// the results with every failed repetition present as a sample of no
/// numbers, and, for each failed repetition, with all of them present but
/// that one. A figure that comes out different between the two (its
/// values, or its note), or in only one of them, reads that repetition;
/// with every other failed repetition filled in, a comparison of two
/// cases that both failed in one repetition still shows. Should a run
/// panic, or the figure come out in neither, a figure counts as reading a
/// failed case unless one of its parameters names a value the case has
/// otherwise.
fn mark_failures(s: &Scenario, mode: Mode, r: &Results, figs: &mut [Figure]) {
    if r.failures.is_empty() {
        return;
    }
    // Which occurrence of its name and parameters each figure is.
    let nth: Vec<usize> = (0..figs.len())
        .map(|i| {
            figs[..i]
                .iter()
                .filter(|g| g.name == figs[i].name && g.params == figs[i].params)
                .count()
        })
        .collect();
    // The figures with every failed repetition but `skip` filled in.
    let filled = |skip: Option<usize>| {
        let mut probe = r.clone();
        probe.failures.clear();
        for (j, (case, rep, _)) in r.failures.iter().enumerate() {
            if Some(j) != skip {
                probe.record(*case, *rep, Ok(Sample::default()));
            }
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (s.figures)(&probe, mode))).ok()
    };
    let find = |probed: &[Figure], f: &Figure, nth: usize| -> Option<usize> {
        probed
            .iter()
            .enumerate()
            .filter(|(_, p)| p.name == f.name && p.params == f.params)
            .nth(nth)
            .map(|(i, _)| i)
    };
    let all = filled(None);
    for (j, (case, rep, why)) in r.failures.iter().enumerate() {
        let without = filled(Some(j));
        let why = format!("{} {} rep {rep}: {why}", s.name, r.cases[*case].0.label());
        for (i, f) in figs.iter_mut().enumerate() {
            let reads = match (&all, &without) {
                (Some(a), Some(w)) => match (find(a, f, nth[i]), find(w, f, nth[i])) {
                    (Some(x), Some(y)) => {
                        !same_bits(&a[x].values, &w[y].values) || a[x].note != w[y].note
                    }
                    (None, None) => r.may_read(*case, &f.params),
                    _ => true,
                },
                _ => r.may_read(*case, &f.params),
            };
            if reads {
                f.fail(why.clone());
            }
        }
    }
}

/// Whether two lists of values are the same, bit for bit (NaN included).
fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Whether two parameter values are the same (as text, or as numbers).
fn same_value(a: &str, b: &str) -> bool {
    a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub cases: fn(Mode) -> Vec<Params>,
    pub child: fn(&Params) -> Sample,
    pub figures: fn(&Results, Mode) -> Vec<Figure>,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        anchor::SCENARIO,
        batch::SCENARIO,
        cleanup::SCENARIO,
        churn::SCENARIO,
        read::SCENARIO,
        write::SCENARIO,
        evict::SCENARIO,
        footprint::SCENARIO,
        snapshot::SCENARIO,
        clock::SCENARIO,
        retention::SCENARIO,
        journal::SCENARIO,
        standby::SCENARIO,
        scale::SCENARIO,
    ]
}

/// Scenario names in run order; `read-c` sits right after `read`.
fn all_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = scenarios().iter().map(|s| s.name).collect();
    let at = names
        .iter()
        .position(|n| *n == "read")
        .map_or(names.len(), |i| i + 1);
    names.insert(at, read_c::NAME);
    names
}

const USAGE: &str = "\
usage: mooncake-meta-bench [--quick | --scale] [--reps N] [--table] [--list] [SCENARIO...]

  --quick     small sizes and 1 repetition (CI; well under a minute)
  --scale     the scale run (make bench-scale): scenario `scale` at 10^5..10^7
              objects plus the 10^8 footprint; alone, it selects only `scale`
  --reps N    repetitions per case (default 3, quick 1)
  --table     print the table on stdout after the JSON lines (default: stderr)
  --cpu-time  time throughput and cycles by the measuring threads' CPU time
              instead of wall time (robust on a shared machine; latencies stay wall)
  --read-c P  the C read benchmark to run for `read-c` (default target/c/read_c, built by make bench)
  --list      list the scenarios
Exit status 1 when a repetition failed (a child's panic or failed assertion), a
correctness check failed (a CHECK_FAILED figure) or read-c's program failed; a
missed target is reported, not a failure.
Scenarios (all by default, in this order): ";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..]);
        return;
    }
    let mut mode = Mode {
        quick: false,
        scale: false,
        reps: 0,
    };
    let mut table_stdout = false;
    let mut cpu_time = false;
    let mut read_c_path: Option<String> = None;
    let mut wanted: Vec<String> = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => mode.quick = true,
            "--scale" => mode.scale = true,
            "--table" => table_stdout = true,
            "--cpu-time" => cpu_time = true,
            "--reps" => {
                mode.reps = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| die("--reps needs a positive integer"))
            }
            "--read-c" => {
                read_c_path = Some(it.next().unwrap_or_else(|| die("--read-c needs a path")))
            }
            "--list" => {
                for s in scenarios() {
                    println!("{:12} {}", s.name, s.about);
                }
                println!("{:12} {}", read_c::NAME, read_c::ABOUT);
                return;
            }
            "-h" | "--help" => {
                println!("{USAGE}{}", all_names().join(", "));
                return;
            }
            s if s.starts_with('-') => die(&format!("unknown option {s}\n{USAGE}")),
            s => wanted.push(s.to_owned()),
        }
    }
    if mode.quick && mode.scale {
        die("--quick and --scale exclude each other");
    }
    if mode.scale && wanted.is_empty() {
        wanted.push(scale::SCENARIO.name.to_owned());
    }
    if mode.reps == 0 {
        mode.reps = if mode.quick { 1 } else { 3 };
    }
    let names = all_names();
    for w in &wanted {
        if !names.contains(&w.as_str()) {
            die(&format!(
                "unknown scenario {w}; known: {}",
                names.join(", ")
            ));
        }
    }
    let selected: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| wanted.is_empty() || wanted.iter().any(|w| w == n))
        .collect();

    if cpu_time {
        // Read by the children (util::cpu_clock); set before any is spawned.
        std::env::set_var("MOONCAKE_BENCH_CLOCK", "cpu");
    } else {
        std::env::remove_var("MOONCAKE_BENCH_CLOCK");
    }
    let started = Instant::now();
    let mut figures: Vec<Figure> = Vec::new();
    let mut notes: Vec<String> = vec![format!(
        "mode: {}, {} repetition(s) per case, {} CPU(s), {} time; each repetition is a fresh process; \
         load average at the start: {}",
        if mode.quick {
            "quick"
        } else if mode.scale {
            "scale"
        } else {
            "full"
        },
        mode.reps,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if cpu_time { "thread-CPU" } else { "wall" },
        loadavg()
    )];
    let all = scenarios();
    // Every repetition that failed, as `scenario case rep r: why`.
    let mut failed_reps: Vec<String> = Vec::new();
    for name in selected {
        let t = Instant::now();
        eprintln!("== {name}");
        let figs = if name == read_c::NAME {
            read_c::run(mode, read_c_path.as_deref(), &figures, &mut notes)
        } else {
            let s = all.iter().find(|s| s.name == name).expect("known scenario");
            let results = run_children(s, mode, &mut notes);
            failed_reps.extend(results.failures.iter().map(|(case, rep, why)| {
                format!(
                    "{} {} rep {rep}: {why}",
                    s.name,
                    results.cases[*case].0.label()
                )
            }));
            let mut figs = (s.figures)(&results, mode);
            mark_failures(s, mode, &results, &mut figs);
            figs
        };
        let mut out = std::io::stdout().lock();
        for f in &figs {
            writeln!(out, "{}", f.to_json()).expect("stdout");
        }
        out.flush().expect("stdout");
        eprintln!("   {name}: {:.1} s", t.elapsed().as_secs_f64());
        figures.extend(figs);
    }
    notes.push(format!(
        "total wall time {:.1} s; load average at the end: {}",
        started.elapsed().as_secs_f64(),
        loadavg()
    ));
    let table = report::table(&figures, &notes);
    if table_stdout {
        println!("\n{table}");
    } else {
        eprintln!("\n{table}");
    }
    let failed = run_failures(&figures, &failed_reps);
    if !failed.is_empty() {
        eprintln!("\n{}", failed.join("\n"));
        std::process::exit(1);
    }
}

/// Why the run failed, one line each after a heading line; empty when
/// nothing did. A run fails when a repetition failed (a child that exited
/// non-zero or panicked, as on a failed assertion, or whose output was
/// unreadable), when a figure is failed (it reads such a repetition, or
/// `read-c`'s program failed), or when a correctness check failed (a
/// `CHECK_FAILED` figure). A missed target does not fail the run: targets
/// are reported, not enforced (timings on a shared machine are noisy), and
/// neither does `read-c` without its program built (`not_run`, not failed).
fn run_failures(figures: &[Figure], failed_reps: &[String]) -> Vec<String> {
    let label = |f: &Figure| {
        let params: Vec<String> = f.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}/{} {}", f.scenario, f.name, params.join(" "))
            .trim_end()
            .to_owned()
    };
    let checks: Vec<&Figure> = figures
        .iter()
        .filter(|f| f.name == "CHECK_FAILED")
        .collect();
    let failed_figs: Vec<&Figure> = figures.iter().filter(|f| f.failed()).collect();
    if failed_reps.is_empty() && checks.is_empty() && failed_figs.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "mooncake-meta-bench: FAILED: {} failed repetition(s), {} correctness check(s) failed, \
         {} failed figure(s) (missed targets are not failures)",
        failed_reps.len(),
        checks.len(),
        failed_figs.len()
    )];
    out.extend(
        failed_reps
            .iter()
            .map(|w| format!("  repetition failed: {w}")),
    );
    for f in checks {
        out.push(format!(
            "  correctness check failed: {}: {}",
            label(f),
            f.note.as_deref().unwrap_or("")
        ));
    }
    for f in failed_figs {
        // A failure that is not a failed repetition (read-c's program) is
        // named here; the others are listed above.
        let own: Vec<&str> = f
            .failures
            .iter()
            .filter(|w| !failed_reps.contains(w))
            .map(String::as_str)
            .collect();
        if own.is_empty() {
            out.push(format!("  figure failed: {}", label(f)));
        } else {
            out.push(format!("  figure failed: {}: {}", label(f), own.join("; ")));
        }
    }
    out
}

/// Runs every case of a scenario `mode.reps` times, repetitions outermost
/// so that the cases of a comparison interleave (drift hits them alike).
/// A repetition that fails (a non-zero exit, a failed assertion, output
/// that is not one JSON object) is recorded as failed, with why.
fn run_children(s: &Scenario, mode: Mode, notes: &mut Vec<String>) -> Results {
    let cases = (s.cases)(mode);
    let mut results = Results::new(&cases);
    let exe = std::env::current_exe().expect("current_exe");
    for rep in 0..mode.reps {
        for (ci, case) in cases.iter().enumerate() {
            let t = Instant::now();
            let out = Command::new(&exe)
                .arg("--child")
                .arg(s.name)
                .args(case.args())
                .arg(format!("rep={rep}"))
                .stdin(Stdio::null())
                .stderr(Stdio::piped())
                .output();
            let parsed = match out {
                Ok(o) => {
                    // What the child said on stderr (a panic's message),
                    // passed on as it would have been printed.
                    let err = String::from_utf8_lossy(&o.stderr);
                    eprint!("{err}");
                    if o.status.success() {
                        let text = String::from_utf8_lossy(&o.stdout);
                        let line = text
                            .lines()
                            .rev()
                            .find(|l| l.starts_with('{'))
                            .unwrap_or("");
                        match json::parse(line) {
                            Ok(json::Value::Obj(m)) => {
                                let mut sample = Sample::default();
                                for (k, v) in m {
                                    sample.set(&k, v.num().unwrap_or(f64::NAN));
                                }
                                Ok(sample)
                            }
                            Ok(_) => Err(format!("child output is not a JSON object: {text:?}")),
                            Err(e) => Err(format!("unreadable child output ({e}): {text:?}")),
                        }
                    } else {
                        Err(match panic_message(&err) {
                            Some(p) => format!("child failed ({}): {p}", o.status),
                            None => format!("child failed: {}", o.status),
                        })
                    }
                }
                Err(e) => Err(format!("cannot run child: {e}")),
            };
            match &parsed {
                Ok(_) => eprintln!(
                    "   {} {} rep {rep}: {:.1} s",
                    s.name,
                    case.label(),
                    t.elapsed().as_secs_f64()
                ),
                Err(why) => {
                    eprintln!("   {} {} rep {rep}: ERROR {why}", s.name, case.label());
                    notes.push(format!("{} {} rep {rep}: {why}", s.name, case.label()));
                }
            }
            results.record(ci, rep, parsed);
        }
    }
    results
}

/// The message of a panic in a child's stderr: the `panicked at` line's
/// location and the message lines after it (an assertion's left and
/// right), at most 300 characters.
fn panic_message(stderr: &str) -> Option<String> {
    let mut lines = stderr.lines().skip_while(|l| !l.contains("panicked at"));
    let first = lines.next()?;
    let at = first.split_once("panicked at").map_or(first, |(_, r)| r);
    let mut msg = at.trim().trim_end_matches(':').to_owned();
    for l in lines.take_while(|l| !l.starts_with("note:") && !l.starts_with("stack backtrace")) {
        msg.push(' ');
        msg.push_str(l.trim());
    }
    if msg.chars().count() > 300 {
        msg = msg.chars().take(297).collect::<String>() + "...";
    }
    Some(msg)
}

/// `--child SCENARIO key=value...`: one measurement, one JSON line, then a
/// fast exit (the process is thrown away; dropping a big master is not
/// what is measured).
fn child(args: &[String]) {
    let name = args
        .first()
        .unwrap_or_else(|| die("--child needs a scenario"));
    let params = Params::parse(&args[1..]);
    let s = scenarios()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| die(&format!("unknown scenario {name}")));
    let sample = (s.child)(&params);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", sample.to_json()).expect("stdout");
    out.flush().expect("stdout");
    std::process::exit(0);
}

/// The 1, 5 and 15 minute load averages: other work on a shared machine.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn die(msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::{Better, Target};

    fn sample(k: &str, v: f64) -> Sample {
        let mut s = Sample::default();
        s.set(k, v);
        s
    }

    /// Two cases, "a" and "b", 3 repetitions each; repetition 1 of "a" failed.
    fn results() -> Results {
        let cases = [
            Params::new(&[("n", "10".into()), ("case", "a".into())]),
            Params::new(&[("n", "10".into()), ("case", "b".into())]),
        ];
        let mut r = Results::new(&cases);
        for rep in 0..3 {
            let a = if rep == 1 {
                Err("child failed: exit status: 101".to_owned())
            } else {
                Ok(sample("x", 10.0 * (rep + 1) as f64))
            };
            r.record(0, rep, a);
            r.record(1, rep, Ok(sample("x", (rep + 1) as f64)));
        }
        r
    }

    #[test]
    fn pairs_are_made_by_repetition_number_skipping_a_failed_side() {
        let r = results();
        assert_eq!(r.values(&[("case", "a")], "x"), vec![10.0, 30.0]);
        // Rep 0: 10 / 1, rep 2: 30 / 3; rep 1 of "b" has no partner. By
        // index it would have paired 30 with 2.
        assert_eq!(
            r.pair(&[("case", "a")], &[("case", "b")], "x", |a, b| a / b),
            vec![10.0, 10.0]
        );
        assert_eq!(
            r.pair(&[("case", "b")], &[("case", "a")], "x", |a, b| a / b),
            vec![0.1, 0.1]
        );
    }

    fn toy_cases(_: Mode) -> Vec<Params> {
        Vec::new()
    }

    fn toy_child(_: &Params) -> Sample {
        Sample::default()
    }

    fn toy_figures(r: &Results, _: Mode) -> Vec<Figure> {
        vec![
            Figure::new(
                "toy",
                "a",
                &[("n", "10".into())],
                "x",
                Better::Lower,
                r.values(&[("case", "a")], "x"),
            )
            .target(Target::AtMost(100.0)),
            Figure::new(
                "toy",
                "b",
                &[("n", "10".into())],
                "x",
                Better::Lower,
                r.values(&[("case", "b")], "x"),
            )
            .target(Target::AtMost(100.0)),
            Figure::new(
                "toy",
                "a_over_b",
                &[("n", "10".into())],
                "x",
                Better::Lower,
                r.pair(&[("case", "a")], &[("case", "b")], "x", |a, b| a / b),
            ),
        ]
    }

    const TOY: Scenario = Scenario {
        name: "toy",
        about: "",
        cases: toy_cases,
        child: toy_child,
        figures: toy_figures,
    };

    #[test]
    fn a_failed_repetition_fails_exactly_the_figures_that_read_it() {
        let mode = Mode {
            quick: true,
            scale: false,
            reps: 3,
        };
        let r = results();
        let mut figs = toy_figures(&r, mode);
        // Without the failure, "a" (values 10, 30) would meet its target.
        assert_eq!(figs[0].median(), Some(20.0));
        mark_failures(&TOY, mode, &r, &mut figs);
        assert!(
            figs[0].failed() && figs[2].failed(),
            "a and a/b read case a"
        );
        assert!(!figs[1].failed(), "b reads only case b");
        assert_eq!(figs[0].met(), Some(false));
        assert_eq!(figs[1].met(), Some(true));
        let json = figs[0].to_json();
        assert!(json.contains("\"met\":false"), "{json}");
        assert!(json.contains("\"failed\":true"), "{json}");
        assert!(
            json.contains("FAILED: toy n=10 case=a rep 1: child failed: exit status: 101"),
            "{json}"
        );
    }

    #[test]
    fn a_comparison_whose_two_sides_failed_in_one_repetition_is_failed() {
        let mode = Mode {
            quick: true,
            scale: false,
            reps: 3,
        };
        let mut r = results();
        // Repetition 1 of "b" failed too: no pair is lost by index, and the
        // ratio still reads both failures.
        r.cases[1].1.remove(1);
        r.reps[1].remove(1);
        r.failures.push((1, 1, "child failed: signal 9".to_owned()));
        assert_eq!(
            r.pair(&[("case", "a")], &[("case", "b")], "x", |a, b| a / b),
            vec![10.0, 10.0]
        );
        let mut figs = toy_figures(&r, mode);
        mark_failures(&TOY, mode, &r, &mut figs);
        assert_eq!(figs[0].failures.len(), 1, "{:?}", figs[0].failures);
        assert_eq!(figs[1].failures.len(), 1, "{:?}", figs[1].failures);
        assert_eq!(figs[2].failures.len(), 2, "{:?}", figs[2].failures);
    }

    #[test]
    fn a_failed_repetition_check_or_figure_fails_the_run_and_a_missed_target_does_not() {
        let missed = Figure::new(
            "s",
            "rate",
            &[("n", "10".into())],
            "ops/s",
            Better::Higher,
            vec![1.0],
        )
        .target(Target::AtLeast(100.0));
        assert_eq!(missed.met(), Some(false));
        let not_run = Figure::new("read-c", "not_run", &[], "", Better::Higher, vec![])
            .note("target/c/read_c is not built");
        assert!(run_failures(&[missed.clone(), not_run.clone()], &[]).is_empty());

        let rep = "toy n=10 case=a rep 1: child failed: exit status: 101".to_owned();
        let mut read = missed.clone();
        read.fail(rep.clone());
        let lines = run_failures(&[read, not_run.clone()], std::slice::from_ref(&rep));
        assert!(lines[0].starts_with("mooncake-meta-bench: FAILED: 1 failed repetition(s), 0 correctness check(s) failed, 1 failed figure(s)"), "{lines:?}");
        assert_eq!(lines[1], format!("  repetition failed: {rep}"));
        assert_eq!(lines[2], "  figure failed: s/rate n=10");

        let check = Figure::new(
            "s",
            "CHECK_FAILED",
            &[("n", "10".into())],
            "",
            Better::Lower,
            vec![],
        )
        .note("1% due: expired 3 of 4");
        let lines = run_failures(&[missed.clone(), check], &[]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[1],
            "  correctness check failed: s/CHECK_FAILED n=10: 1% due: expired 3 of 4"
        );

        let mut c_failed = not_run;
        c_failed.fail("/bin/false failed: exit status: 1");
        let lines = run_failures(&[c_failed], &[]);
        assert_eq!(
            lines[1],
            "  figure failed: read-c/not_run: /bin/false failed: exit status: 1"
        );
    }

    #[test]
    fn a_panic_message_is_cut_from_stderr() {
        let err = "thread 'main' panicked at src/bin/x.rs:12:5:\n\
                   assertion `left == right` failed: every put pinned\n  left: 3\n right: 4\n\
                   note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            panic_message(err).as_deref(),
            Some("src/bin/x.rs:12:5 assertion `left == right` failed: every put pinned left: 3 right: 4")
        );
        assert_eq!(panic_message("nothing\n"), None);
    }
}
