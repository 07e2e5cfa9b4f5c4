//! Coverage counters for the model-based test: which (operation, result
//! code) pairs and which model transitions (commit-table cells, carries,
//! eviction passes, ...) the generated sequences reach. Off unless a test
//! enables it for its thread, so the CI run pays one branch per hit.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static OP: Cell<&'static str> = const { Cell::new("") };
    static HITS: RefCell<BTreeMap<String, u64>> = const { RefCell::new(BTreeMap::new()) };
}

pub fn enable() {
    ON.with(|o| o.set(true));
}

/// Names the operation whose results the next hits belong to.
pub fn set_op(name: &'static str) {
    OP.with(|o| o.set(name));
}

pub fn hit(event: impl FnOnce() -> String) {
    if ON.with(Cell::get) {
        let e = event();
        HITS.with(|h| *h.borrow_mut().entry(e).or_default() += 1);
    }
}

/// Records the result code of the current operation.
pub fn result(code: &str) {
    hit(|| format!("{}: {code}", OP.with(Cell::get)));
}

pub fn take() -> BTreeMap<String, u64> {
    HITS.with(|h| std::mem::take(&mut *h.borrow_mut()))
}
