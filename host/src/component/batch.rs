//! Batches of writer events on a [`ComponentCoordinator`]: `events`,
//! `events-packed` and `events-block`.
//!
//! A 0.2.10 component has `events-block` too: the whole batch as one byte
//! string (`sink_coordinator::block`), which this host sends for
//! [`ComponentCoordinator::events_block`] and, when asked
//! ([`ComponentCoordinator::use_events_block`]), for every batch; by
//! default it measured slower here than `events-packed` (see
//! [`ComponentCoordinator::has_events_block`]). A 0.2.2 component gets
//! every batch through `events-packed`: each
//! event's committables cross as one byte block (`packed-event`), which
//! wasmtime lowers with one guest allocation per event, where the
//! `list<list<u8>>` of `events` costs one per committable plus one per
//! list, each a call into the guest's allocator. A 0.2.1 component has no
//! `events-packed` and gets `events`.
//!
//! The lowering of `packed-event` is written by hand (one view of guest
//! memory per event, where wasmtime's derived lowering looks the memory up
//! again for every field: BENCHMARKS.md, issue 10). It stands on
//! `wasmtime::component::__internal`, which wasmtime may change in any
//! release, so it sits behind the default-on cargo feature `hand-lowering`:
//! without it (or with [`ComponentCoordinator::use_derived_lowering`]) the
//! same records cross through the derived lowering, and a test runs every
//! batch both ways.

use sink_coordinator::batch::PackedEvent;
use sink_coordinator::block::{self, BlockEvent};
use sink_coordinator::{Lifecycle, WriterEvent};
#[cfg(feature = "hand-lowering")]
use wasmtime::component::__internal::{InterfaceType, LowerContext};
use wasmtime::component::{ComponentType, Lower, ResourceAny};

use super::{from_wit_batch_outcome, from_wit_error, lower_events, ComponentCoordinator};
use crate::engine::wit;
use crate::error::{BatchFailure, BatchResult, HostError, HostResult};

/// One writer event of `events-packed` with its committables' block
/// borrowed (from the entry's `Committables`, the caller's [`PackedEvent`],
/// or a buffer of a host in another language, such as the JNI library's
/// view of a Java direct buffer): what the host lowers, with no copy of its
/// own. The type check is derived; the lowering is written out below.
#[derive(Clone, Copy, Debug, ComponentType)]
#[component(record)]
pub struct PackedEventRef<'a> {
    /// The writer subtask.
    pub subtask: u32,
    /// Its attempt (informational, SEMANTICS 2).
    pub attempt: u32,
    /// The entry's checkpoint.
    pub checkpoint: u64,
    /// The entry's committables as one block (`packed-event`'s encoding).
    pub committables: &'a [u8],
    /// The entry's watermark.
    pub watermark: Option<i64>,
    /// The entry's savepoint flag.
    pub savepoint: bool,
}

impl<'a> From<&'a PackedEvent> for PackedEventRef<'a> {
    fn from(e: &'a PackedEvent) -> Self {
        PackedEventRef {
            subtask: e.subtask,
            attempt: e.attempt,
            checkpoint: e.checkpoint,
            committables: &e.committables,
            watermark: e.watermark,
            savepoint: e.savepoint,
        }
    }
}

impl<'a> From<&PackedEventRef<'a>> for BlockEvent<'a> {
    fn from(e: &PackedEventRef<'a>) -> Self {
        BlockEvent::new(
            e.subtask,
            e.attempt,
            e.checkpoint,
            e.committables,
            e.watermark,
            e.savepoint,
        )
    }
}

impl<'a> From<&BlockEvent<'a>> for PackedEventRef<'a> {
    fn from(e: &BlockEvent<'a>) -> Self {
        PackedEventRef {
            subtask: e.subtask,
            attempt: e.attempt,
            checkpoint: e.checkpoint,
            committables: e.committables,
            watermark: e.watermark,
            savepoint: e.savepoint,
        }
    }
}

/// [`PackedEventRef`] through wasmtime's derived lowering: the fallback, and the
/// reference the hand lowering is tested against.
#[derive(ComponentType, Lower)]
#[component(record)]
struct DerivedArg<'a> {
    subtask: u32,
    attempt: u32,
    checkpoint: u64,
    committables: &'a [u8],
    watermark: Option<i64>,
    savepoint: bool,
}

impl<'a> From<&PackedEventRef<'a>> for DerivedArg<'a> {
    fn from(a: &PackedEventRef<'a>) -> Self {
        DerivedArg {
            subtask: a.subtask,
            attempt: a.attempt,
            checkpoint: a.checkpoint,
            committables: a.committables,
            watermark: a.watermark,
            savepoint: a.savepoint,
        }
    }
}

