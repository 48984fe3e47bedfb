package sinkcoord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sink-coordinator/sink-coordinator-go/internal/abi"
)

// instance is one instantiation of the compiled module: the glue the
// component model would generate (resource table, lowering, lifting,
// post-return) and the trap rule (never re-enter a trapped guest).
type instance struct {
	mu      sync.Mutex
	rt      *Runtime
	mod     api.Module
	mem     api.Memory
	ctx     context.Context // carries the instance to the host functions
	storage Storage
	clock   Clock
	fns     [fnCount]api.Function
	posts   [fnCount]api.Function
	stack   [abi.MaxFlatParams]uint64
	reps    []uint32 // handle-1 -> rep of the resources created in this instance
	scratch []byte   // reused for lowering arrays
	trapped error    // set once: every later call fails with it
	hostErr error    // why a host function aborted the current call
}

type instanceKey struct{}

var errNoStorage = errors.New("this instance has no storage")

func (r *Runtime) newInstance(ctx context.Context, storage Storage, clock Clock) (*instance, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	in := &instance{rt: r, storage: storage, clock: clock}
	// The context is made once per instance, so a call allocates nothing
	// to tell the host functions which instance (storage, clock) they serve.
	in.ctx = context.WithValue(ctx, instanceKey{}, in)
	mod, err := r.rt.InstantiateModule(in.ctx, r.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, fmt.Errorf("sinkcoord: instantiating the core module: %w", err)
	}
	in.mod = mod
	in.mem = mod.Memory()
	return in, nil
}

// function resolves an export once per instance.
func (in *instance) function(id fn) api.Function {
	f := in.fns[id]
	if f == nil && in.rt.has[id] {
		f = in.mod.ExportedFunction(in.rt.names[id])
		in.fns[id] = f
	}
	return f
}

// call runs export id with n parameters from in.stack; results are left in
// in.stack. Any failure traps the instance for good.
func (in *instance) call(id fn, what string) error {
	if in.trapped != nil {
		return in.trapped
	}
	f := in.function(id)
	if f == nil {
		return fmt.Errorf("sinkcoord: the core module (sink:coordinator@%s) does not export %q", in.rt.version, in.rt.names[id])
	}
	in.hostErr = nil
	if err := f.CallWithStack(in.ctx, in.stack[:]); err != nil {
		return in.trap(what, err)
	}
	return nil
}

// post calls the cabi_post_ export of id with the return area ret.
func (in *instance) post(id fn, ret uint32, what string) error {
	name := in.rt.posts[id]
	if name == "" {
		return nil
	}
	f := in.posts[id]
	if f == nil {
		f = in.mod.ExportedFunction(name)
		in.posts[id] = f
	}
	in.stack[0] = uint64(ret)
	if err := f.CallWithStack(in.ctx, in.stack[:]); err != nil {
		return in.trap(what+" (post-return)", err)
	}
	return nil
}

func (in *instance) trap(what string, cause error) error {
	if in.hostErr != nil {
		cause = in.hostErr
	}
	err := &TrapError{Call: what, Cause: cause}
	in.trapped = &TrapError{Call: what, Cause: fmt.Errorf("the instance trapped earlier (%v): it is discarded", cause)}
	return err
}

// free releases the instance: the resource's destructor (when the guest is
// still sound), then the module.
func (in *instance) free(dtor fn, handle uint32) {
	if in.trapped == nil {
		if rep, ok := in.rep(handle); ok {
			in.stack[0] = uint64(rep)
			_ = in.call(dtor, "drop")
		}
	}
	in.trapped = &TrapError{Call: "use after Free", Cause: errors.New("the handle was freed")}
	_ = in.mod.Close(context.Background())
}

func (in *instance) rep(handle uint32) (uint32, bool) {
	if handle == 0 || int(handle) > len(in.reps) {
		return 0, false
	}
	return in.reps[handle-1], true
}

// ---------------------------------------------------------------------------
// Lowering: guest allocations. Everything handed to the guest is its own
// allocation of the exact size and alignment, because the guest frees each
// list with exactly that layout.
// ---------------------------------------------------------------------------

