//! Test hook (hidden from the docs): the internal state beyond a
//! snapshot's object records — writes in flight with their pending
//! intents, replica roles, tasks, discarded buffers (all in a format-5
//! snapshot too), allocator blocks and the gauges — in a form that does
//! not depend on this master's key-hash seed, shard count or segment ids,
//! so two masters holding the same state (a primary and a standby that
//! applied its journal, or was restored from its snapshot) produce equal
//! dumps.

use crate::master::MasterCore;
use crate::object::{Role, Task};
use std::sync::atomic::Ordering;

/// One object's state beyond its snapshot record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectDump {
    pub tenant: String,
    pub key: String,
    /// `Some(pending intent, as text)` while a write of the object is in
    /// flight.
    pub in_flight: Option<String>,
    /// The task (kind and replica ids), as text.
    pub task: Option<String>,
    /// `(replica id, task target)` for every replica, by id.
    pub roles: Vec<(u64, bool)>,
}

/// What [`MasterCore::debug_dump`] returns; every list sorted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StateDump {
    pub objects: Vec<ObjectDump>,
    /// `(segment name, address, len, release instant)` of every discarded
    /// buffer.
    pub discarded: Vec<(String, u64, u64, u64)>,
    /// `(segment name, address, len, owning replica id)` of every allocated
    /// block (a discarded buffer keeps the id of the replica it was;
    /// `u64::MAX` for a block that neither a replica nor a discarded buffer
    /// names, which no quiet master has).
    pub blocks: Vec<(String, u64, u64, u64)>,
    /// Objects (per-shard counts summed), committed soft pins (gauge),
    /// discarded bytes (gauge), live index registrations, writes in flight.
    pub gauges: [i64; 5],
}

impl MasterCore {
    /// The state beyond the object records, independent of hash seed, shard count
    /// and segment ids (see the module docs). Takes each shard's read lock
    /// in turn (with the segment table's inside it, in lock order): call it
    /// on a quiet master.
    #[doc(hidden)]
    pub fn debug_dump(&self) -> StateDump {
        let mut d = StateDump::default();
        // Which replica each block is, by (segment, block): a block records
        // only its object.
        let mut replica_of = hashbrown::HashMap::new();
        for shard in self.shards.iter() {
            let st = shard.state.read();
            let table = self.segments.read();
            let name = |id| {
                table
                    .get(id)
                    .map_or_else(|| format!("<unmounted {id}>"), |s| s.name.to_string())
            };
            for obj in st.iter() {
                let k = st.key_of(obj);
                let in_flight = st
                    .in_flight
                    .get(obj.write_token)
                    .map(|w| format!("{:?}", w.pending));
                let task = obj.task().map(|t| match t {
                    Task::Copy { source, targets } => format!("copy {source} -> {targets:?}"),
                    Task::Move { source, target } => format!("move {source} -> {target}"),
                    Task::Promotion { target } => format!("promotion -> {target}"),
                });
                for r in obj.replicas.iter().filter(|r| r.has_buffer()) {
                    replica_of.insert((r.segment, r.block), r.id);
                }
                let mut roles: Vec<(u64, bool)> = obj
                    .replicas
                    .iter()
                    .map(|r| (r.id, r.role == Role::TaskTarget))
                    .collect();
                roles.sort_unstable();
                d.objects.push(ObjectDump {
                    tenant: k.tenant.to_owned(),
                    key: k.key.to_owned(),
                    in_flight,
                    task,
                    roles,
                });
            }
            for x in &st.discarded {
                replica_of.insert((x.segment, x.block), x.replica);
                d.discarded
                    .push((name(x.segment), x.addr, x.len, x.release_at));
            }
            d.gauges[0] += st.keys;
            d.gauges[1] += shard.soft_pin_keys.load(Ordering::Relaxed);
            d.gauges[2] += st.discarded_bytes;
            d.gauges[4] += st.in_flight.len() as i64;
        }
        let table = self.segments.read();
        for seg in table.iter() {
            for b in seg.live_buffers() {
                let id = replica_of.get(&(seg.id, b.block)).copied();
                d.blocks.push((
                    seg.name.to_string(),
                    b.address,
                    b.len,
                    id.unwrap_or(u64::MAX),
                ));
            }
        }
        d.gauges[3] = self.index.live() as i64;
        d.objects.sort();
        d.discarded.sort();
        d.blocks.sort();
        d
    }
}
