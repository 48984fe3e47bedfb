package sinkcoord

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"
)

// TmpPrefix starts the names of temporary files; no key segment may start
// with it (the prefix of the Rust host's LocalDirStorage and the other
// hosts', so one table directory works with all of them).
const TmpPrefix = ".sinkcoord-tmp."

// DefaultMaxValueBytes bounds one value (WithMaxValueBytes): 2 GiB, above
// the largest snapshot the core's default limits let a commit write
// (max-snapshot-bytes 1.25 GiB plus framing); the Rust host's
// DEFAULT_MAX_VALUE_BYTES.
const DefaultMaxValueBytes int64 = 2 << 30

// MaxHintBytes bounds a value under "hint/": the core writes a decimal
// snapshot id there, so a larger hint is hostile (the Rust host's
// MAX_HINT_BYTES).
const MaxHintBytes int64 = 4096

const hintPrefix = "hint/"

// tmpAttempts: fresh temporary names tried before a write gives up (each is
// random, so a name planted in advance is hit only by chance).
const tmpAttempts = 16

// ValueTooLargeError: a value above the storage's bound (WithMaxValueBytes,
// or MaxHintBytes under "hint/"), refused before it is read (its size is
// checked first, and at most the bound plus one byte is read) or written.
// The component receives it as an I/O error with this message.
type ValueTooLargeError struct {
	Key   string
	Size  int64
	Limit int64
}

func (e *ValueTooLargeError) Error() string {
	bound := "the storage's max value bytes"
	if strings.HasPrefix(e.Key, hintPrefix) {
		bound = "the hint limit"
	}
	return fmt.Sprintf("the value of key %q holds %d bytes, more than %s (%d bytes)", clip(e.Key), e.Size, bound, e.Limit)
}

// DirectoryOption configures OpenDirectoryStorage.
type DirectoryOption func(*DirectoryStorage)

// WithMaxValueBytes sets the bound on one value (default
// DefaultMaxValueBytes); set it above the snapshots the coordinator's
// limits allow (max-snapshot-bytes plus framing).
func WithMaxValueBytes(n int64) DirectoryOption {
	return func(d *DirectoryStorage) { d.maxValueBytes = n }
}

// DirectoryStorage is a table in a local directory: key "a/b" is the file
// ROOT/a/b, the layout of the Rust host's LocalDirStorage (`sinkcoord
// inspect` reads it) and of the Node and Python packages. Keys are confined
// under the root (an os.Root), and a symbolic link under it is refused as an
// invalid key, never followed. Writes go through a temporary file, created
// with O_EXCL and fsynced, that becomes visible with link (create-once: an
// existing key makes the link fail, so exactly one writer wins) or rename
// (overwrite); the directory is fsynced after. Temporary names are random,
// so names planted in advance cannot block writes. A FIFO, device, socket
// or directory at a key is an invalid key for Get and PutIfAbsent, found
// without blocking; every value is bounded (ValueTooLargeError).
type DirectoryStorage struct {
	root          *os.Root
	dir           string
	maxValueBytes int64
	removed       []string
}

// OpenDirectoryStorage opens (creating it if needed) the table directory dir.
func OpenDirectoryStorage(dir string, opts ...DirectoryOption) (*DirectoryStorage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d := &DirectoryStorage{root: root, dir: dir, maxValueBytes: DefaultMaxValueBytes}
	for _, o := range opts {
		o(d)
	}
	d.sweepTempFiles()
	return d, nil
}

// RemovedTempFiles lists the temporary files (paths below the root) that
// opening the table removed: those named .sinkcoord-tmp.<pid>.<n> whose
// process <pid> no longer exists, as the Rust host's LocalDirStorage.open
// does. A live writer's file is never removed.
func (d *DirectoryStorage) RemovedTempFiles() []string { return d.removed }

// maxDepth bounds how deep the temp-file sweep descends (the Rust host's
// bound): keys the coordinator writes have two segments.
const maxDepth = 64

