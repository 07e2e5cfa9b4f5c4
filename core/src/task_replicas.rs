//! The one rule an object's copy, move or promotion task and its replicas
//! keep, as a master holds them (`ops::replication`, `ops::promotion`):
//! journal apply checks it of every object image it installs
//! (`journal::apply`, `check_image`) and snapshot validation of every task
//! an image lists (`snapshot::validate`, `check_task_replicas`), each over
//! its own representation turned into the neutral one here ([`TaskReplica`]
//! per replica, the task as its [`TaskImage`], which both share), and each
//! words a [`Violation`] with its own prefix (which object, which task).
//!
//! - A copy has at least one target, its targets are strictly increasing,
//!   and a copy's or move's source is not among them.
//! - A target the object holds is a PROCESSING buffer replica (a MEMORY one
//!   for a promotion); a source the object holds is a COMPLETE buffer
//!   replica. (A target or the source may be gone: an unmount drops its
//!   replica and leaves the task, which then fails at its end.)
//! - Where the representation keeps a replica's role (a journal image): a
//!   task-target replica is targeted by the object's task (a task target
//!   with no task, or not targeted, is refused), and a write replica is
//!   not. (A snapshot keeps no role: a replica is a task target iff its
//!   object's task targets it.)
//!
//! One merge walk of the replicas and the targets, both sorted by id:
//! O(replicas + targets), whatever their numbers (a copy may have 100 000
//! targets).

use crate::journal::record::{ReplicaRole, TaskImage};
use crate::types::{ReplicaKind, ReplicaStatus};
use std::fmt;

/// One replica of the object, as the rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskReplica {
    pub id: u64,
    pub status: ReplicaStatus,
    /// `None` where the representation keeps no role (a snapshot's: a
    /// replica is a task target iff its object's task targets it).
    pub role: Option<ReplicaRole>,
    /// A buffer replica is a MEMORY or NOF_SSD one.
    pub kind: ReplicaKind,
}

/// The first part of the rule a task and its object's replicas break.
/// Its text (`Display`) is the same for every caller; each puts its own
/// prefix before it (which object, which task).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Violation {
    /// A copy with no targets.
    NoTargets,
    /// A copy whose targets are not strictly increasing.
    TargetsNotIncreasing,
    /// A copy's or move's source is one of its targets.
    SourceIsTarget { source: u64 },
    /// A write replica the task targets.
    TargetedWrite { id: u64 },
    /// A task-target replica the object's task does not target (or the
    /// object has no task).
    UntargetedTaskTarget { id: u64 },
    /// A target held that is not a PROCESSING buffer replica (`promotion`:
    /// not a PROCESSING MEMORY replica).
    Target {
        id: u64,
        status: ReplicaStatus,
        kind: ReplicaKind,
        promotion: bool,
    },
    /// A source held that is not a COMPLETE buffer replica.
    Source {
        id: u64,
        status: ReplicaStatus,
        kind: ReplicaKind,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = |s: ReplicaStatus| match s {
            ReplicaStatus::Processing => "PROCESSING",
            ReplicaStatus::Complete => "COMPLETE",
        };
        match *self {
            Violation::NoTargets => f.write_str("a copy without targets"),
            Violation::TargetsNotIncreasing => f.write_str("copy targets not strictly increasing"),
            Violation::SourceIsTarget { source } => {
                write!(f, "replica {source} is the task's source and target")
            }
            Violation::TargetedWrite { id } => {
                write!(
                    f,
                    "replica {id} is a target of the task but not a task target"
                )
            }
            Violation::UntargetedTaskTarget { id } => {
                write!(
                    f,
                    "task target {id} is not a target of a task of the object"
                )
            }
            Violation::Target {
                id,
                status: s,
                kind,
                promotion,
            } => {
                let want = if promotion { "Memory" } else { "buffer" };
                write!(
                    f,
                    "target {id} is a {} {kind:?} replica, not a PROCESSING {want} replica",
                    status(s)
                )
            }
            Violation::Source {
                id,
                status: s,
                kind,
            } => write!(
                f,
                "source {id} is a {} {kind:?} replica, not a COMPLETE buffer replica",
                status(s)
            ),
        }
    }
}

