//! Storage fault drills for the coordinator's table log: the Flink tests
//! (and an operator rehearsing an outage) ask for failing writes so that the
//! connector's SEMANTICS 8 handling runs for real — `storage` errors repeated
//! by the coordinator, exhausted repeats failing the job, and the recovery
//! that follows committing with `restart-required`.
//!
//! Faults hit writes only (`put-if-absent`, `put`, `delete`): reads stay
//! exact, so a drill never makes the component see a table that is not
//! there. Every other periodic fault lands the write first and then reports
//! the error (an ambiguous failure, SEMANTICS 8), so both kinds are drilled;
//! in an outage no write lands.

use sink_coordinator_host::core::{Storage, StorageError};

/// Which writes fail. Both off is a plain pass-through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Every `every`-th write fails (0: never).
    pub every: u32,
    /// After this many writes, every write fails (`None`: never).
    pub fail_after: Option<u64>,
}

/// A storage whose writes fail as its [`FaultPlan`] says.
pub struct DrilledStorage<S> {
    inner: S,
    plan: FaultPlan,
    writes: u64,
    faults: u64,
}

impl<S: Storage> DrilledStorage<S> {
    /// `inner` behind `plan`.
    pub fn new(inner: S, plan: FaultPlan) -> Self {
        DrilledStorage {
            inner,
            plan,
            writes: 0,
            faults: 0,
        }
    }

    /// Runs one write through the plan: `Ok(f())` when it passes; else the
    /// injected error, after running `f` for every other fault (landed, then
    /// reported as failed).
    fn write<T>(
        &mut self,
        what: &str,
        key: &str,
        f: impl FnOnce(&mut S) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        self.writes += 1;
        let n = self.writes;
        let periodic = self.plan.every > 0 && n.is_multiple_of(u64::from(self.plan.every));
        let outage = self.plan.fail_after.is_some_and(|after| n > after);
        if !periodic && !outage {
            return f(&mut self.inner);
        }
        self.faults += 1;
        // In an outage nothing lands (a landed write would let the repeat
        // find its snapshot and succeed on reads alone).
        let landed = !outage && self.faults.is_multiple_of(2);
        if landed {
            f(&mut self.inner)?;
        }
        Err(StorageError::Io(format!(
            "injected fault (storage drill) on {what} {key}, write {n}{}",
            if landed { " (the write landed)" } else { "" }
        )))
    }
}

impl<S: Storage> Storage for DrilledStorage<S> {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.write("put-if-absent", key, |s| s.put_if_absent(key, value))
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.write("put", key, |s| s.put(key, value))
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.write("delete", key, |s| s.delete(key))
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.inner.list(prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator_host::core::MemStorage;

    #[test]
    fn every_nth_write_fails_alternately_before_and_after_landing() {
        let plan = FaultPlan {
            every: 2,
            fail_after: None,
        };
        let mut s = DrilledStorage::new(MemStorage::default(), plan);
        assert_eq!(s.put_if_absent("a", b"1"), Ok(true));
        // Write 2: the first fault, before landing.
        assert!(s.put_if_absent("b", b"2").is_err());
        assert_eq!(s.get("b"), Ok(None));
        assert_eq!(s.put_if_absent("c", b"3"), Ok(true));
        // Write 4: the second fault, after landing.
        let e = s.put_if_absent("d", b"4").unwrap_err();
        assert!(format!("{e}").contains("landed"), "{e}");
        assert_eq!(s.get("d"), Ok(Some(b"4".to_vec())));
        assert_eq!(s.list(""), Ok(vec!["a".into(), "c".into(), "d".into()]));
    }

    #[test]
    fn an_outage_fails_every_write_after_its_start() {
        let plan = FaultPlan {
            every: 0,
            fail_after: Some(1),
        };
        let mut s = DrilledStorage::new(MemStorage::default(), plan);
        assert_eq!(s.put("a", b"1"), Ok(()));
        for _ in 0..5 {
            assert!(s.put("b", b"2").is_err());
        }
        assert_eq!(s.get("a"), Ok(Some(b"1".to_vec())));
        assert_eq!(s.get("b"), Ok(None), "nothing lands in an outage");
    }
}
