//! The table formats a [`super::TableLog`] can write, chosen per table.
//!
//! An enum rather than a `dyn TableFormat`: the log is `Clone` (model checkers copy
//! whole coordinators), and without the `paimon` feature (`--no-default-features`;
//! the component carries it) the enum has the native variant only, so the native path
//! compiles as before. The Paimon methods are out of line (`paimon.rs`), so that this
//! dispatch does not grow the native commit path's functions.

use alloc::vec::Vec;

use super::format::{Probe, SnapshotRecord, StoredSnapshot, StoredTag, TableFormat, TagRecord};
use super::native::NativeLog;
#[cfg(feature = "paimon")]
use super::paimon::PaimonTable;
use crate::env::{Storage, StorageError};
use crate::error::Result;
use crate::types::{Snapshot, Tag};

/// Which format a table is written in (host configuration, not state: see
/// `Coordinator::set_table_format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableFormatKind {
    /// This project's own log (`snapshot/<20 digits>`, postcard).
    #[default]
    Native,
    /// Apache Paimon append-table snapshots (needs the `paimon` feature).
    Paimon,
}

impl TableFormatKind {
    /// The configuration value: `native` or `paimon`.
    pub fn name(self) -> &'static str {
        match self {
            TableFormatKind::Native => "native",
            TableFormatKind::Paimon => "paimon",
        }
    }
}

/// One of the formats, with its caches.
#[derive(Clone, Debug)]
pub enum AnyFormat {
    /// The native log.
    Native(NativeLog),
    /// A Paimon table (boxed: its caches are larger than the log).
    #[cfg(feature = "paimon")]
    Paimon(alloc::boxed::Box<PaimonTable>),
}

impl Default for AnyFormat {
    fn default() -> Self {
        AnyFormat::Native(NativeLog)
    }
}

impl AnyFormat {
    /// A fresh format of `kind`; `invalid-config` if this build lacks it.
    pub fn of(kind: TableFormatKind) -> Result<AnyFormat> {
        match kind {
            TableFormatKind::Native => Ok(AnyFormat::Native(NativeLog)),
            #[cfg(feature = "paimon")]
            TableFormatKind::Paimon => Ok(AnyFormat::Paimon(Default::default())),
            #[cfg(not(feature = "paimon"))]
            TableFormatKind::Paimon => Err(crate::error::ErrorReason::NoPaimonFormat.into()),
        }
    }

    /// Which format this is.
    pub fn kind(&self) -> TableFormatKind {
        match self {
            AnyFormat::Native(_) => TableFormatKind::Native,
            #[cfg(feature = "paimon")]
            AnyFormat::Paimon(_) => TableFormatKind::Paimon,
        }
    }

    /// The format of the table in `st` where nothing configures it: a Paimon table has
    /// `schema/schema-0`. Costs one `get`, so callers ask only after the native reading
    /// found nothing (the native path makes no extra call).
    pub fn detect(st: &mut dyn Storage) -> Result<AnyFormat> {
        #[cfg(feature = "paimon")]
        {
            let paimon = st
                .get(super::paimon::FIRST_SCHEMA_KEY)
                .map_err(|e| super::storage_err(crate::error::StorageOp::ReadingTableSchema, e))?
                .is_some();
            if paimon {
                return Ok(AnyFormat::Paimon(Default::default()));
            }
        }
        let _ = st;
        Ok(AnyFormat::Native(NativeLog))
    }

    /// Snapshot `id` as a reader of the table sees it, committables included: the
    /// native log's record as it is; a Paimon snapshot with its committables read back
    /// from its delta manifests (gets the log's own reads never make).
    pub fn read_back(&mut self, st: &mut dyn Storage, id: u64) -> Result<Option<Snapshot>> {
        match self {
            AnyFormat::Native(f) => Ok(f.read_snapshot(st, id)?.map(|s| s.snapshot)),
            #[cfg(feature = "paimon")]
            AnyFormat::Paimon(p) => p.read_back(st, id),
        }
    }

    /// Checks one committable of an arriving event: the native log takes any bytes; a
    /// Paimon table decodes it against its schema (`invalid-event` with the reason).
    #[inline]
    pub fn check_committable(&mut self, st: &mut dyn Storage, bytes: &[u8]) -> Result<()> {
        match self {
            AnyFormat::Native(_) => {
                let _ = (st, bytes);
                Ok(())
            }
            #[cfg(feature = "paimon")]
            AnyFormat::Paimon(p) => p.check_committable(st, bytes),
        }
    }

    /// Whether [`AnyFormat::check_committable`] can refuse anything (the native log's
    /// admission skips the loop).
    #[inline]
    pub fn checks_committables(&self) -> bool {
        !matches!(self, AnyFormat::Native(_))
    }
}

/// Dispatches a call to the variant.
macro_rules! each {
    ($self:ident, $f:ident => $e:expr) => {
        match $self {
            AnyFormat::Native($f) => $e,
            #[cfg(feature = "paimon")]
            AnyFormat::Paimon($f) => $e,
        }
    };
}

impl TableFormat for AnyFormat {
    #[inline]
    fn read_snapshot(&mut self, st: &mut dyn Storage, id: u64) -> Result<Option<StoredSnapshot>> {
        each!(self, f => f.read_snapshot(st, id))
    }

    #[inline]
    fn create_snapshot(
        &mut self,
        st: &mut dyn Storage,
        record: &SnapshotRecord<'_>,
    ) -> core::result::Result<bool, StorageError> {
        each!(self, f => f.create_snapshot(st, record))
    }

    #[inline]
    fn read_hint(&mut self, st: &mut dyn Storage) -> core::result::Result<u64, StorageError> {
        each!(self, f => f.read_hint(st))
    }

    #[inline]
    fn read_earliest(&mut self, st: &mut dyn Storage) -> Result<u64> {
        each!(self, f => f.read_earliest(st))
    }

    fn probe(&mut self, st: &mut dyn Storage, id: u64) -> Result<Probe> {
        each!(self, f => f.probe(st, id))
    }

    fn earliest_after_load(&mut self, st: &mut dyn Storage, latest: u64) -> Result<u64> {
        each!(self, f => f.earliest_after_load(st, latest))
    }

    fn write_hint(
        &mut self,
        st: &mut dyn Storage,
        latest: u64,
    ) -> core::result::Result<(), StorageError> {
        each!(self, f => f.write_hint(st, latest))
    }

    #[inline]
    fn create_tag(
        &mut self,
        st: &mut dyn Storage,
        tag: &TagRecord<'_>,
    ) -> core::result::Result<bool, StorageError> {
        each!(self, f => f.create_tag(st, tag))
    }

    #[inline]
    fn read_tag(&mut self, st: &mut dyn Storage, name: &str) -> Result<Option<StoredTag>> {
        each!(self, f => f.read_tag(st, name))
    }

    #[inline]
    fn delete_tag(
        &mut self,
        st: &mut dyn Storage,
        name: &str,
    ) -> core::result::Result<(), StorageError> {
        each!(self, f => f.delete_tag(st, name))
    }

    #[inline]
    fn list_tags(&mut self, st: &mut dyn Storage) -> Result<Vec<Tag>> {
        each!(self, f => f.list_tags(st))
    }
}