/// Checks the rule (module docs) of the object's task `task` (`None`: it
/// has none) and its replicas, sorted by id, ids distinct (each caller
/// checks that first). The first violation, in this order: the task's own
/// shape (targets, source), then the replicas in id order, each's role
/// before its status and kind.
pub(crate) fn check(
    task: Option<&TaskImage>,
    replicas: impl IntoIterator<Item = TaskReplica>,
) -> Result<(), Violation> {
    let (source, targets, promotion): (Option<u64>, &[u64], bool) = match task {
        None => (None, &[], false),
        Some(TaskImage::Copy { source, targets }) => (Some(*source), targets, false),
        Some(TaskImage::Move { source, target }) => {
            (Some(*source), std::slice::from_ref(target), false)
        }
        Some(TaskImage::Promotion { target }) => (None, std::slice::from_ref(target), true),
    };
    if task.is_some() && targets.is_empty() {
        return Err(Violation::NoTargets);
    }
    if targets.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Violation::TargetsNotIncreasing);
    }
    if let Some(source) = source {
        if targets.binary_search(&source).is_ok() {
            return Err(Violation::SourceIsTarget { source });
        }
    }
    // The targets not yet passed: both lists ascend, so each replica finds
    // whether it is targeted where the last one left off.
    let mut rest = targets;
    let mut last: Option<u64> = None;
    for r in replicas {
        debug_assert!(last < Some(r.id), "replicas sorted by unique id");
        last = Some(r.id);
        // A target below this replica is held by no replica left (an
        // unmount took it): passed, once, as the merge goes.
        while let Some((&t, after)) = rest.split_first() {
            if t >= r.id {
                break;
            }
            rest = after;
        }
        let targeted = rest.first() == Some(&r.id);
        match (r.role, targeted) {
            (Some(ReplicaRole::Write), true) => {
                return Err(Violation::TargetedWrite { id: r.id });
            }
            (Some(ReplicaRole::TaskTarget), false) => {
                return Err(Violation::UntargetedTaskTarget { id: r.id });
            }
            _ => {}
        }
        if targeted {
            let fits = r.status == ReplicaStatus::Processing
                && match r.kind {
                    ReplicaKind::Memory => true,
                    ReplicaKind::NofSsd => !promotion,
                    ReplicaKind::LocalDisk => false,
                };
            if !fits {
                return Err(Violation::Target {
                    id: r.id,
                    status: r.status,
                    kind: r.kind,
                    promotion,
                });
            }
        } else if source == Some(r.id)
            && (r.status != ReplicaStatus::Complete || r.kind == ReplicaKind::LocalDisk)
        {
            return Err(Violation::Source {
                id: r.id,
                status: r.status,
                kind: r.kind,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReplicaKind::{LocalDisk, Memory, NofSsd};
    use ReplicaStatus::{Complete, Processing};

    fn rep(
        id: u64,
        status: ReplicaStatus,
        role: Option<ReplicaRole>,
        kind: ReplicaKind,
    ) -> TaskReplica {
        TaskReplica {
            id,
            status,
            role,
            kind,
        }
    }

    fn copy(source: u64, targets: Vec<u64>) -> TaskImage {
        TaskImage::Copy { source, targets }
    }

    #[test]
    fn each_violation_is_found_and_worded() {
        let src = rep(2, Complete, Some(ReplicaRole::Write), Memory);
        let tgt = |id, status, kind| rep(id, status, Some(ReplicaRole::TaskTarget), kind);
        let cases: Vec<(Option<TaskImage>, Vec<TaskReplica>, &str)> = vec![
            (Some(copy(2, vec![])), vec![src], "a copy without targets"),
            (
                Some(copy(2, vec![4, 3])),
                vec![src],
                "copy targets not strictly increasing",
            ),
            (
                Some(copy(2, vec![2, 3])),
                vec![src],
                "replica 2 is the task's source and target",
            ),
            (
                Some(copy(1, vec![2])),
                vec![src],
                "replica 2 is a target of the task but not a task target",
            ),
            (
                None,
                vec![src, tgt(3, Processing, Memory)],
                "task target 3 is not a target of a task of the object",
            ),
            (
                Some(copy(2, vec![3])),
                vec![src, tgt(3, Complete, NofSsd)],
                "target 3 is a COMPLETE NofSsd replica, not a PROCESSING buffer replica",
            ),
            (
                Some(TaskImage::Promotion { target: 3 }),
                vec![src, tgt(3, Processing, NofSsd)],
                "target 3 is a PROCESSING NofSsd replica, not a PROCESSING Memory replica",
            ),
            (
                Some(TaskImage::Move {
                    source: 1,
                    target: 3,
                }),
                vec![rep(1, Complete, None, LocalDisk), src],
                "source 1 is a COMPLETE LocalDisk replica, not a COMPLETE buffer replica",
            ),
        ];
        for (task, replicas, want) in cases {
            let got = check(task.as_ref(), replicas.iter().copied());
            assert_eq!(got.map_err(|v| v.to_string()), Err(want.to_owned()));
        }
        // Without roles (a snapshot's), a targeted replica is a task target.
        let ok = [
            rep(2, Complete, None, Memory),
            rep(3, Processing, None, NofSsd),
        ];
        assert_eq!(check(Some(&copy(2, vec![3])), ok), Ok(()));
    }

    #[test]
    fn targets_and_source_the_object_no_longer_holds_are_passed() {
        // 100 000 targets, every other one held, the source gone: one walk.
        let n = 100_000u64;
        let task = copy(0, (1..=n).collect());
        let held = (2..=n)
            .step_by(2)
            .map(|id| rep(id, Processing, Some(ReplicaRole::TaskTarget), Memory));
        assert_eq!(check(Some(&task), held.clone()), Ok(()));
        // The last one held is checked too.
        let last = held.map(|r| TaskReplica {
            status: if r.id == n { Complete } else { Processing },
            ..r
        });
        assert_eq!(
            check(Some(&task), last),
            Err(Violation::Target {
                id: n,
                status: Complete,
                kind: Memory,
                promotion: false
            })
        );
    }
}
