//! mooncake-meta-bench: the benchmark harness (bench/README.md).
//!
//! Every scenario runs its measurements in child processes (the harness
//! re-executes itself with a hidden `--child` argument and reads back one
//! JSON line), one process per repetition, so memory figures always start
//! from a fresh process and no scenario inherits another's heap. Figures
//! are printed as one JSON object per line on stdout; a table follows on
//! stderr (or stdout with `--table`). See bench/README.md.

mod anchor;
mod batch;
mod churn;
mod cleanup;
mod clock;
mod evict;
mod footprint;
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

/// Every sample of one scenario, by case, in repetition order.
#[derive(Default)]
pub struct Results {
    pub cases: Vec<(Params, Vec<Sample>)>,
}

impl Results {
    /// Samples of the case whose parameters include all of `want`.
    pub fn samples(&self, want: &[(&str, &str)]) -> &[Sample] {
        self.cases
            .iter()
            .find(|(p, _)| {
                want.iter()
                    .all(|(k, v)| p.0.iter().any(|(pk, pv)| pk == k && pv == v))
            })
            .map(|(_, s)| s.as_slice())
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

    /// `f(a, b)` per repetition of one metric in two cases (paired by rep).
    pub fn pair(
        &self,
        a: &[(&str, &str)],
        b: &[(&str, &str)],
        metric: &str,
        f: impl Fn(f64, f64) -> f64,
    ) -> Vec<f64> {
        self.values(a, metric)
            .into_iter()
            .zip(self.values(b, metric))
            .map(|(x, y)| f(x, y))
            .collect()
    }
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
    for name in selected {
        let t = Instant::now();
        eprintln!("== {name}");
        let figs = if name == read_c::NAME {
            read_c::run(mode, read_c_path.as_deref(), &figures, &mut notes)
        } else {
            let s = all.iter().find(|s| s.name == name).expect("known scenario");
            let results = run_children(s, mode, &mut notes);
            (s.figures)(&results, mode)
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
}

/// Runs every case of a scenario `mode.reps` times, repetitions outermost
/// so that the cases of a comparison interleave (drift hits them alike).
fn run_children(s: &Scenario, mode: Mode, notes: &mut Vec<String>) -> Results {
    let cases = (s.cases)(mode);
    let mut results = Results {
        cases: cases.iter().map(|c| (c.clone(), Vec::new())).collect(),
    };
    let exe = std::env::current_exe().expect("current_exe");
    for rep in 0..mode.reps {
        for (case, samples) in results.cases.iter_mut() {
            let t = Instant::now();
            let out = Command::new(&exe)
                .arg("--child")
                .arg(s.name)
                .args(case.args())
                .arg(format!("rep={rep}"))
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output();
            let parsed = match out {
                Ok(o) if o.status.success() => {
                    let text = String::from_utf8_lossy(&o.stdout);
                    let line = text
                        .lines()
                        .rev()
                        .find(|l| l.starts_with('{'))
                        .unwrap_or("");
                    json::parse(line)
                        .map_err(|e| format!("unreadable child output ({e}): {text:?}"))
                }
                Ok(o) => Err(format!("child failed: {}", o.status)),
                Err(e) => Err(format!("cannot run child: {e}")),
            };
            match parsed {
                Ok(json::Value::Obj(m)) => {
                    let mut sample = Sample::default();
                    for (k, v) in m {
                        sample.set(&k, v.num().unwrap_or(f64::NAN));
                    }
                    eprintln!(
                        "   {} {} rep {rep}: {:.1} s",
                        s.name,
                        case.label(),
                        t.elapsed().as_secs_f64()
                    );
                    samples.push(sample);
                }
                Ok(_) | Err(_) => {
                    let why = parsed.err().unwrap_or_else(|| "not a JSON object".into());
                    eprintln!("   {} {} rep {rep}: ERROR {why}", s.name, case.label());
                    notes.push(format!("{} {} rep {rep}: {why}", s.name, case.label()));
                }
            }
        }
    }
    results
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