func (in *instance) alloc(align, size uint32) (uint32, error) {
	if size == 0 {
		return align, nil // what cabi_realloc returns for zero bytes: a dangling, aligned pointer
	}
	f := in.function(fnRealloc)
	if in.trapped != nil {
		return 0, in.trapped
	}
	var stack [4]uint64
	stack[0], stack[1], stack[2], stack[3] = 0, 0, uint64(align), uint64(size)
	if err := f.CallWithStack(in.ctx, stack[:]); err != nil {
		return 0, in.trap("cabi_realloc", err)
	}
	return uint32(stack[0]), nil
}

func checkLen(n int, size uint64) (uint32, error) {
	if uint64(n)*size > 1<<32-1 {
		return 0, fmt.Errorf("sinkcoord: %d elements of %d bytes do not fit a 32-bit guest", n, size)
	}
	return uint32(uint64(n) * size), nil
}

// lowerBytes copies b into a new guest allocation: (ptr, len).
func (in *instance) lowerBytes(b []byte) (uint32, uint32, error) {
	return lowerData(in, b, in.mem.Write)
}

func (in *instance) lowerString(s string) (uint32, uint32, error) {
	if !utf8.ValidString(s) {
		return 0, 0, errors.New("sinkcoord: a string argument is not valid UTF-8")
	}
	return lowerData(in, s, in.mem.WriteString)
}

// lowerData copies v into a new guest allocation with write (no copy of a
// string to bytes first): (ptr, len).
func lowerData[T ~string | ~[]byte](in *instance, v T, write func(uint32, T) bool) (uint32, uint32, error) {
	size, err := checkLen(len(v), 1)
	if err != nil {
		return 0, 0, err
	}
	ptr, err := in.alloc(1, size)
	if err != nil {
		return 0, 0, err
	}
	if size > 0 && !write(ptr, v) {
		return 0, 0, in.trap("lower", fmt.Errorf("cabi_realloc returned %d, outside memory", ptr))
	}
	return ptr, size, nil
}

// lowerArray allocates an array of n elements of size bytes (align) and
// writes the bytes fill produces into it with one copy.
func (in *instance) lowerArray(n int, size, align uint32, fill func(buf []byte) error) (uint32, error) {
	total, err := checkLen(n, uint64(size))
	if err != nil {
		return 0, err
	}
	// Fill before allocating: fill lowers the elements' own lists, which
	// may nest (restored's entries): a nested array gets its own buffer.
	buf := slices.Grow(in.scratch[:0], int(total))[:total]
	in.scratch = nil
	clear(buf)
	if err := fill(buf); err != nil {
		return 0, err
	}
	ptr, err := in.alloc(align, total)
	if err != nil {
		return 0, err
	}
	if total > 0 && !in.mem.Write(ptr, buf) {
		return 0, in.trap("lower", fmt.Errorf("cabi_realloc returned %d, outside memory", ptr))
	}
	if cap(buf) <= 1<<20 {
		in.scratch = buf // keep moderate buffers for the next batch
	}
	return ptr, nil
}

// lowerByteLists: list<list<u8>> as an array of (ptr, len).
func (in *instance) lowerByteLists(lists [][]byte) (uint32, uint32, error) {
	descs := make([][2]uint32, len(lists))
	for i, b := range lists {
		p, l, err := in.lowerBytes(b)
		if err != nil {
			return 0, 0, err
		}
		descs[i] = [2]uint32{p, l}
	}
	ptr, err := in.lowerArray(len(lists), abi.ListSize, abi.ListAlign, func(buf []byte) error {
		for i, d := range descs {
			putList(buf[abi.ListSize*i:], d[0], d[1])
		}
		return nil
	})
	return ptr, uint32(len(lists)), err
}

// putList writes a list or string descriptor (ptr, n) at buf.
func putList(buf []byte, ptr, n uint32) {
	le.PutUint32(buf[abi.ListPtr:], ptr)
	le.PutUint32(buf[abi.ListLen:], n)
}

// lowerEntryArgs lowers an entry's committables and watermark as flat
// parameters: stack slots at, at+1 (the list) and at+2, at+3 (option<s64>).
// The caller sets the other slots; lowering leaves them alone.
func (in *instance) lowerEntryArgs(at int, committables [][]byte, watermark *int64) error {
	p, n, err := in.lowerByteLists(committables)
	if err != nil {
		return err
	}
	s := in.stack[at:]
	s[0], s[1], s[2], s[3] = uint64(p), uint64(n), 0, 0
	if watermark != nil {
		s[2], s[3] = 1, uint64(*watermark)
	}
	return nil
}