/// The canonical ABI layout of `packed-event` (size 48, align 8):
/// `subtask` at 0, `attempt` at 4, `checkpoint` at 8, the block's pointer
/// and length at 16 and 20, `watermark`'s discriminant at 24 and value at
/// 32, `savepoint` at 40.
const PACKED_EVENT_SIZE: usize = 48;

#[cfg(feature = "hand-lowering")]
// SAFETY: `ComponentType` is derived from the same fields, so the type check
// guarantees the component's `packed-event` has exactly the layout written
// here (the derive computes the same offsets: checked by the test below).
// Every write is bounds-checked against the guest's memory.
unsafe impl Lower for PackedEventRef<'_> {
    /// Never used: a `packed-event` only crosses inside a list (memory).
    fn linear_lower_to_flat<T>(
        &self,
        _cx: &mut LowerContext<'_, T>,
        _ty: InterfaceType,
        _dst: &mut std::mem::MaybeUninit<Self::Lower>,
    ) -> wasmtime::Result<()> {
        Err(wasmtime::format_err!(
            "a packed-event is lowered only inside a list"
        ))
    }

    /// One event: the block through one `cabi_realloc` and one copy, then
    /// the record's fields in one view of memory (wasmtime's derived
    /// lowering looks the memory up again for every field).
    fn linear_lower_to_memory<T>(
        &self,
        cx: &mut LowerContext<'_, T>,
        _ty: InterfaceType,
        offset: usize,
    ) -> wasmtime::Result<()> {
        let out_of_bounds = || wasmtime::format_err!("packed-event out of bounds");
        let len = self.committables.len();
        // The block first: the allocation may grow (move) the memory.
        let ptr = cx.realloc(0, 0, 1, len)?;
        let memory = cx.as_slice_mut();
        memory
            .get_mut(ptr..)
            .and_then(|m| m.get_mut(..len))
            .ok_or_else(out_of_bounds)?
            .copy_from_slice(self.committables);
        let record: &mut [u8; PACKED_EVENT_SIZE] = memory
            .get_mut(offset..)
            .and_then(|m| m.first_chunk_mut())
            .ok_or_else(out_of_bounds)?;
        let ptr = u32::try_from(ptr).map_err(|_| out_of_bounds())?;
        let len = u32::try_from(len).map_err(|_| out_of_bounds())?;
        record[0..4].copy_from_slice(&self.subtask.to_le_bytes());
        record[4..8].copy_from_slice(&self.attempt.to_le_bytes());
        record[8..16].copy_from_slice(&self.checkpoint.to_le_bytes());
        record[16..20].copy_from_slice(&ptr.to_le_bytes());
        record[20..24].copy_from_slice(&len.to_le_bytes());
        record[24] = u8::from(self.watermark.is_some());
        record[32..40].copy_from_slice(&self.watermark.unwrap_or(0).to_le_bytes());
        record[40] = u8::from(self.savepoint);
        Ok(())
    }
}

type PackedParams<'a, A> = (ResourceAny, &'a [A]);
type BatchReturn = (Result<wit::BatchOutcome, wit::BatchError>,);

impl ComponentCoordinator {
    /// Whether the component has `events-packed` (WIT 0.2.2 on), which
    /// [`Self::events`] and [`Self::events_packed`] then use.
    pub fn has_events_packed(&self) -> bool {
        self.instance
            .live
            .as_ref()
            .is_some_and(|(_, b)| b.events_packed.is_some())
    }

    /// `events` (WIT 0.2.1): many writer events in one crossing, applied in
    /// order exactly as if [`Self::event`] were called for each, stopping at
    /// the first error; one merged outcome (committed snapshots and tags
    /// concatenated, restart-required ORed, the last state and
    /// committed-up-to). See [`BatchFailure`] for what an error says.
    ///
    /// A 0.2.2 component gets the batch through `events-packed`: each
    /// entry's committables are already one block (`Committables` holds
    /// them packed), lowered as they are (no host allocation but the
    /// arguments' list, one guest allocation per event).
    pub fn events(&mut self, events: Vec<WriterEvent>) -> BatchResult {
        if !self.has_events_packed() {
            return self.events_unpacked(events);
        }
        let args: Vec<PackedEventRef<'_>> = events
            .iter()
            .map(|e| PackedEventRef {
                subtask: e.subtask,
                attempt: e.attempt,
                checkpoint: e.entry.checkpoint,
                committables: e.entry.committables.as_packed(),
                watermark: e.entry.watermark,
                savepoint: e.entry.savepoint,
            })
            .collect();
        self.events_packed_refs(&args)
    }