// sweepTempFiles removes dead writers' temporary files, never through a
// link. Best effort: errors are ignored (a file left is only disk space).
func (d *DirectoryStorage) sweepTempFiles() {
	_ = fs.WalkDir(d.root.FS(), ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() && name != "." && strings.Count(name, "/") >= maxDepth {
			return fs.SkipDir
		}
		base := path.Base(name)
		if e.Type().IsRegular() && strings.HasPrefix(base, TmpPrefix) && tempWriterIsDead(base[len(TmpPrefix):]) {
			if d.root.Remove(name) == nil {
				d.removed = append(d.removed, name)
			}
		}
		return nil
	})
	slices.Sort(d.removed)
}

// tempWriterIsDead: rest is "<pid>.<digits>" and signal 0 finds no such
// process (the Rust host's rule: our own files, other names and processes
// we may not signal are kept).
func tempWriterIsDead(rest string) bool {
	pidText, n, ok := strings.Cut(rest, ".")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" || pidText == "" || len(pidText) > 10 ||
		strings.Trim(pidText, "0123456789") != "" {
		return false
	}
	var pid int64
	fmt.Sscan(pidText, &pid)
	if pid <= 0 || pid > 1<<31-1 || int(pid) == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(int(pid), 0), syscall.ESRCH)
}

// limit is the bound on key's value.
func (d *DirectoryStorage) limit(key string) int64 {
	if strings.HasPrefix(key, hintPrefix) {
		return min(d.maxValueBytes, MaxHintBytes)
	}
	return d.maxValueBytes
}

// checkSize refuses a value above key's bound before anything is written.
func (d *DirectoryStorage) checkSize(key string, value []byte) error {
	if limit := d.limit(key); int64(len(value)) > limit {
		return &ValueTooLargeError{Key: key, Size: int64(len(value)), Limit: limit}
	}
	return nil
}

// specialError: a FIFO, device, socket or directory at a key is neither a
// value nor missing (calling a directory missing would let a commit
// "create" it and fail; opening a FIFO to read it would hang).
func (d *DirectoryStorage) specialError(key string, mode fs.FileMode) error {
	kind := "special file"
	switch {
	case mode.IsDir():
		kind = "directory"
	case mode&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case mode&fs.ModeDevice != 0:
		kind = "device"
	case mode&fs.ModeSocket != 0:
		kind = "socket"
	}
	return &InvalidKeyError{fmt.Sprintf("key %q: %q under the table root %s is not a regular file (%s)", clip(key), clip(key), d.dir, kind)}
}

// Close releases the directory.
func (d *DirectoryStorage) Close() error { return d.root.Close() }

// Dir is the table directory.
func (d *DirectoryStorage) Dir() string { return d.dir }

func invalidKey(what, s, problem string) error {
	return &InvalidKeyError{fmt.Sprintf("%s %q %s", what, clip(s), problem)}
}

func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:end], len(s))
}

// checkKey applies the key rules of every backend (host/src/storage/keys.rs):
// relative, "/"-separated, non-empty segments other than "." and "..",
// no backslash or NUL, no segment with the temporary prefix. A prefix may
// be empty and its last segment partial.
func checkKey(what, s string, prefix bool) error {
	switch {
	case s == "" && !prefix:
		return &InvalidKeyError{"empty key"}
	case strings.Contains(s, "\\"):
		return invalidKey(what, s, "contains a backslash")
	case strings.Contains(s, "\x00"):
		return invalidKey(what, s, "contains NUL")
	case strings.HasPrefix(s, "/"):
		return invalidKey(what, s, "is absolute")
	}
	segments := strings.Split(s, "/")
	if prefix {
		segments = segments[:len(segments)-1]
	}
	for _, seg := range segments {
		switch {
		case seg == "":
			return invalidKey(what, s, "has an empty segment")
		case seg == "." || seg == "..":
			return invalidKey(what, s, fmt.Sprintf("has a %q segment", seg))
		case strings.HasPrefix(seg, TmpPrefix):
			return invalidKey(what, s, fmt.Sprintf("uses the reserved name prefix %q", TmpPrefix))
		}
	}
	return nil
}

