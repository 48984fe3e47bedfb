package sinkcoord

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"unicode/utf8"
)

// TmpPrefix starts the names of temporary files; no key segment may start
// with it (the prefix of the Rust host's LocalDirStorage and the other
// hosts', so one table directory works with all of them).
const TmpPrefix = ".sinkcoord-tmp."

var tmpCounter atomic.Uint64

// DirectoryStorage is a table in a local directory: key "a/b" is the file
// ROOT/a/b, the layout of the Rust host's LocalDirStorage (`sinkcoord
// inspect` reads it) and of the Node and Python packages. Keys are confined
// under the root (an os.Root), and a symbolic link under it is refused as an
// invalid key, never followed. Writes go through a temporary file, created
// with O_EXCL and fsynced, that becomes visible with link (create-once: an
// existing key makes the link fail, so exactly one writer wins) or rename
// (overwrite); the directory is fsynced after.
type DirectoryStorage struct {
	root *os.Root
	dir  string
}

// OpenDirectoryStorage opens (creating it if needed) the table directory dir.
func OpenDirectoryStorage(dir string) (*DirectoryStorage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &DirectoryStorage{root: root, dir: dir}, nil
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

// missing: the key does not exist (a file on its path is not a directory).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func ioError(format string, key string, err error) error {
	return &BackendIOError{fmt.Sprintf(format, key, err)}
}

func (d *DirectoryStorage) Get(key string) ([]byte, bool, error) {
	if err := d.checked(key); err != nil {
		return nil, false, err
	}
	b, err := d.root.ReadFile(key)
	switch {
	case err == nil:
		return b, true, nil
	case missing(err):
		return nil, false, nil
	case errors.Is(err, syscall.EISDIR):
		return nil, false, nil // a directory is not a key
	}
	return nil, false, ioError("cannot read %q: %v", key, err)
}

// writeTemp writes value to a new temporary file beside key; its name.
func (d *DirectoryStorage) writeTemp(key string, value []byte) (string, error) {
	dir := path.Dir(key)
	if dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	tmp := path.Join(dir, fmt.Sprintf("%s%d.%d", TmpPrefix, os.Getpid(), tmpCounter.Add(1)))
	// O_EXCL: never reuse a stale temporary file of a crashed run.
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
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
	tmp, err := d.writeTemp(key, value)
	if err != nil {
		return false, ioError("cannot create %q: %v", key, err)
	}
	// link fails if the key exists: the atomic create-once of a file system.
	err = d.root.Link(tmp, key)
	_ = d.root.Remove(tmp)
	switch {
	case errors.Is(err, fs.ErrExist):
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