    /// `events-packed` (WIT 0.2.2): [`Self::events`] with each event's
    /// committables already packed (see `sink_coordinator::packed`), passed
    /// to the guest as they are. An event whose block is malformed is the
    /// failing event, a fatal `invalid-event`.
    ///
    /// A 0.2.1 component gets the unpacked events through `events`; a
    /// malformed block there fails the batch at that event the same way,
    /// and the host discards the instance (it cannot make the guest fail).
    pub fn events_packed(&mut self, events: &[PackedEvent]) -> BatchResult {
        let refs: Vec<PackedEventRef<'_>> = events.iter().map(PackedEventRef::from).collect();
        self.events_packed_refs(&refs)
    }

    /// [`Self::events_packed`] with the blocks borrowed: a host that holds
    /// a batch's blocks in one buffer of its own lowers them from there.
    pub fn events_packed_refs(&mut self, events: &[PackedEventRef<'_>]) -> BatchResult {
        if self.has_events_block() {
            return self.call_block(events.iter().map(BlockEvent::from));
        }
        self.events_packed_path(events)
    }

    /// [`Self::events_packed_refs`] without `events-block`: through
    /// `events-packed`, or `events` for a 0.2.1 component.
    fn events_packed_path(&mut self, events: &[PackedEventRef<'_>]) -> BatchResult {
        if self.has_events_packed() {
            return self.call_packed(events);
        }
        let mut unpacked = Vec::with_capacity(events.len());
        for e in events {
            let owned = PackedEvent {
                subtask: e.subtask,
                attempt: e.attempt,
                checkpoint: e.checkpoint,
                committables: e.committables.to_vec(),
                watermark: e.watermark,
                savepoint: e.savepoint,
            };
            match owned.unpack() {
                Ok(e) => unpacked.push(e),
                Err(error) => {
                    let applied = unpacked.len();
                    let mut outcome = self.events_unpacked(unpacked)?;
                    self.instance.discard(&error.message());
                    outcome.state = Lifecycle::Failed;
                    return Err(Box::new(BatchFailure {
                        applied,
                        outcome,
                        error: HostError::from(error),
                    }));
                }
            }
        }
        self.events_unpacked(unpacked)
    }

    /// Whether batches go through `events-block`: the component has it
    /// (WIT 0.2.10 on) and [`Self::use_events_block`] turned it on.
    ///
    /// Off by default in this host: its hand lowering of `events-packed`
    /// writes each event's block straight to its place in guest memory
    /// (one copy), where the block costs the encoding's copy, the
    /// lowering's and the guest's copy of each event's committables out of
    /// it. Measured at P = 256, 4 × 200 B (`examples/batch_ab.rs`,
    /// BENCHMARKS.md): 49 µs per batch through `events-packed`, 63 µs
    /// through `events-block`. Hosts whose calls into the guest cost more
    /// than a copy (JavaScript, Java, Python) are the block's users.
    pub fn has_events_block(&self) -> bool {
        !self.avoid_block
            && self
                .instance
                .live
                .as_ref()
                .is_some_and(|(_, b)| b.events_block.is_some())
    }

    /// Sends batches through `events-block` when the component has it
    /// (`true`) or through `events-packed` (`false`, the default; see
    /// [`Self::has_events_block`]): the same semantics; a test runs every
    /// batch both ways.
    pub fn use_events_block(&mut self, block: bool) {
        self.avoid_block = !block;
    }

    /// `events-block` (WIT 0.2.10) with the events' block encoded into the
    /// coordinator's buffer, reused from batch to batch.
    fn call_block<'a, I>(&mut self, events: I) -> BatchResult
    where
        I: ExactSizeIterator<Item = BlockEvent<'a>>,
    {
        let mut bytes = std::mem::take(&mut self.block);
        bytes.clear();
        block::encode_into(events, &mut bytes);
        let result = self.events_block(&bytes);
        self.block = bytes;
        result
    }

    /// `events-block` (WIT 0.2.10): a whole batch already encoded as one
    /// byte string (see `sink_coordinator::block`), passed to the guest as
    /// it is: exactly [`Self::events_packed`] of the events it holds. Bytes
    /// that do not decode whole are refused before any event is applied (a
    /// fatal `invalid-event`, `applied` 0).
    ///
    /// A component before 0.2.10 has no `events-block`: the host decodes
    /// the block and sends its events as [`Self::events_packed_refs`]
    /// would; bytes that do not decode fail the batch the same way, and
    /// the host discards the instance (it cannot make the guest fail).
    pub fn events_block(&mut self, bytes: &[u8]) -> BatchResult {
        let exported = self
            .instance
            .live
            .as_ref()
            .is_some_and(|(_, b)| b.events_block.is_some());
        if !exported {
            return match block::decode(bytes) {
                Ok(events) => {
                    let refs: Vec<PackedEventRef<'_>> =
                        events.iter().map(PackedEventRef::from).collect();
                    self.events_packed_path(&refs)
                }
                Err(e) => {
                    let error = sink_coordinator::Error::from(
                        sink_coordinator::ErrorReason::MalformedEventsBlock(e),
                    );
                    self.instance.discard(&error.message());
                    Err(Box::new(BatchFailure {
                        applied: 0,
                        outcome: self.failed_outcome(),
                        error: HostError::from(error),
                    }))
                }
            };
        }
        let handle = self.handle;
        let result = self.instance.call_infallible("events-block", |store, b| {
            let func = b.events_block.ok_or_else(|| {
                wasmtime::format_err!("the component has no events-block function")
            })?;
            let typed = func.typed::<(ResourceAny, &[u8]), BatchReturn>(&*store)?;
            let (r,) = typed.call(&mut *store, (handle, bytes))?;
            Ok(r)
        });
        self.batch_result(result)
    }

    /// Sends `events-packed` through the derived lowering (`true`) or the
    /// hand-written one (`false`, the default with the `hand-lowering`
    /// feature; without it the derived lowering is the only one): both
    /// give the guest the same bytes, the hand one in fewer instructions.
    pub fn use_derived_lowering(&mut self, derived: bool) {
        self.derived_lowering = derived || !cfg!(feature = "hand-lowering");
    }

    fn call_packed(&mut self, args: &[PackedEventRef<'_>]) -> BatchResult {
        #[cfg(feature = "hand-lowering")]
        if !self.derived_lowering {
            return self.call_typed(args);
        }
        let derived: Vec<DerivedArg<'_>> = args.iter().map(DerivedArg::from).collect();
        self.call_typed(&derived)
    }

    fn call_typed<A: ComponentType + Lower>(&mut self, args: &[A]) -> BatchResult {
        let handle = self.handle;
        let result = self.instance.call_infallible("events-packed", |store, b| {
            let func = b.events_packed.ok_or_else(|| {
                wasmtime::format_err!("the component has no events-packed function")
            })?;
            let typed = func.typed::<PackedParams<'_, A>, BatchReturn>(&*store)?;
            let (r,) = typed.call(&mut *store, (handle, args))?;
            Ok(r)
        });
        self.batch_result(result)
    }

    fn events_unpacked(&mut self, events: Vec<WriterEvent>) -> BatchResult {
        let mut scratch = std::mem::take(&mut self.scratch);
        lower_events(
            &mut scratch,
            events.iter().map(|e| (e.subtask, e.attempt, &e.entry)),
        );
        let handle = self.handle;
        let result = self.instance.call_infallible("events", |s, b| {
            b.sink_coordinator_coordinator()
                .coordinator()
                .call_events(s, handle, &scratch)
        });
        self.scratch = scratch;
        self.batch_result(result)
    }

    fn batch_result(
        &mut self,
        result: HostResult<Result<wit::BatchOutcome, wit::BatchError>>,
    ) -> BatchResult {
        match result {
            Ok(Ok(o)) => {
                let outcome = from_wit_batch_outcome(o);
                self.known_up_to = outcome.committed_up_to;
                Ok(outcome)
            }
            Ok(Err(e)) => {
                let outcome = from_wit_batch_outcome(e.outcome);
                self.known_up_to = outcome.committed_up_to;
                Err(Box::new(BatchFailure {
                    applied: e.applied as usize,
                    outcome,
                    error: from_wit_error(e.error),
                }))
            }
            // A trap: the Store is gone, nothing is known of the batch.
            Err(error) => Err(Box::new(BatchFailure {
                applied: 0,
                outcome: self.failed_outcome(),
                error,
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout written by hand is the canonical ABI's.
    #[test]
    fn packed_event_layout() {
        assert_eq!(
            <PackedEventRef<'_> as ComponentType>::SIZE32,
            PACKED_EVENT_SIZE
        );
        assert_eq!(<PackedEventRef<'_> as ComponentType>::ALIGN32, 8);
        assert_eq!(<DerivedArg<'_> as ComponentType>::SIZE32, PACKED_EVENT_SIZE);
    }
}
