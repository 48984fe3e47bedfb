package sinkcoord

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sink-coordinator/sink-coordinator-go/internal/keys"
)

// Storage is where a table's snapshot log and tags live: an object store
// with "/"-separated ASCII keys (wit `storage`). A method reports a failure
// with a *BackendIOError or an *InvalidKeyError; any other error is passed
// to the component as an I/O error with its message. PutIfAbsent must be
// atomic: it is how exactly-once is enforced.
//
// The value given to PutIfAbsent and Put is the guest's memory in place:
// like the p of io.Writer.Write, it must not be modified, and must not be
// retained after the method returns (copy it to keep it). The value Get
// returns is copied into the guest; the Storage keeps ownership.
type Storage interface {
	// Get returns the value of key; found is false if it does not exist.
	Get(key string) (value []byte, found bool, err error)
	// PutIfAbsent creates key with value unless it exists; created says
	// whether this call created it (an existing value is left untouched).
	PutIfAbsent(key string, value []byte) (created bool, err error)
	// Put overwrites key (hints only, never snapshots or tags).
	Put(key string, value []byte) error
	// Delete removes key; deleting a missing key succeeds.
	Delete(key string) error
	// List returns the keys starting with prefix, in byte order.
	List(prefix string) ([]string, error)
}

// Clock is the only time source the component reads.
type Clock interface {
	// NowMs is milliseconds since the Unix epoch.
	NowMs() uint64
}

// MemoryStorage is a table in a map (tests, examples); safe for concurrent use.
// It applies the key rules of every backend, as DirectoryStorage does: a
// refused key or prefix is an *InvalidKeyError and nothing is stored. It has
// no value bound (it only holds values it was handed).
type MemoryStorage struct {
	mu    sync.Mutex
	items map[string][]byte
}

// NewMemoryStorage returns an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage { return &MemoryStorage{items: map[string][]byte{}} }

func (m *MemoryStorage) Get(key string) ([]byte, bool, error) {
	if err := checkKey("key", key, false); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.items[key]
	return slices.Clone(v), ok, nil
}

func (m *MemoryStorage) PutIfAbsent(key string, value []byte) (bool, error) {
	if err := checkKey("key", key, false); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[key]; ok {
		return false, nil
	}
	m.init()
	m.items[key] = slices.Clone(value)
	return true, nil
}

func (m *MemoryStorage) Put(key string, value []byte) error {
	if err := checkKey("key", key, false); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	m.items[key] = slices.Clone(value)
	return nil
}

func (m *MemoryStorage) Delete(key string) error {
	if err := checkKey("key", key, false); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items, key)
	return nil
}

func (m *MemoryStorage) List(prefix string) ([]string, error) {
	if err := checkKey("prefix", prefix, true); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return keys.WithPrefix(m.items, prefix), nil
}

// Keys is every key, sorted (tests).
func (m *MemoryStorage) Keys() []string {
	all, _ := m.List("")
	return all
}

// init makes the zero MemoryStorage usable.
func (m *MemoryStorage) init() {
	if m.items == nil {
		m.items = map[string][]byte{}
	}
}

// SystemClock is the system's wall clock.
type SystemClock struct{}

func (SystemClock) NowMs() uint64 { return uint64(time.Now().UnixMilli()) }

// ManualClock reads a value the caller sets (tests, deterministic replays).
type ManualClock struct{ ms atomic.Uint64 }

// NewManualClock returns a clock at ms.
func NewManualClock(ms uint64) *ManualClock {
	c := &ManualClock{}
	c.ms.Store(ms)
	return c
}

func (c *ManualClock) NowMs() uint64 { return c.ms.Load() }

// Set sets the time.
func (c *ManualClock) Set(ms uint64) { c.ms.Store(ms) }

// ---------------------------------------------------------------------------
// The committables block of PackedEvent
// ---------------------------------------------------------------------------

// PackCommittables appends committables to dst as one block: an unsigned
// LEB128 count, then per committable its LEB128 length and its bytes.
func PackCommittables(dst []byte, committables [][]byte) []byte {
	dst = appendLEB(dst, uint64(len(committables)))
	for _, c := range committables {
		dst = appendLEB(dst, uint64(len(c)))
		dst = append(dst, c...)
	}
	return dst
}

func appendLEB(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// ErrMalformedBlock: a committables block breaks its encoding.
var ErrMalformedBlock = errors.New("malformed committables block")

// UnpackCommittables decodes a block as the component does: every number
// in the fewest bytes, within 32 bits, and no trailing bytes. The slices
// alias block.
func UnpackCommittables(block []byte) ([][]byte, error) {
	count, pos, ok := readLEB(block, 0)
	// Each committable takes at least one byte: a count beyond the rest is
	// malformed before anything is allocated for it.
	if !ok || count > uint64(len(block)-pos) {
		return nil, ErrMalformedBlock
	}
	out := make([][]byte, 0, count)
	for range count {
		n, next, ok := readLEB(block, pos)
		if !ok || n > uint64(len(block)-next) {
			return nil, ErrMalformedBlock
		}
		out = append(out, block[next:next+int(n)])
		pos = next + int(n)
	}
	if pos != len(block) {
		return nil, ErrMalformedBlock
	}
	return out, nil
}

// readLEB reads a minimal unsigned LEB128 of at most 32 bits at pos.
func readLEB(b []byte, pos int) (uint64, int, bool) {
	var v uint64
	for shift := uint(0); shift < 35; shift += 7 {
		if pos >= len(b) {
			return 0, pos, false
		}
		c := b[pos]
		pos++
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			// Overlong: a last byte of 0 after the first; too large: > 32 bits.
			if (c == 0 && shift > 0) || v > 1<<32-1 {
				return 0, pos, false
			}
			return v, pos, true
		}
	}
	return 0, pos, false
}
