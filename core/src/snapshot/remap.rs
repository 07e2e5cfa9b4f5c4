//! Moving a snapshot's instants onto the restoring master's timeline
//! (docs/CONTRACT.md §6): every stored instant shifts by the change in skew
//! (`timeline − wall`) between capture and restore, so a lifetime keeps the
//! wall-clock length it had left however the two masters' timelines drifted.
//! Equal skews — always the case with manual clocks — and snapshots
//! without a wall record (format 1, and formats 3 to 5 when it is absent)
//! restore verbatim.

use super::image::SnapshotImage;
use crate::clock::{remap_instant, restore_shift, skew_of};

/// The capturing master's skew (`created_at − wall_at_capture`); `None`
/// for an image without a wall record.
pub fn capture_skew(image: &SnapshotImage) -> Option<i64> {
    image
        .wall_at_capture
        .map(|wall| skew_of(image.created_at, wall))
}

/// The shift restore applies to `image` on a master whose skew is
/// `skew_now`: 0 for an image without a wall record.
pub fn shift_for(image: &SnapshotImage, skew_now: i64) -> i64 {
    match image.wall_at_capture {
        Some(wall) => restore_shift(skew_now, image.created_at, wall),
        None => 0,
    }
}

/// Shifts every stored instant of `image` by `delta` ms, saturating within
/// `[0, MAX_INSTANT]` (a saturated deadline stays saturated). The capture
/// instant itself is left as recorded: it orders candidates and is reported.
pub fn shift_instants(image: &mut SnapshotImage, delta: i64) {
    if delta == 0 {
        return;
    }
    for g in &mut image.groups {
        g.lease = remap_instant(g.lease, delta);
    }
    for r in &mut image.retention {
        r.deadline = remap_instant(r.deadline, delta);
    }
    for o in &mut image.objects {
        o.put_start = remap_instant(o.put_start, delta);
        o.lease = remap_instant(o.lease, delta);
        o.soft_pin_deadline = o.soft_pin_deadline.map(|d| remap_instant(d, delta));
    }
}