// noLinks refuses a symbolic link at any component of name (relative to
// the root). A missing component ends the check: nothing beyond it exists.
func (d *DirectoryStorage) noLinks(what, key, name string) error {
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			continue
		}
		info, err := d.root.Lstat(name[:i])
		if err != nil {
			return nil
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return &InvalidKeyError{fmt.Sprintf("%s %q: %q under the table root %s is a symbolic link (links are not followed)",
				what, clip(key), name[:i], d.dir)}
		}
	}
	return nil
}

func (d *DirectoryStorage) checked(key string) error {
	if err := checkKey("key", key, false); err != nil {
		return err
	}
	return d.noLinks("key", key, key)
}

// missing: the key does not exist (a file on its path is not a directory,
// or its name is longer than the file system takes: no such file can exist).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG)
}

func ioError(format string, key string, err error) error {
	return &BackendIOError{fmt.Sprintf(format, key, err)}
}

func (d *DirectoryStorage) Get(key string) ([]byte, bool, error) {
	if err := d.checked(key); err != nil {
		return nil, false, err
	}
	// O_NONBLOCK: a FIFO planted at the key must not hang the open;
	// O_NOFOLLOW: a link swapped in after the check is not followed.
	f, err := d.root.OpenFile(key, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, syscall.ENAMETOOLONG):
		return nil, false, ioError("cannot read %q: %v", key, err)
	case err != nil && missing(err):
		return nil, false, nil
	case errors.Is(err, syscall.ELOOP):
		return nil, false, d.noLinksOrIO("read", key, err)
	case err != nil:
		return nil, false, ioError("cannot read %q: %v", key, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, ioError("cannot read %q: %v", key, err)
	}
	if !info.Mode().IsRegular() {
		return nil, false, d.specialError(key, info.Mode())
	}
	// The size is checked before a byte is read (a sparse file costs no
	// disk and would cost its whole size in memory), and at most limit + 1
	// bytes are read in case the file grows meanwhile.
	limit := d.limit(key)
	if info.Size() > limit {
		return nil, false, &ValueTooLargeError{Key: key, Size: info.Size(), Limit: limit}
	}
	b := make([]byte, 0, info.Size())
	b, err = readAllInto(b, io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, ioError("cannot read %q: %v", key, err)
	}
	if int64(len(b)) > limit {
		return nil, false, &ValueTooLargeError{Key: key, Size: int64(len(b)), Limit: limit}
	}
	return b, true, nil
}

// readAllInto appends all of r to b (io.ReadAll with a first buffer of the
// file's size, so a whole value is read in one allocation).
func readAllInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// noLinksOrIO: the link error if key is (now) a link, else an I/O error.
func (d *DirectoryStorage) noLinksOrIO(op, key string, err error) error {
	if lerr := d.noLinks("key", key, key); lerr != nil {
		return lerr
	}
	return ioError("cannot "+op+" %q: %v", key, err)
}