// lowerEntryInto writes an entry record at buf, lowering its committables
// first.
func (in *instance) lowerEntryInto(buf []byte, e *Entry) error {
	p, n, err := in.lowerByteLists(e.Committables)
	if err != nil {
		return err
	}
	le.PutUint64(buf[abi.EntryCheckpoint:], e.Checkpoint)
	putList(buf[abi.EntryCommittables:], p, n)
	putOptS64(buf[abi.EntryWatermark:], e.Watermark)
	buf[abi.EntrySavepoint] = b2u8(e.Savepoint)
	return nil
}

// putOptS64 writes an option<s64> at buf (none: buf is already zero).
func putOptS64(buf []byte, v *int64) {
	if v != nil {
		buf[0] = 1
		le.PutUint64(buf[abi.OptionS64Payload:], uint64(*v))
	}
}

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func b2u64(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// ---------------------------------------------------------------------------
// Host functions (the imports). A failure inside one aborts the call: the
// reason is kept in hostErr and the function panics, which wazero turns into
// the call's error (it recovers the panic; nothing escapes to the user).
// ---------------------------------------------------------------------------

func hostInstance(ctx context.Context) *instance {
	in, _ := ctx.Value(instanceKey{}).(*instance)
	if in == nil {
		panic(errors.New("sinkcoord: an import was called outside a call of this host"))
	}
	return in
}

func (in *instance) abort(err error) {
	if in.hostErr == nil {
		in.hostErr = err
	}
	panic(err)
}

func (in *instance) readString(ptr, n uint32) string {
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		in.abort(fmt.Errorf("the guest passed a string outside memory (%d, %d)", ptr, n))
	}
	if !utf8.Valid(b) {
		in.abort(errors.New("the guest passed a string that is not UTF-8"))
	}
	return string(b)
}

// viewBytes is the guest's argument bytes in place, not copied: a Storage
// gets them as io.Writer.Write gets p, valid until it returns (nothing can
// move guest memory during the callback). A snapshot value is the whole
// checkpoint's committables; copying it here and again in the storage was
// a tenth of the realistic job's cycle.
func (in *instance) viewBytes(ptr, n uint32) []byte {
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		in.abort(fmt.Errorf("the guest passed bytes outside memory (%d, %d)", ptr, n))
	}
	return b[:n:n]
}

func (in *instance) store() Storage {
	if in.storage == nil {
		in.abort(errNoStorage)
	}
	return in.storage
}

// write writes a result into the return area; a bad area aborts.
func (in *instance) put8(p uint32, v byte) {
	if !in.mem.WriteByte(p, v) {
		in.abort(fmt.Errorf("the return area %d is outside memory", p))
	}
}

func (in *instance) put32(p uint32, v uint32) {
	if !in.mem.WriteUint32Le(p, v) {
		in.abort(fmt.Errorf("the return area %d is outside memory", p))
	}
}

// storageResult writes a storage import's result<T, storage-error>: its
// err case, or the ok discriminant (the caller then writes T at ret +
// payload, the result's payload offset).
func (in *instance) storageResult(ret, payload uint32, err error) bool {
	if err == nil {
		in.put8(ret, 0)
		return true
	}
	invalidKey, message := storageErrorCase(err)
	p, n, lerr := in.lowerString(message)
	if lerr != nil {
		in.abort(lerr)
	}
	e := ret + payload
	in.put8(ret, 1)
	in.put8(e, b2u8(invalidKey))
	in.putList(e+abi.StorageErrorPayload, p, n)
	return false
}

// putList writes a list or string descriptor into the return area.
func (in *instance) putList(p, ptr, n uint32) {
	in.put32(p+abi.ListPtr, ptr)
	in.put32(p+abi.ListLen, n)
}

func (in *instance) lowerOrAbort(b []byte) (uint32, uint32) {
	p, n, err := in.lowerBytes(b)
	if err != nil {
		in.abort(err)
	}
	return p, n
}

