//! Promotion from a LOCAL_DISK replica back into memory, and registering
//! LOCAL_DISK replicas. Neither is a soft-pin activation point.

use super::replication::has_task_error;
use crate::error::{Error, ErrorKind, Result};
use crate::master::MasterCore;
use crate::object::{NewRecord, Object, Replica, Replicas, Role, Task, LOCAL_DISK_SEGMENT};
use crate::segment::{BlockId, BufferOwner};
use crate::types::{ClientId, Key, Pool, ReplicaDescriptor, ReplicaKind, ReplicaStatus};

impl MasterCore {
    /// Stages a PROCESSING memory replica for an object that has a COMPLETE
    /// LOCAL_DISK replica and no memory replica.
    pub fn promotion_start(&self, k: Key<'_>, preferred: &[String]) -> Result<ReplicaDescriptor> {
        self.ensure_primary()?;
        k.validate()?;
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let obj = st.find_mut(hash, k).ok_or_else(Error::not_found)?;
        if obj.task().is_some() {
            return Err(has_task_error());
        }
        if !obj
            .replicas
            .iter()
            .any(|r| r.kind == ReplicaKind::LocalDisk && r.is_complete())
        {
            return Err(Error::new(
                ErrorKind::ReplicaNotFound,
                "no COMPLETE LOCAL_DISK replica to promote from",
            ));
        }
        if obj.replicas.iter().any(|r| r.kind == ReplicaKind::Memory) {
            return Err(Error::new(
                ErrorKind::UnavailableInCurrentStatus,
                "the object already has a memory replica",
            ));
        }
        self.check_ids_left()?;
        let id = self.replica_ids(1);
        let placed = self.segments.read().place(
            Pool::Memory,
            1,
            obj.size,
            preferred,
            &[],
            BufferOwner::object(hash),
        );
        let Some(&p) = placed.first() else {
            self.return_replica_ids(id, 1);
            self.wakeup.request_eviction();
            return Err(Error::new(
                ErrorKind::NoAvailableHandle,
                format!("no memory segment has room for {} bytes", obj.size),
            ));
        };
        let r = Replica {
            id,
            addr: p.address,
            segment: p.segment,
            block: p.block,
            kind: ReplicaKind::Memory,
            status: ReplicaStatus::Processing,
            role: Role::TaskTarget,
        };
        obj.set_task(Some(Task::Promotion { target: id }));
        obj.replicas.push(r);
        let d = r.descriptor(obj.size);
        let mark = st.discarded.len();
        self.record_key(&mut st, hash, k, mark);
        Ok(d)
    }

    /// Ends a promotion: success completes the staged replica, failure drops it.
    pub fn promotion_end(&self, k: Key<'_>, success: bool) -> Result<()> {
        self.ensure_primary()?;
        self.finish_task(k, |t| matches!(t, Task::Promotion { .. }), success)
    }

    /// Registers a COMPLETE LOCAL_DISK replica held by `client`, creating
    /// the object if absent. Idempotent per client.
    pub fn add_local_disk_replica(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
    ) -> Result<ReplicaDescriptor> {
        self.ensure_primary()?;
        k.validate()?;
        if size == 0 {
            return Err(Error::invalid("size must be positive"));
        }
        let now = self.clock.now();
        let (hash, si) = self.locate(k);
        let mut st = self.shards[si].state.write();
        let replica = |id| Replica {
            id,
            addr: client,
            segment: LOCAL_DISK_SEGMENT,
            block: BlockId::NONE,
            kind: ReplicaKind::LocalDisk,
            status: ReplicaStatus::Complete,
            role: Role::Write,
        };
        if let Some(obj) = st.find_mut(hash, k) {
            if obj.size != size {
                return Err(Error::invalid(format!(
                    "size {size} differs from the object's size {}",
                    obj.size
                )));
            }
            if obj.write_in_flight() {
                return Err(Error::new(
                    ErrorKind::UnavailableInCurrentStatus,
                    "a write is in flight on this key",
                ));
            }
            if let Some(r) = obj
                .replicas
                .iter()
                .find(|r| r.kind == ReplicaKind::LocalDisk && r.addr == client)
            {
                return Ok(r.descriptor(size));
            }
            self.check_ids_left()?;
            let r = replica(self.replica_ids(1));
            obj.replicas.push(r);
            let mark = st.discarded.len();
            self.record_key(&mut st, hash, k, mark);
            return Ok(r.descriptor(size));
        }
        self.check_ids_left()?;
        let room = st.reserve_insert()?;
        let r = replica(self.replica_ids(1));
        st.insert(
            room,
            k.tenant,
            hash,
            Object::new(NewRecord {
                key: k.key,
                size,
                writer: client,
                put_start: now,
                seq: self.new_seq(),
                write_token: self.new_token(),
                lease: 0,
                committed: None,
                replicas: Replicas::One(r),
                group: None,
                hard_pin: false,
            }),
        );
        st.keys += 1;
        let mark = st.discarded.len();
        self.record_key(&mut st, hash, k, mark);
        Ok(r.descriptor(size))
    }
}
