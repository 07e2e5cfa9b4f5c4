//! ListKeys pages (docs/CONTRACT.md §3): pages joined equal the whole
//! listing in byte order, and a page costs memory for what it returns, not
//! for every key after the cursor (a counting global allocator, in this test
//! binary only, records the peak of live heap bytes during a call).
//!
//! One #[test] only: the counter is global, so nothing else may allocate
//! concurrently while a call is measured.
mod common;
mod support;

use common::*;
use mooncake_meta_core::*;
use support::counting::{peak_during, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn pages(m: &Master, tenant: &str, prefix: &str, limit: usize) -> Vec<String> {
    let (mut all, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = m
            .list_keys(tenant, prefix, after.as_deref(), limit)
            .unwrap();
        assert!(
            limit == 0 || page.keys.len() <= limit,
            "a page longer than its limit"
        );
        all.extend(page.keys);
        match page.next {
            Some(n) => after = Some(n),
            None => return all,
        }
    }
}

#[test]
fn pages_join_to_the_listing_and_cost_what_they_return() {
    let m = master_with(config(), 1, 0, 1 << 30);
    let w = WriteConfig::default();
    // Keys that are prefixes of others, multi-byte UTF-8, another tenant.
    let odd = ["a", "ab", "abc", "é", "éa", "ß/1", "z", "a/\u{10FFFF}"];
    for key in odd {
        put(&m, key, 64, &w);
        m.put_start(C1, Key::scoped("other", key), 64, &w).unwrap();
    }
    let mut want: Vec<String> = odd.iter().map(|s| s.to_string()).collect();
    for i in 0..5_000 {
        let key = format!("k/{:08}", (i * 7919) % 5_000);
        put(&m, &key, 64, &w);
        want.push(key);
    }
    want.sort();
    assert_eq!(pages(&m, DEFAULT_TENANT, "", 7), want, "pages of 7");
    assert_eq!(pages(&m, DEFAULT_TENANT, "", 0), want, "one unlimited page");
    let a: Vec<String> = want
        .iter()
        .filter(|k| k.starts_with('a'))
        .cloned()
        .collect();
    assert_eq!(pages(&m, DEFAULT_TENANT, "a", 2), a, "prefix a, pages of 2");
    assert_eq!(pages(&m, DEFAULT_TENANT, "a", 1), a, "prefix a, pages of 1");
    assert_eq!(
        pages(&m, DEFAULT_TENANT, "a", usize::MAX),
        a,
        "a limit of usize::MAX"
    );
    let page = m
        .list_keys(DEFAULT_TENANT, "", Some("\u{10FFFF}"), 5)
        .unwrap();
    assert!(
        page.keys.is_empty() && page.next.is_none(),
        "after every key"
    );

    // A page of 10 from the start copies 11 keys, not 5 000: well under
    // the ~160 KiB the whole listing takes as strings.
    let (page, peak) = peak_during(|| m.list_keys(DEFAULT_TENANT, "k/", None, 10).unwrap());
    assert_eq!(page.keys.len(), 10);
    assert_eq!(page.next.as_deref(), Some("k/00000009"));
    assert!(
        peak < 16 << 10,
        "a page of 10 took {peak} bytes at its peak"
    );
}
