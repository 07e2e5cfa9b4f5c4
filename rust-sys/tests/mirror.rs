//! The safe layer mirrors the core crate: `tests/mirror/program.rs` is
//! compiled against both (`use mooncake_meta_core as mm;` and `use
//! mooncake_meta_sys::safe as mm;`, the only difference), and every
//! scenario's transcript must be identical. Also: the two quick-start
//! examples are the same program but for their `use` line.

mod via_core {
    use mooncake_meta_core as mm;
    include!("mirror/program.rs");
}

mod via_sys {
    use mooncake_meta_sys::safe as mm;
    include!("mirror/program.rs");
}

fn same(name: &str, core: Vec<String>, sys: Vec<String>) {
    assert!(!core.is_empty(), "{name}: empty transcript");
    for (i, (c, s)) in core.iter().zip(&sys).enumerate() {
        assert_eq!(c, s, "{name}: line {i} differs (core, then sys)");
    }
    assert_eq!(core.len(), sys.len(), "{name}: transcript lengths differ");
}

macro_rules! mirrored {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                same(stringify!($name), via_core::$name(), via_sys::$name());
            }
        )*
    };
}

mirrored!(
    quick_start,
    errors,
    cleanup,
    eviction,
    snapshot_restore,
    clock,
    metrics,
    batches,
    lifecycle,
    retention,
    journal,
    nul_segment_names,
    standby_validation
);

// The transcripts are not vacuous: a few values they must contain.
#[test]
fn transcripts_carry_the_expected_values() {
    let q = via_sys::quick_start().join("\n");
    assert!(q.contains("deadline: Some(61500)"), "{q}");
    assert!(q.contains("deadline after 2nd End: Ok(Some(61500))"), "{q}");
    assert!(q.contains("deadline after cleanup: Ok(None)"), "{q}");
    let r = via_sys::retention().join("\n");
    assert!(
        r.contains("deadline after a read: Ok(Some(1060000))"),
        "{r}"
    );
    assert!(r.contains("GroupRetentionFull"), "{r}");
    // A bad shared argument fails every entry, not the call, and changes
    // nothing.
    for want in [
        "ttl 0: Ok([\"Err(InvalidParams)\", \"Err(InvalidParams)\"])",
        "ttl above max: Ok([\"Err(InvalidParams)\"])",
        "empty tenant: Ok([\"Err(InvalidParams)\", \"Err(InvalidParams)\", \"Err(InvalidParams)\"])",
        "release empty tenant: Ok([\"Err(InvalidParams)\", \"Err(InvalidParams)\"])",
        "count after refusals: 0",
    ] {
        assert!(r.contains(want), "retention transcript lacks {want:?}:\n{r}");
    }
    assert!(r.contains("restored bare: Ok(Some(1060000))"), "{r}");
    assert!(r.contains("deadline after expiry: Ok(None)"), "{r}");
    let j = via_sys::journal().join("\n");
    for want in [
        "exist on the standby: Err(UnavailableInCurrentStatus)",
        "apply: Ok(ApplyReport { records_applied: 4, records_skipped: 0, last_seq: 4 })",
        "apply again: Ok(ApplyReport { records_applied: 0, records_skipped: 4, last_seq: 4 })",
        "readable on the standby: 0",
        "apply garbage: Err(DeserializeFail)",
        "apply on the primary: Err(UnavailableInCurrentStatus)",
        "promote again: Err(UnavailableInCurrentStatus)",
        "deadline: Ok(Some(1005000))",
        "end in flight: Ok(())",
        "deadline in flight: Ok(Some(1007000))",
        "read a dropped sequence: Err(JournalOverrun)",
        "release past the end: Err(InvalidParams)",
    ] {
        assert!(j.contains(want), "journal transcript lacks {want:?}:\n{j}");
    }
    let c = via_sys::clock().join("\n");
    assert!(c.contains("restore shift: -600000"), "{c}");
    let e = via_sys::errors().join("\n");
    for kind in [
        "NoAvailableHandle",
        "SegmentAlreadyExists",
        "SegmentNotFound",
        "ObjectNotFound",
        "ObjectAlreadyExists",
        "IllegalClient",
        "StaleWriteToken",
        "ReplicaIsNotReady",
        "ObjectHasLease",
        "ClockUnsupported",
        "ObjectNoReplicationTask",
        "ReplicaNotFound",
        "DeserializeFail",
        "InvalidParams",
        "InvalidWrite",
    ] {
        assert!(e.contains(&format!("Err({kind})")), "no {kind} in\n{e}");
    }
}

// The quick starts differ only in the line naming the crate (and their
// doc comments): a program switches by changing that one line.
#[test]
fn quick_start_examples_differ_only_in_the_use_line() {
    let code = |path: &str| -> Vec<String> {
        let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        text.lines()
            .filter(|l| !l.starts_with("//!"))
            .map(str::to_owned)
            .collect()
    };
    let core = code("../core/examples/quickstart.rs");
    let sys = code("examples/quickstart.rs");
    let differing: Vec<(&String, &String)> =
        core.iter().zip(&sys).filter(|(c, s)| c != s).collect();
    assert_eq!(core.len(), sys.len(), "the examples have different lengths");
    assert_eq!(
        differing,
        vec![(
            &"use mooncake_meta_core::*;".to_string(),
            &"use mooncake_meta_sys::safe::*;".to_string()
        )]
    );
}

