//! docs/CONTRACT.md §10 metrics per instance: after a scenario that exercises every
//! counter, `metrics_prometheus()` is parsed by a small exposition-format
//! parser and every metric of §10 is found, typed, documented and equal to
//! the plain `metrics()` struct and to the values the scenario implies.
mod common;
use common::*;
use mooncake_meta_core::*;
use std::collections::BTreeMap;

type Labels = BTreeMap<String, String>;

#[derive(Default, Debug)]
struct Family {
    help: Option<String>,
    kind: Option<String>,
    samples: Vec<(Labels, f64)>,
}

/// Parses Prometheus text exposition (0.0.4) as this library writes it:
/// HELP/TYPE comments and `name{label="value",...} number` samples.
fn parse(text: &str) -> BTreeMap<String, Family> {
    let mut out: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP name text");
            let f = out.entry(name.into()).or_default();
            assert!(f.help.is_none(), "second HELP for {name}");
            assert!(f.samples.is_empty(), "HELP after samples of {name}");
            f.help = Some(help.into());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            let f = out.entry(name.into()).or_default();
            assert!(f.kind.is_none(), "second TYPE for {name}");
            assert!(f.samples.is_empty(), "TYPE after samples of {name}");
            f.kind = Some(kind.into());
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment {line:?}");
        let (series, value) = line.rsplit_once(' ').expect("sample has a value");
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let (name, labels) = match series.split_once('{') {
            None => (series, Labels::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("closing brace");
                (name, parse_labels(body))
            }
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name {name:?}"
        );
        let f = out
            .get_mut(name)
            .unwrap_or_else(|| panic!("sample of {name} before its HELP/TYPE"));
        f.samples.push((labels, value));
    }
    out
}

fn parse_labels(body: &str) -> Labels {
    let mut labels = Labels::new();
    let mut chars = body.chars().peekable();
    loop {
        let name: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "label value must be quoted");
        let mut value = String::new();
        loop {
            match chars.next().expect("unterminated label value") {
                '"' => break,
                '\\' => match chars.next().expect("dangling escape") {
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    c => panic!("bad escape \\{c}"),
                },
                c => value.push(c),
            }
        }
        assert!(labels.insert(name, value).is_none(), "repeated label");
        match chars.next() {
            None => return labels,
            Some(',') => continue,
            Some(c) => panic!("unexpected {c:?} after a label"),
        }
    }
}

/// The one unlabelled sample of `name`.
fn scalar(fams: &BTreeMap<String, Family>, name: &str) -> u64 {
    let f = fams
        .get(name)
        .unwrap_or_else(|| panic!("metric {name} missing"));
    assert_eq!(f.samples.len(), 1, "{name}: one sample");
    assert!(f.samples[0].0.is_empty(), "{name}: no labels");
    let v = f.samples[0].1;
    assert!(v >= 0.0 && v.fract() == 0.0, "{name} = {v}");
    v as u64
}

const SEG: u64 = 4096;
const ODD: &str = "q\"uo\\te\nseg";

/// A scenario that moves every metric: pins committed, re-enabled (a stale
/// heap entry) and expired, a case-C discard, an allocation failure, a stale
/// write swept, an eviction run.
fn scenario() -> Master {
    let m = master_with(config(), 2, 1, SEG);
    m.mount_segment(C2, &spec(ODD, 7, SEG, Pool::Memory))
        .unwrap();
    put(&m, "p1", 64, &enable(100));
    put(&m, "p2", 64, &enable(100));
    upsert(&m, "p2", 64, &enable(200)); // new deadline: the old entry goes stale
    let two = WriteConfig {
        nof_ssd_replicas: 1,
        ..WriteConfig::default()
    };
    put(&m, "u", 64, &two);
    upsert(&m, "u", 32, &two); // case C: 64 memory + 64 NOF discarded
    assert_eq!(
        code(m.put_start(C1, k("huge"), 2 * SEG, &preserve())),
        ErrorKind::NoAvailableHandle
    );
    m.put_start(C1, k("stale"), 16, &preserve()).unwrap();
    m.advance_time(200).unwrap();
    let st = m.run_cleanup();
    assert_eq!((st.popped, st.stale_dropped, st.expired), (3, 1, 2));
    let ev = m.run_eviction(1.0, 0.0).unwrap();
    assert_eq!((ev.evicted, ev.evicted_bytes), (3, 160));
    assert_eq!(m.sweep_stale_writes_at(T0 + 600_001), 1);
    inv(&m);
    m
}