// writeTemp writes value to a new temporary file beside key; its name.
func (d *DirectoryStorage) writeTemp(key string, value []byte) (string, error) {
	dir := path.Dir(key)
	if dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	var tmp string
	var f *os.File
	for attempt := 1; ; attempt++ {
		// Random, so another user of the directory cannot plant the name in
		// advance; O_EXCL (which never follows a link), so a planted or stale
		// name is never opened. <pid>.<digits>: the Rust host's sweep of
		// dead writers' files recognises it.
		var n [8]byte
		_, _ = rand.Read(n[:])
		tmp = path.Join(dir, fmt.Sprintf("%s%d.%d", TmpPrefix, os.Getpid(), binary.BigEndian.Uint64(n[:])))
		var err error
		f, err = d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || attempt == tmpAttempts {
			return "", err
		}
	}
	n, err := f.Write(value)
	if err == nil && n != len(value) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(value))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = d.root.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func (d *DirectoryStorage) syncDir(key string) error {
	f, err := d.root.Open(path.Dir(key))
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *DirectoryStorage) PutIfAbsent(key string, value []byte) (bool, error) {
	if err := d.checked(key); err != nil {
		return false, err
	}
	if err := d.checkSize(key, value); err != nil {
		return false, err
	}
	tmp, err := d.writeTemp(key, value)
	if err != nil {
		return false, ioError("cannot create %q: %v", key, err)
	}
	// link fails if the key exists: the atomic create-once of a file system.
	err = d.root.Link(tmp, key)
	_ = d.root.Remove(tmp)
	switch {
	case errors.Is(err, fs.ErrExist):
		// Only a value exists: a link, FIFO, device or directory in the way
		// is refused, not reported as the key's value.
		info, lerr := d.root.Lstat(key)
		switch {
		case lerr != nil:
			return false, nil
		case info.Mode()&fs.ModeSymlink != 0:
			return false, d.noLinks("key", key, key)
		case !info.Mode().IsRegular():
			return false, d.specialError(key, info.Mode())
		}
		return false, nil
	case err != nil:
		return false, ioError("cannot create %q: %v", key, err)
	}
	if err := d.syncDir(key); err != nil {
		return true, ioError("cannot create %q: %v", key, err)
	}
	return true, nil
}

func (d *DirectoryStorage) Put(key string, value []byte) error {
	if err := d.checked(key); err != nil {
		return err
	}
	if err := d.checkSize(key, value); err != nil {
		return err
	}
	tmp, err := d.writeTemp(key, value)
	if err != nil {
		return ioError("cannot write %q: %v", key, err)
	}
	if err := d.root.Rename(tmp, key); err != nil {
		_ = d.root.Remove(tmp)
		return ioError("cannot write %q: %v", key, err)
	}
	if err := d.syncDir(key); err != nil {
		return ioError("cannot write %q: %v", key, err)
	}
	return nil
}

func (d *DirectoryStorage) Delete(key string) error {
	if err := d.checked(key); err != nil {
		return err
	}
	info, err := d.root.Lstat(key)
	if err != nil {
		if missing(err) {
			return nil
		}
		return ioError("cannot delete %q: %v", key, err)
	}
	if info.IsDir() {
		return nil // a directory is not a key
	}
	if err := d.root.Remove(key); err != nil && !missing(err) {
		return ioError("cannot delete %q: %v", key, err)
	}
	return nil
}

func (d *DirectoryStorage) List(prefix string) ([]string, error) {
	if err := checkKey("prefix", prefix, true); err != nil {
		return nil, err
	}
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
		if err := d.noLinks("prefix", prefix, start); err != nil {
			return nil, err
		}
	}
	var keys []string
	err := fs.WalkDir(d.root.FS(), start, func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			if missing(err) {
				return nil
			}
			return err
		}
		if name == start {
			return nil
		}
		base := path.Base(name)
		if strings.HasPrefix(base, TmpPrefix) || !utf8.ValidString(name) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			// A link that would be listed or descended into is an error.
			if strings.HasPrefix(name, prefix) || strings.HasPrefix(prefix, name+"/") {
				return &InvalidKeyError{fmt.Sprintf("prefix %q: %q under the table root %s is a symbolic link (links are not followed)",
					clip(prefix), name, d.dir)}
			}
		case e.IsDir():
			// Descend only where keys with the prefix can be.
			if !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return fs.SkipDir
			}
		case e.Type().IsRegular() && strings.HasPrefix(name, prefix):
			keys = append(keys, name)
		}
		return nil
	})
	if err != nil {
		var ik *InvalidKeyError
		if errors.As(err, &ik) {
			return nil, err
		}
		return nil, ioError("cannot list %q: %v", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}
