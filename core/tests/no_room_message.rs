//! NO_AVAILABLE_HANDLE says why a write found no room: nothing mounted in a
//! pool the write needs, or the mounted segments are full (docs/CONTRACT.md
//! §4, PutStart). A failed PutStart leaves nothing behind.
use mooncake_meta_core::*;

fn master() -> Master {
    Master::new(MasterConfig::deterministic(1_000)).unwrap()
}

fn mount(m: &Master, name: &str, base: u64, size: u64, pool: Pool) {
    let spec = SegmentSpec {
        name: name.into(),
        base,
        size,
        pool,
    };
    m.mount_segment(1, &spec).unwrap();
}

fn replicas(memory: u32, nof_ssd: u32) -> WriteConfig {
    WriteConfig {
        memory_replicas: memory,
        nof_ssd_replicas: nof_ssd,
        ..WriteConfig::default()
    }
}

/// The PutStart error for `size` bytes under `cfg`; the key stays absent.
fn no_room(m: &Master, size: u64, cfg: &WriteConfig) -> String {
    let err = m.put_start(1, Key::new("k"), size, cfg).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoAvailableHandle, "{err:?}");
    assert!(!m.exist(Key::new("k")).unwrap());
    m.check_invariants().unwrap();
    err.message().to_owned()
}

#[test]
fn nothing_mounted_says_so() {
    let m = master();
    assert_eq!(
        no_room(&m, 4096, &WriteConfig::default()),
        "cannot place 1 MEMORY + 0 NOF_SSD replica(s) of 4096 bytes (placed 0 + 0): \
         no segment is mounted in pool MEMORY"
    );
}

#[test]
fn nothing_mounted_in_either_pool_names_both() {
    let m = master();
    let msg = no_room(&m, 4096, &replicas(1, 1));
    assert!(
        msg.ends_with(
            ": no segment is mounted in pool MEMORY; no segment is mounted in pool NOF_SSD"
        ),
        "{msg}"
    );
}

#[test]
fn only_the_other_pool_mounted_names_the_missing_pool() {
    let m = master();
    mount(&m, "mem", 0x1000_0000, 1 << 20, Pool::Memory);
    let msg = no_room(&m, 4096, &replicas(0, 1));
    assert!(
        msg.ends_with("(placed 0 + 0): no segment is mounted in pool NOF_SSD"),
        "{msg}"
    );
}

#[test]
fn full_segments_say_there_is_no_room() {
    let m = master();
    mount(&m, "small", 0x1000_0000, 4096, Pool::Memory);
    let msg = no_room(&m, 1 << 20, &WriteConfig::default());
    assert!(
        msg.ends_with("(placed 0 + 0): no MEMORY segment has room (1 mounted)"),
        "{msg}"
    );
    assert!(
        !msg.contains("not mounted") && !msg.contains("is mounted"),
        "{msg}"
    );
}

#[test]
fn too_few_segments_for_distinct_replicas_say_how_many_fit() {
    let m = master();
    mount(&m, "mem", 0x1000_0000, 1 << 20, Pool::Memory);
    mount(&m, "ssd", 0x9000_0000, 1 << 20, Pool::NofSsd);
    let msg = no_room(&m, 4096, &replicas(2, 1));
    assert!(
        msg.ends_with(
            "(placed 1 + 1): only 1 of 2 MEMORY replicas fit on the 1 mounted segment(s), \
             one replica per segment"
        ),
        "{msg}"
    );
    // Nothing stayed allocated, and the failure was counted.
    let metrics = m.metrics();
    assert_eq!(metrics.memory_allocated_bytes, 0);
    assert_eq!(metrics.nof_ssd_allocated_bytes, 0);
    assert_eq!(metrics.put_start_failures, 1);
}