func hostGet(ctx context.Context, _ api.Module, stack []uint64) {
	in := hostInstance(ctx)
	key, ret := in.readString(uint32(stack[0]), uint32(stack[1])), uint32(stack[2])
	value, found, err := in.store().Get(key)
	if !in.storageResult(ret, abi.ResultOptionListU8StorageErrorPayload, err) {
		return
	}
	opt := ret + abi.ResultOptionListU8StorageErrorPayload
	if !found {
		in.put8(opt, 0)
		return
	}
	p, n := in.lowerOrAbort(value)
	in.put8(opt, 1)
	in.putList(opt+abi.OptionListU8Payload, p, n)
}

func hostPutIfAbsent(ctx context.Context, _ api.Module, stack []uint64) {
	in := hostInstance(ctx)
	key := in.readString(uint32(stack[0]), uint32(stack[1]))
	value, ret := in.viewBytes(uint32(stack[2]), uint32(stack[3])), uint32(stack[4])
	created, err := in.store().PutIfAbsent(key, value)
	if in.storageResult(ret, abi.ResultBoolStorageErrorPayload, err) {
		in.put8(ret+abi.ResultBoolStorageErrorPayload, b2u8(created))
	}
}

func hostPut(ctx context.Context, _ api.Module, stack []uint64) {
	in := hostInstance(ctx)
	key := in.readString(uint32(stack[0]), uint32(stack[1]))
	value, ret := in.viewBytes(uint32(stack[2]), uint32(stack[3])), uint32(stack[4])
	in.storageResult(ret, abi.ResultStorageErrorPayload, in.store().Put(key, value))
}

func hostDelete(ctx context.Context, _ api.Module, stack []uint64) {
	in := hostInstance(ctx)
	key, ret := in.readString(uint32(stack[0]), uint32(stack[1])), uint32(stack[2])
	in.storageResult(ret, abi.ResultStorageErrorPayload, in.store().Delete(key))
}

func hostList(ctx context.Context, _ api.Module, stack []uint64) {
	in := hostInstance(ctx)
	prefix, ret := in.readString(uint32(stack[0]), uint32(stack[1])), uint32(stack[2])
	keys, err := in.store().List(prefix)
	if !in.storageResult(ret, abi.ResultListStringStorageErrorPayload, err) {
		return
	}
	// The guest relies on byte order (Go compares strings by their bytes).
	if !slices.IsSorted(keys) {
		keys = slices.Sorted(slices.Values(keys))
	}
	ptr, err := in.lowerArray(len(keys), abi.ListSize, abi.ListAlign, func(buf []byte) error {
		for i, k := range keys {
			p, n, err := in.lowerString(k)
			if err != nil {
				return err
			}
			putList(buf[abi.ListSize*i:], p, n)
		}
		return nil
	})
	if err != nil {
		in.abort(err)
	}
	in.putList(ret+abi.ResultListStringStorageErrorPayload, ptr, uint32(len(keys)))
}

func hostNowMs(ctx context.Context, _ api.Module, stack []uint64) {
	in := hostInstance(ctx)
	if in.clock == nil {
		in.abort(errors.New("this instance has no clock"))
	}
	stack[0] = in.clock.NowMs()
}

// hostResourceNew: the guest's constructor registers its rep; the handle
// (index + 1, never 0) is what the constructor returns.
func hostResourceNew(ctx context.Context, _ api.Module, stack []uint64) {
	in := hostInstance(ctx)
	in.reps = append(in.reps, uint32(stack[0]))
	stack[0] = uint64(len(in.reps))
}

// hostResourceDrop: the guest drops an owned handle (this guest never does).
func hostResourceDrop(dtor fn) api.GoModuleFunc {
	return func(ctx context.Context, _ api.Module, stack []uint64) {
		in := hostInstance(ctx)
		rep, ok := in.rep(uint32(stack[0]))
		if !ok {
			in.abort(fmt.Errorf("the guest dropped an unknown handle %d", stack[0]))
		}
		in.reps[uint32(stack[0])-1] = 0
		f := in.function(dtor)
		if err := f.CallWithStack(ctx, []uint64{uint64(rep)}); err != nil {
			in.abort(err)
		}
	}
}