#[test]
fn prometheus_text_has_every_section_5_metric_with_sane_values() {
    // §10: key count, soft-pin gauge, allocated/capacity (total and per segment, both pools),
    // eviction attempts/successes/keys/bytes, put-start failures, discarded staging bytes,
    // and cleanup statistics, with upstream-style names
    let m = scenario();
    let s = m.metrics();
    let fams = parse(&m.metrics_prometheus());
    for (name, f) in &fams {
        assert!(
            f.help.as_deref().is_some_and(|h| !h.is_empty()),
            "{name}: HELP"
        );
        match f.kind.as_deref() {
            Some("counter") => assert!(name.ends_with("_total"), "{name}: counter suffix"),
            Some("gauge") => assert!(!name.ends_with("_total"), "{name}: gauge suffix"),
            other => panic!("{name}: TYPE {other:?}"),
        }
    }
    let expect = [
        ("master_key_count", s.key_count, Some(1)),
        ("master_soft_pin_key_count", s.soft_pin_key_count, Some(0)),
        // 64 (u's old memory replica) + 16 (the swept write), both discarded
        (
            "master_allocated_bytes",
            s.memory_allocated_bytes,
            Some(64 + 16),
        ),
        (
            "master_total_capacity_bytes",
            s.memory_capacity_bytes,
            Some(3 * SEG),
        ),
        (
            "master_allocated_nof_ssd_bytes",
            s.nof_ssd_allocated_bytes,
            Some(32 + 64),
        ),
        (
            "master_total_nof_ssd_capacity_bytes",
            s.nof_ssd_capacity_bytes,
            Some(SEG),
        ),
        (
            "master_discarded_staging_bytes",
            s.discarded_staging_bytes,
            Some(128 + 16),
        ),
        (
            "master_put_start_failures_total",
            s.put_start_failures,
            Some(1),
        ),
        (
            "master_eviction_attempts_total",
            s.eviction_attempts,
            Some(1),
        ),
        (
            "master_eviction_success_total",
            s.eviction_successes,
            Some(1),
        ),
        ("master_evicted_key_count_total", s.evicted_keys, Some(3)),
        (
            "master_evicted_size_bytes_total",
            s.evicted_bytes,
            Some(160),
        ),
        (
            "master_soft_pin_cleanup_cycles_total",
            s.cleanup_cycles,
            Some(1),
        ),
        (
            "master_soft_pin_cleanup_popped_total",
            s.cleanup_popped,
            Some(3),
        ),
        (
            "master_soft_pin_cleanup_stale_total",
            s.cleanup_stale_dropped,
            Some(1),
        ),
        (
            "master_soft_pin_cleanup_expired_total",
            s.cleanup_expired,
            Some(2),
        ),
        (
            "master_soft_pin_cleanup_last_duration_ns",
            s.cleanup_last_duration_ns,
            None,
        ),
        (
            "master_soft_pin_index_longest_hold_ns",
            s.cleanup_longest_hold_ns,
            None,
        ),
        (
            "master_soft_pin_index_heap_size",
            s.index_heap_size,
            Some(0),
        ),
        (
            "master_soft_pin_index_live_registrations",
            s.index_live_registrations,
            Some(0),
        ),
        (
            "master_maintenance_task_panics_total",
            s.maintenance_task_panics,
            Some(0),
        ),
        ("master_swept_writes_total", s.swept_writes, Some(1)),
    ];
    for (name, from_struct, exact) in expect {
        let v = scalar(&fams, name);
        assert_eq!(v, from_struct, "{name}: text and struct agree");
        if let Some(e) = exact {
            assert_eq!(v, e, "{name}");
        }
    }
    // durations are real-clock nanoseconds: present and below a minute
    assert!(s.cleanup_last_duration_ns < 60_000_000_000);
    assert!(s.cleanup_longest_hold_ns < 60_000_000_000);

    // per segment, labelled by (escaped) name and pool
    for (fam, field) in [
        ("master_segment_capacity_bytes", 0),
        ("master_segment_allocated_bytes", 1),
    ] {
        let f = &fams[fam];
        assert_eq!(f.kind.as_deref(), Some("gauge"));
        assert_eq!(f.samples.len(), 4, "{fam}: one sample per segment");
        for seg in &s.segments {
            let (_, v) = f
                .samples
                .iter()
                .find(|(l, _)| l.get("segment") == Some(&seg.name))
                .unwrap_or_else(|| panic!("{fam}: no sample for {:?}", seg.name));
            let pool = match seg.pool {
                Pool::Memory => "memory",
                Pool::NofSsd => "nof_ssd",
            };
            let labels = &f
                .samples
                .iter()
                .find(|(l, _)| l.get("segment") == Some(&seg.name))
                .unwrap()
                .0;
            assert_eq!(labels.get("pool").map(String::as_str), Some(pool));
            let want = if field == 0 {
                seg.capacity
            } else {
                seg.allocated
            };
            assert_eq!(*v as u64, want, "{fam} {:?}", seg.name);
        }
        let total = |pool: &str| -> u64 {
            f.samples
                .iter()
                .filter(|(l, _)| l["pool"] == pool)
                .map(|(_, v)| *v as u64)
                .sum()
        };
        if field == 0 {
            assert_eq!(total("memory"), s.memory_capacity_bytes);
            assert_eq!(total("nof_ssd"), s.nof_ssd_capacity_bytes);
        } else {
            assert_eq!(total("memory"), s.memory_allocated_bytes);
            assert_eq!(total("nof_ssd"), s.nof_ssd_allocated_bytes);
        }
    }
    assert!(
        fams["master_segment_capacity_bytes"]
            .samples
            .iter()
            .any(|(l, _)| l["segment"] == ODD),
        "label values round-trip through escaping"
    );
}

