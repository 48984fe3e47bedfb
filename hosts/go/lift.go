package sinkcoord

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"

	"github.com/sink-coordinator/sink-coordinator-go/internal/abi"
)

var le = binary.LittleEndian

// lifter reads results out of guest memory (layouts: docs/embedding.md
// section 4; the offsets are package abi's, generated from the WIT). A read outside memory does not panic: it records the first
// problem and yields zero, and the call then fails with a TrapError.
type lifter struct {
	mem api.Memory
	err error
}

func (l *lifter) fail(format string, args ...any) {
	if l.err == nil {
		l.err = fmt.Errorf(format, args...)
	}
}

// read is one fixed-size value at p by get (a wazero Memory reader).
func read[T any](l *lifter, p uint32, get func(uint32) (T, bool)) T {
	v, ok := get(p)
	if !ok {
		l.fail("a result at %d is outside memory", p)
	}
	return v
}

func (l *lifter) u8(p uint32) uint8   { return read(l, p, l.mem.ReadByte) }
func (l *lifter) u32(p uint32) uint32 { return read(l, p, l.mem.ReadUint32Le) }
func (l *lifter) u64(p uint32) uint64 { return read(l, p, l.mem.ReadUint64Le) }

func (l *lifter) bool(p uint32) bool {
	switch l.u8(p) {
	case 0:
		return false
	case 1:
		return true
	}
	l.fail("a bool at %d is neither 0 nor 1", p)
	return false
}

// view is n bytes at ptr (a list<u8> or string), or nil after a failure.
func (l *lifter) view(ptr, n uint32) []byte {
	return l.elements(ptr, n, 1)
}

// elements is n elements of size bytes at ptr (a list), or nil after a failure.
func (l *lifter) elements(ptr, n, size uint32) []byte {
	total := uint64(n) * uint64(size)
	if total > 1<<32-1 {
		l.fail("a list of %d elements does not fit memory", n)
		return nil
	}
	b, ok := l.mem.Read(ptr, uint32(total))
	if !ok {
		l.fail("a list at %d (%d bytes) is outside memory", ptr, total)
		return nil
	}
	return b
}

// list is the (ptr, len) descriptor of a list or string at p.
func (l *lifter) list(p uint32) (ptr, n uint32) {
	return l.u32(p + abi.ListPtr), l.u32(p + abi.ListLen)
}

func (l *lifter) bytes(p uint32) []byte {
	v := l.view(l.list(p))
	if v == nil {
		return nil
	}
	return append([]byte{}, v...) // copied: guest memory is freed by post-return
}

func (l *lifter) str(p uint32) string {
	v := l.view(l.list(p))
	if !utf8.Valid(v) {
		l.fail("a string at %d is not UTF-8", p)
	}
	return string(v)
}

func (l *lifter) strings(p uint32) []string {
	ptr, n := l.list(p)
	if l.elements(ptr, n, abi.ListSize) == nil {
		return nil
	}
	out := make([]string, n)
	for i := range n {
		out[i] = l.str(ptr + abi.ListSize*i)
	}
	return out
}

func (l *lifter) u64s(p uint32) []uint64 {
	ptr, n := l.list(p)
	v := l.elements(ptr, n, 8)
	out := make([]uint64, len(v)/8)
	for i := range out {
		out[i] = le.Uint64(v[8*i:])
	}
	return out
}

// optU64 is option<u64> (also option<s64>, the same layout) at p.
func (l *lifter) optU64(p uint32) *uint64 {
	switch l.u8(p) {
	case 0:
		return nil
	case 1:
		v := l.u64(p + abi.OptionU64Payload)
		return &v
	}
	l.fail("an option at %d has discriminant %d", p, l.u8(p))
	return nil
}

func (l *lifter) optS64(p uint32) *int64 {
	v := l.optU64(p)
	if v == nil {
		return nil
	}
	s := int64(*v)
	return &s
}

func (l *lifter) lifecycle(p uint32) Lifecycle {
	v := l.u8(p)
	if int(v) >= len(lifecycleNames) {
		l.fail("a lifecycle at %d is %d", p, v)
	}
	return Lifecycle(v)
}