// Segment names with a NUL byte are answered as the core answers them,
// not refused as malformed: placements skip them, copy and move targets
// are not mounted, and the refusal names the caller's segment.
#[test]
fn nul_segment_names_are_answered_as_the_core_answers_them() {
    let n = via_sys::nul_segment_names().join("\n");
    for want in [
        "validate preferring NUL: Ok(())",
        "put preferring NUL: Ok(StartedWrite",
        "batch upsert preferring NUL: [\"Ok(StartedWrite",
        "promote preferring NUL: Ok(ReplicaDescriptor",
        "copy missing key to NUL: Err(ObjectNotFound)",
        "copy to NUL: Err(SegmentNotFound)",
        "copy to mem2 (its own), NUL: Err(InvalidParams)",
        "copy to NUL, mem2 (its own): Err(SegmentNotFound)",
        "copy during a copy to NUL: Err(ObjectHasReplicationTask)",
        "move from NUL: Err(SegmentNotFound)",
        "move from mem2 to NUL: Err(SegmentNotFound)",
        "promote without disk preferring NUL: Err(ReplicaNotFound)",
        "promote with memory preferring NUL: Err(UnavailableInCurrentStatus)",
    ] {
        assert!(n.contains(want), "transcript lacks {want:?}:\n{n}");
    }
    let s = via_sys::standby_validation().join("\n");
    assert!(
        s.contains("validate: Err(UnavailableInCurrentStatus)"),
        "{s}"
    );
    assert!(s.contains("validate on the primary: Ok(())"), "{s}");
}

// The messages are the core's, after the C function's name where the
// library answered (which escapes a NUL byte as `\0`, a C string cannot
// hold one); a standby's validation says what the core says.
#[test]
fn refusals_of_nul_segment_names_and_standby_validation_say_what_the_core_says() {
    let core = via_core::nul_segment_messages();
    let sys = via_sys::nul_segment_messages();
    assert_eq!(core.len(), sys.len());
    for (c, s) in core.iter().zip(&sys) {
        let after_function = s
            .strip_prefix("mooncake_meta_")
            .and_then(|rest| rest.split_once(": "))
            .map(|(_, m)| m);
        let escaped = c.replace('\0', "\\0");
        assert!(
            s == c || after_function == Some(escaped.as_str()),
            "core {c:?}, sys {s:?}"
        );
    }
    assert_eq!(
        sys[0],
        "mooncake_meta_copy_start: segment 'a\\0b' is not mounted"
    );
    assert_eq!(
        sys[1],
        "mooncake_meta_copy_start: segment 'x\\0y' is not mounted"
    );
    assert_eq!(core.last(), sys.last());
}

// A call with malformed arguments on a standby: the core refuses it for the
// role first, the C ABI and the safe layer for its arguments first
// (README.md, "Where it differs"). Exactly these lines differ, and only
// in that way.
#[test]
fn on_a_standby_malformed_arguments_are_refused_for_them_first() {
    let core = via_core::standby_malformed();
    let sys = via_sys::standby_malformed();
    assert_eq!(core.len(), sys.len());
    let unavailable = "Err(UnavailableInCurrentStatus)";
    let invalid = "Err(InvalidParams)";
    let differing: Vec<(&str, String)> = core
        .iter()
        .zip(&sys)
        .filter(|(c, s)| c != s)
        .map(|(c, s)| {
            assert!(!c.contains(invalid), "the core answers the role first: {c}");
            // Only kinds differ, each an argument error against the role.
            assert_eq!(&s.replace(invalid, unavailable), c, "{s}");
            (
                c.split_once(": ").unwrap().0,
                s.split_once(": ").unwrap().1.to_string(),
            )
        })
        .collect();
    let labels: Vec<&str> = differing.iter().map(|(l, _)| *l).collect();
    assert_eq!(
        labels,
        [
            "exist empty key",
            "exist empty tenant",
            "exist NUL tenant",
            "put empty key",
            "put NUL group",
            "put 70000 replicas",
            "copy empty key",
            "list empty tenant",
            "regex empty tenant",
            "retain empty tenant",
            "release NUL tenant",
            "retention deadline empty tenant",
            "batch exist empty key",
            "batch put sizes mismatch",
            "batch put bad ttl",
            "batch put 2000 replicas",
            "batch put NUL group",
            "batch end tokens mismatch",
        ]
    );
    // In a batch, a malformed key fails alone; the others get the
    // standby's refusal.
    assert_eq!(
        differing[12].1,
        format!("[\"{invalid}\", \"{unavailable}\"]")
    );
    for line in &core {
        assert!(line.contains(unavailable), "{line}");
    }
}