#[test]
fn metrics_are_per_instance() {
    // §4.9/§10: metrics are per master instance
    let a = scenario();
    let b = master();
    let sb = b.metrics();
    assert_eq!(
        (
            sb.key_count,
            sb.put_start_failures,
            sb.eviction_attempts,
            sb.cleanup_cycles
        ),
        (0, 0, 0, 0)
    );
    put(&b, "k", 64, &enable(100));
    assert_eq!(b.metrics().soft_pin_key_count, 1);
    assert_eq!(a.metrics().soft_pin_key_count, 0);
    assert_eq!(a.metrics().key_count, 1);
}

#[test]
fn gauges_follow_the_state_through_removal_and_unmount() {
    // §10: key count, soft-pin gauge and byte gauges track removal and unmount exactly
    let m = master_with(config(), 2, 0, SEG);
    let on0 = WriteConfig {
        preferred_segments: vec!["mem0".into()],
        ..enable(MAX_TTL)
    };
    for i in 0..4 {
        put(&m, &format!("k{i}"), 100, &on0);
    }
    put(
        &m,
        "other",
        50,
        &WriteConfig {
            preferred_segments: vec!["mem1".into()],
            ..WriteConfig::default()
        },
    );
    let s = m.metrics();
    assert_eq!(
        (s.key_count, s.soft_pin_key_count, s.memory_allocated_bytes),
        (5, 4, 450)
    );
    assert_eq!((s.index_heap_size, s.index_live_registrations), (4, 4));
    m.remove(k("k0"), true).unwrap();
    m.unmount_segment(C1, "mem0").unwrap();
    let s = m.metrics();
    assert_eq!(
        (s.key_count, s.soft_pin_key_count, s.memory_allocated_bytes),
        (1, 0, 50)
    );
    assert_eq!(s.index_live_registrations, 0);
    assert_eq!(s.memory_capacity_bytes, SEG);
    assert_eq!(s.segments.len(), 1);
    let text = m.metrics_prometheus();
    let fams = parse(&text);
    assert_eq!(scalar(&fams, "master_key_count"), 1);
    assert_eq!(fams["master_segment_allocated_bytes"].samples.len(), 1);
    inv(&m);
}

#[test]
fn the_index_longest_hold_is_reported_without_any_cleanup() {
    // §4.8/§10: master_soft_pin_index_longest_hold_ns is the longest index-mutex hold seen,
    // whoever held it. With cleanup off (a deterministic master), 5 000 re-pins of one key
    // push 5 000 entries for one registration: timed registration holds and a rebuild, whose
    // holds are always timed.
    let m = master();
    for i in 0..5_000 {
        upsert(&m, "k", 64, &enable(1_000 + i));
    }
    let (heap, live) = m.index_sizes();
    assert_eq!(live, 1);
    assert!(heap <= 4_096, "a rebuild ran: heap {heap}");
    let s = m.metrics();
    assert_eq!(s.cleanup_cycles, 0);
    assert!(s.cleanup_longest_hold_ns > 0);
    let fams = parse(&m.metrics_prometheus());
    assert_eq!(
        scalar(&fams, "master_soft_pin_index_longest_hold_ns"),
        s.cleanup_longest_hold_ns
    );
    inv(&m);
}
