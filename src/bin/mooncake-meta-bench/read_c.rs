//! `read-c`: the C ABI half of the read scenario. It runs the C program
//! built from `bench/read_c.c` (linked to the shared library, so no LTO
//! inlining across the boundary; `make bench` builds it as
//! `target/c/read_c`) when it has been built, forwards its figures and
//! compares its single-thread Exist with the Rust call's; otherwise it only
//! says so.
//!
//! Contract for the program (see bench/README.md): invoked as
//! `read_c [--quick]`, it prints one JSON object per line, each
//! `{"figure": NAME, "params": {...}, "unit": UNIT, "better": "higher"|"lower",
//! "values": [one number per repetition]}`; anything else on stdout is ignored.

use crate::json::{self, Value};
use crate::report::{Better, Figure, Target};
use crate::Mode;
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub const NAME: &str = "read-c";
pub const ABOUT: &str =
    "Get/Exist through the C ABI, from target/c/read_c (bench/read_c.c linked to the .so) if built";

fn default_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("c")
        .join("read_c")
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

pub fn run(
    mode: Mode,
    path: Option<&str>,
    so_far: &[Figure],
    notes: &mut Vec<String>,
) -> Vec<Figure> {
    let path = path.map(PathBuf::from).unwrap_or_else(default_path);
    if !path.is_file() {
        let why = format!(
            "{} is not built: the C ABI read benchmark is not measured in this run",
            path.display()
        );
        eprintln!("   {why}");
        return vec![Figure::new(NAME, "not_run", &[], "", Better::Higher, vec![]).note(why)];
    }
    let mut cmd = Command::new(&path);
    if mode.quick {
        cmd.arg("--quick");
    }
    // A program that is built but fails (or prints no figure) fails the
    // run: `not_run` marked failed, with why.
    let failed = |why: String, notes: &mut Vec<String>| {
        eprintln!("   ERROR {why}");
        notes.push(why.clone());
        let mut f = Figure::new(NAME, "not_run", &[], "", Better::Higher, vec![]);
        f.fail(why);
        vec![f]
    };
    let out = match cmd.stdin(Stdio::null()).stderr(Stdio::inherit()).output() {
        Ok(o) if o.status.success() => o,
        Ok(o) => return failed(format!("{} failed: {}", path.display(), o.status), notes),
        Err(e) => return failed(format!("cannot run {}: {e}", path.display()), notes),
    };
    let mut figs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = json::parse(line) else { continue };
        let (Some(name), Some(Value::Arr(vals))) =
            (v.get("figure").and_then(Value::str), v.get("values"))
        else {
            continue;
        };
        let params: Vec<(&str, String)> = match v.get("params") {
            Some(Value::Obj(m)) => m
                .iter()
                .map(|(k, v)| {
                    let text = match v {
                        Value::Num(x) => format!("{x}"),
                        Value::Str(s) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    (leak(k.clone()), text)
                })
                .collect(),
            _ => Vec::new(),
        };
        let better = match v.get("better").and_then(Value::str) {
            Some("lower") => Better::Lower,
            _ => Better::Higher,
        };
        let unit = leak(v.get("unit").and_then(Value::str).unwrap_or("").to_owned());
        let values = vals.iter().map(|x| x.num().unwrap_or(f64::NAN)).collect();
        // The N the program ran at: its `n` parameter (10^6, quick 10^4).
        let n = params
            .iter()
            .find(|(k, _)| *k == "n")
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .map_or(if mode.quick { 10_000 } else { 1_000_000 }, |x| x as u64);
        let mut f = Figure::new(NAME, name, &params, unit, better, values);
        if name.ends_with("_per_thread") && unit == "ops/s" {
            // >= 3 M ops/s per thread is stated at 10^6 objects.
            f = f
                .target(Target::AtLeast(3e6))
                .target_stated_at(1_000_000, n);
        }
        figs.push(f);
    }
    if figs.is_empty() {
        return failed(format!("{} printed no figure", path.display()), notes);
    }
    // C ABI Exist (1 thread, no pins) within 15 % of the Rust call.
    let pick = |fs: &[Figure], scenario: &str| {
        fs.iter()
            .find(|f| {
                f.scenario == scenario
                    && f.name == "exist_per_thread"
                    && f.params.iter().any(|(k, v)| k == "threads" && v == "1")
                    && f.params.iter().any(|(k, v)| k == "pinned_pct" && v == "0")
            })
            .and_then(Figure::median)
    };
    if let (Some(c), Some(rust)) = (pick(&figs, NAME), pick(so_far, "read")) {
        figs.push(
            Figure::new(
                NAME,
                "c_exist_slowdown_vs_rust",
                &[("threads", "1".into()), ("pinned_pct", "0".into())],
                "%",
                Better::Lower,
                vec![(rust - c) / rust * 100.0],
            )
            .target(Target::AtMost(15.0)),
        );
    }
    figs
}