// callError is the error record at p.
func (l *lifter) callError(p uint32) error {
	kind := l.u8(p + abi.ErrorKind)
	if kind > uint8(KindCorruptState) {
		l.fail("an error kind at %d is %d", p, kind)
		return nil
	}
	return newCallError(ErrorKind(kind), l.str(p+abi.ErrorMessage))
}

// outcome at p.
func (l *lifter) outcome(p uint32) Outcome {
	return Outcome{
		State:           l.lifecycle(p + abi.OutcomeState),
		Committed:       l.u64s(p + abi.OutcomeCommitted),
		TagsCreated:     l.strings(p + abi.OutcomeTagsCreated),
		TagsDeleted:     l.strings(p + abi.OutcomeTagsDeleted),
		RestartRequired: l.bool(p + abi.OutcomeRestartRequired),
		CommittedUpTo:   l.optU64(p + abi.OutcomeCommittedUpTo),
	}
}

// entry at p.
func (l *lifter) entry(p uint32) Entry {
	ptr, n := l.list(p + abi.EntryCommittables)
	var committables [][]byte
	if l.elements(ptr, n, abi.ListSize) != nil {
		committables = make([][]byte, n)
		for i := range n {
			committables[i] = l.bytes(ptr + abi.ListSize*i)
		}
	}
	return Entry{
		Checkpoint: l.u64(p + abi.EntryCheckpoint), Committables: committables,
		Watermark: l.optS64(p + abi.EntryWatermark), Savepoint: l.bool(p + abi.EntrySavepoint),
	}
}

// snapshot at p; its committables are tuple<u32, list<u8>>.
func (l *lifter) snapshot(p uint32) Snapshot {
	ptr, n := l.list(p + abi.SnapshotCommittables)
	var committables []Committable
	if l.elements(ptr, n, abi.TupleU32ListU8Size) != nil {
		committables = make([]Committable, n)
		for i := range n {
			e := ptr + abi.TupleU32ListU8Size*i
			committables[i] = Committable{Subtask: l.u32(e + abi.TupleU32ListU8F0), Bytes: l.bytes(e + abi.TupleU32ListU8F1)}
		}
	}
	return Snapshot{
		ID: l.u64(p + abi.SnapshotId), CommitUser: l.str(p + abi.SnapshotCommitUser),
		Identifier: l.u64(p + abi.SnapshotIdentifier), Watermark: l.optS64(p + abi.SnapshotWatermark),
		TimeMs: l.u64(p + abi.SnapshotTimeMs), Committables: committables,
	}
}

// tag at p.
func (l *lifter) tag(p uint32) Tag {
	return Tag{
		Name: l.str(p + abi.TagName), SnapshotID: l.u64(p + abi.TagSnapshotId),
		Identifier: l.u64(p + abi.TagIdentifier), CreateTimeMs: l.u64(p + abi.TagCreateTimeMs),
		ExpireTimeMs: l.optU64(p + abi.TagExpireTimeMs),
	}
}

// batchOutcome at p; its effects are an option<batch-effects>.
func (l *lifter) batchOutcome(p uint32) BatchOutcome {
	out := BatchOutcome{State: l.lifecycle(p + abi.BatchOutcomeState), CommittedUpTo: l.optU64(p + abi.BatchOutcomeCommittedUpTo)}
	opt := p + abi.BatchOutcomeEffects
	switch l.u8(opt) {
	case 0:
	case 1:
		e := opt + abi.OptionBatchEffectsPayload
		out.Effects = &BatchEffects{
			Committed: l.u64s(e + abi.BatchEffectsCommitted), TagsCreated: l.strings(e + abi.BatchEffectsTagsCreated),
			TagsDeleted: l.strings(e + abi.BatchEffectsTagsDeleted), RestartRequired: l.bool(e + abi.BatchEffectsRestartRequired),
		}
	default:
		l.fail("an option at %d has discriminant %d", opt, l.u8(opt))
	}
	return out
}
