//! A shard's tenant table: a record stores its tenant as a small id instead
//! of the name. The default tenant is id 0 and costs no lookup; another
//! tenant's id lives while some record of the shard uses it, then is freed
//! for reuse, so the table holds only the shard's live tenants.

use crate::types::DEFAULT_TENANT;
use hashbrown::HashMap;

pub(crate) type TenantId = u32;

/// The id of [`DEFAULT_TENANT`], fixed in every shard.
pub(crate) const DEFAULT_TENANT_ID: TenantId = 0;

#[derive(Default)]
pub(crate) struct Tenants {
    /// Entry `id - 1`: the name and how many records use it (`None` free).
    names: Vec<Option<(Box<str>, u64)>>,
    ids: HashMap<Box<str>, TenantId>,
    free: Vec<TenantId>,
}

impl Tenants {
    /// The id of `name` if a record of the shard uses it. Inlined for the
    /// default tenant and for a shard with no other; the map lookup is out
    /// of line.
    #[inline]
    pub fn lookup(&self, name: &str) -> Option<TenantId> {
        if name == DEFAULT_TENANT {
            return Some(DEFAULT_TENANT_ID);
        }
        if self.ids.is_empty() {
            return None;
        }
        self.lookup_other(name)
    }

    #[inline(never)]
    fn lookup_other(&self, name: &str) -> Option<TenantId> {
        self.ids.get(name).copied()
    }

    /// The name of a live id.
    #[inline]
    pub fn name(&self, id: TenantId) -> &str {
        if id == DEFAULT_TENANT_ID {
            return DEFAULT_TENANT;
        }
        match self.names.get(id as usize - 1) {
            Some(Some((name, _))) => name,
            _ => unreachable!("tenant id {id} is not live"),
        }
    }

    /// The id of `name` for one more record using it.
    pub fn acquire(&mut self, name: &str) -> TenantId {
        if name == DEFAULT_TENANT {
            return DEFAULT_TENANT_ID;
        }
        if let Some(&id) = self.ids.get(name) {
            if let Some((_, users)) = &mut self.names[id as usize - 1] {
                *users += 1;
            }
            return id;
        }
        let entry = Some((Box::from(name), 1));
        let id = match self.free.pop() {
            Some(id) => {
                self.names[id as usize - 1] = entry;
                id
            }
            None => {
                self.names.push(entry);
                // A shard has fewer records than u32::MAX, so fewer tenants.
                TenantId::try_from(self.names.len()).expect("fewer tenants than records")
            }
        };
        self.ids.insert(Box::from(name), id);
        id
    }

    /// One record using `id` is gone; the id is freed with its last user.
    pub fn release(&mut self, id: TenantId) {
        if id == DEFAULT_TENANT_ID {
            return;
        }
        let slot = &mut self.names[id as usize - 1];
        let last = match slot {
            Some((_, users)) => {
                *users -= 1;
                *users == 0
            }
            None => unreachable!("tenant id {id} released while free"),
        };
        if last {
            let (name, _) = slot.take().expect("checked above");
            self.ids.remove(&name);
            self.free.push(id);
        }
    }

    /// Records using each live id, for the invariant checks.
    pub fn users(&self) -> impl Iterator<Item = (TenantId, u64)> + '_ {
        self.names
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|(_, n)| (i as TenantId + 1, *n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_live_while_used_and_are_reused() {
        let mut t = Tenants::default();
        assert_eq!(t.acquire(DEFAULT_TENANT), DEFAULT_TENANT_ID);
        assert_eq!(t.lookup(DEFAULT_TENANT), Some(DEFAULT_TENANT_ID));
        let a = t.acquire("a");
        assert_eq!(t.acquire("a"), a);
        let b = t.acquire("b");
        assert_ne!(a, b);
        assert_ne!(a, DEFAULT_TENANT_ID);
        assert_eq!((t.name(a), t.name(b)), ("a", "b"));
        assert_eq!(t.name(DEFAULT_TENANT_ID), DEFAULT_TENANT);
        assert_eq!(t.users().collect::<Vec<_>>(), vec![(a, 2), (b, 1)]);
        t.release(a);
        assert_eq!(t.lookup("a"), Some(a));
        t.release(a);
        assert_eq!(t.lookup("a"), None, "freed with its last user");
        let c = t.acquire("c");
        assert_eq!(c, a, "a freed id is reused");
        assert_eq!(t.name(c), "c");
        t.release(DEFAULT_TENANT_ID);
        assert_eq!(t.users().collect::<Vec<_>>(), vec![(c, 1), (b, 1)]);
    }
}
