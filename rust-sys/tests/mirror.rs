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
    journal
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
