"""What a coordinator needs from its host: a ``Storage`` (the table's object
store) and a ``Clock``, as protocols, with an in-memory and a local-directory
storage and a system and a manual clock.

A storage reports a failure by raising ``BackendIOError`` or
``InvalidKeyError`` (the component's ``storage-error``); anything else it
raises traps the component."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
from typing import Dict, Iterator, List, Optional, Protocol, Tuple, runtime_checkable

from .errors import BackendIOError, InvalidKeyError, ValueTooLargeError


@runtime_checkable
class Storage(Protocol):
    """An object store: keys are ``/``-separated strings, values bytes."""

    def get(self, key: str) -> Optional[bytes]:
        """The value of ``key``, or None."""
        ...

    def put_if_absent(self, key: str, value: bytes) -> bool:
        """Creates ``key`` atomically unless it exists; whether it did."""
        ...

    def put(self, key: str, value: bytes) -> None:
        """Writes ``key`` (atomically replacing any value)."""
        ...

    def delete(self, key: str) -> None:
        """Removes ``key`` (no error if it does not exist)."""
        ...

    def list(self, prefix: str) -> List[str]:
        """The keys starting with ``prefix``, in byte order of their UTF-8."""
        ...


@runtime_checkable
class Clock(Protocol):
    """Milliseconds since the Unix epoch (snapshot and tag times)."""

    def now_ms(self) -> int:
        """The current time."""
        ...


def _byte_order(keys: List[str]) -> List[str]:
    # Rust's String order: the bytes of the UTF-8 encodings.
    return sorted(keys, key=lambda k: k.encode("utf-8"))


class MemoryStorage:
    """A table in a dict (tests, examples): ``items`` holds it. It applies the
    key rules of every backend (``check_key_rules``, as ``DirectoryStorage``: a refused key or
    prefix is an ``InvalidKeyError`` and nothing is stored), and no value
    bound (it only holds the values it is handed)."""

    def __init__(self) -> None:
        self.items: Dict[str, bytes] = {}

    def get(self, key: str) -> Optional[bytes]:
        check_key_rules("key", key, False)
        return self.items.get(key)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        check_key_rules("key", key, False)
        if key in self.items:
            return False
        self.items[key] = bytes(value)
        return True

    def put(self, key: str, value: bytes) -> None:
        check_key_rules("key", key, False)
        self.items[key] = bytes(value)

    def delete(self, key: str) -> None:
        check_key_rules("key", key, False)
        self.items.pop(key, None)

    def list(self, prefix: str) -> List[str]:
        check_key_rules("prefix", prefix, True)
        return _byte_order([k for k in self.items if k.startswith(prefix)])


#: Temporary files start with this; keys may not (the Rust host's prefix).
TMP_PREFIX = ".sinkcoord-tmp."

#: The default bound on one value (``max_value_bytes``): 2 GiB, above the
#: largest snapshot the core's default limits let a commit write
#: (max-snapshot-bytes 1.25 GiB plus framing); the Rust host's
#: ``DEFAULT_MAX_VALUE_BYTES``.
DEFAULT_MAX_VALUE_BYTES = 2 << 30

#: The bound on a value under ``hint/``: the core writes a decimal snapshot
#: id there, so a larger hint is hostile (the Rust host's ``MAX_HINT_BYTES``).
MAX_HINT_BYTES = 4096

_HINT_PREFIX = "hint/"
#: How deep ``list`` descends below the root (the Rust host's bound).
_MAX_DEPTH = 64
#: Fresh temporary names tried before a write gives up (each is random).
_TMP_ATTEMPTS = 16
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: What ``open(O_NOFOLLOW)`` of a link, or ``O_DIRECTORY`` of a non-directory,
#: fails with (ELOOP on Linux and macOS, EMLINK on FreeBSD).
_NOT_FOLLOWED = {errno.ELOOP, errno.EMLINK, errno.ENOTDIR}


def check_key_rules(what: str, s: str, last_may_be_partial: bool) -> List[str]:
    """The key rules of every storage with rules (the Rust host's
    ``check_key`` / ``check_prefix``): ``s`` split at ``/``, or
    ``InvalidKeyError`` naming ``what`` ("key", "prefix") if it is empty (a
    key), absolute, holds a backslash or NUL, or has an empty, ``.``, ``..``
    or reserved (``TMP_PREFIX``) segment. With ``last_may_be_partial`` (a
    prefix) the last segment is not checked and ``s`` may be empty."""
    if not s and not last_may_be_partial:
        raise InvalidKeyError("empty key")
    problem = None
    if "\\" in s:
        problem = "contains a backslash"
    elif "\0" in s:
        problem = "contains NUL"
    elif s.startswith("/"):
        problem = "is absolute"
    segments = s.split("/")
    checked = segments[:-1] if last_may_be_partial else segments
    for seg in checked:
        if problem:
            break
        if not seg:
            problem = "has an empty segment"
        elif seg in (".", ".."):
            problem = f'has a "{seg}" segment'
        elif seg.startswith(TMP_PREFIX):
            problem = f'uses the reserved name prefix "{TMP_PREFIX}"'
    if problem:
        raise InvalidKeyError(f'{what} "{s}" {problem}')
    return segments


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISLNK, "symbolic link"),
    ):
        if test(mode):
            return name
    return "special file"


def _lstat_at(dir_fd: int, name: str) -> Optional[os.stat_result]:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        # A name longer than the file system takes cannot exist: absent, like
        # the Rust host (delete of it succeeds; get, put and put_if_absent
        # still fail with the file system's error when they open or create it).
        if e.errno == errno.ENAMETOOLONG:
            return None
        raise


def _open_dir_at(dir_fd: int, name: str) -> int:
    return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)


def _write_all(fd: int, value: bytes) -> None:
    # os.write may write less than asked (a full disk, a file size limit,
    # 2 GiB per call on Linux); the rest is written or the error raised.
    view = memoryview(value)
    off = 0
    while off < len(view):
        n = os.write(fd, view[off:])
        if n <= 0:
            raise OSError(errno.EIO, f"short write: {off} of {len(view)} bytes written")
        off += n


def _read_bounded(fd: int, key: str, size: int, limit: int) -> bytes:
    """The whole regular file ``fd`` of ``size`` bytes (its fstat), never
    more than ``limit`` bytes: if it grew meanwhile, at most ``limit + 1``
    bytes are read and the value is refused."""
    chunks: List[bytes] = []
    total = 0
    while total < size:
        chunk = os.read(fd, size - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    while total <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise ValueTooLargeError(key, total, limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _temp_writer_is_dead(rest: str) -> bool:
    """Whether the writer of temporary file ``.sinkcoord-tmp.<rest>`` is
    gone: ``<rest>`` is ``<pid>.<digits>`` and signal 0 finds no process (the
    Rust host's rule; our own files and processes we may not signal are
    kept)."""
    pid_text, _, n = rest.partition(".")
    if not (pid_text.isascii() and pid_text.isdigit() and n.isascii() and n.isdigit()) or len(pid_text) > 10:
        return False
    pid = int(pid_text)
    if pid <= 0 or pid > 2**31 - 1 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _sweep_temp_files(d: int, base: str, depth: int, removed: List[str]) -> None:
    """Removes dead writers' temporary files in ``d`` and below (never
    through links). Best effort: errors are ignored."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        try:
            if name.startswith(TMP_PREFIX):
                if entry.is_file(follow_symlinks=False) and _temp_writer_is_dead(name[len(TMP_PREFIX) :]):
                    os.unlink(name, dir_fd=d)
                    removed.append(base + name)
            elif entry.is_dir(follow_symlinks=False) and depth < _MAX_DEPTH:
                child = _open_dir_at(d, name)
                try:
                    _sweep_temp_files(child, f"{base}{name}/", depth + 1, removed)
                finally:
                    os.close(child)
        except OSError:
            continue


class DirectoryStorage:
    """A table in a local directory: key ``a/b`` is the file ``ROOT/a/b``, the
    same layout as the Rust host's ``LocalDirStorage`` (``sinkcoord inspect``
    reads it), with its rules:

    - keys are confined under the root (absolute keys, empty, ``.`` and
      ``..`` segments, backslashes and NUL are ``InvalidKeyError``), and no
      link under the root is followed: every path is opened beneath a
      descriptor of the root one directory at a time with ``O_NOFOLLOW``
      (``dir_fd``, Python's ``openat``), so a link at a key or at one of its
      directories is an ``InvalidKeyError`` naming it (the root itself may be
      a link: it is the operator's choice);
    - a FIFO, device, socket or directory at a key is an ``InvalidKeyError``,
      found without blocking (opened ``O_NONBLOCK``, checked with ``fstat``);
    - a value larger than ``max_value_bytes`` (default 2 GiB; 4 KiB under
      ``hint/``) is a ``ValueTooLargeError``, before a byte of it is read or
      written;
    - writes go through a temporary file (a random name, created
      ``O_EXCL | O_NOFOLLOW``, written whole, fsynced) that becomes visible
      with ``link`` (create-once) or ``os.replace`` (overwrite), or is
      removed on failure; the directory is fsynced after every new, replaced
      or removed name, and after creating a directory its parent;
    - opening the table removes the temporary files of writers that died
      (``removed_temp_files``), as the Rust host does.

    Needs ``dir_fd`` support (Linux, macOS, the BSDs)."""

    def __init__(self, root: "os.PathLike[str] | str", *, max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES) -> None:
        if isinstance(max_value_bytes, bool) or not isinstance(max_value_bytes, int) or max_value_bytes < 0:
            raise ValueError(f"max_value_bytes must be a non-negative int, not {max_value_bytes!r}")
        self.root = os.fspath(root)
        #: The largest value read or written (under ``hint/``: at most ``MAX_HINT_BYTES``).
        self.max_value_bytes = max_value_bytes
        os.makedirs(self.root, exist_ok=True)
        removed: List[str] = []
        root_fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            _sweep_temp_files(root_fd, "", 0, removed)
        finally:
            os.close(root_fd)
        #: The temporary files (paths below the root) of writers whose process
        #: no longer exists, removed when the table was opened.
        self.removed_temp_files = _byte_order(removed)

    #: The key rules (``check_key_rules``), shared with ``ObjectStoreStorage``.
    _check = staticmethod(check_key_rules)

    def _limit(self, key: str) -> int:
        return min(self.max_value_bytes, MAX_HINT_BYTES) if key.startswith(_HINT_PREFIX) else self.max_value_bytes

    def _check_size(self, key: str, value: bytes) -> None:
        self._check("key", key, False)  # the key's own check comes first, as for every call
        if len(value) > self._limit(key):
            raise ValueTooLargeError(key, len(value), self._limit(key))

    def _link_error(self, what: str, key: str, path: str) -> InvalidKeyError:
        return InvalidKeyError(
            f'{what} "{key}": "{path}" under the table root {self.root} is a symbolic link (links are not followed)'
        )

    def _special_error(self, key: str, mode: int) -> InvalidKeyError:
        return InvalidKeyError(
            f'key "{key}": "{key}" under the table root {self.root} is not a regular file ({_kind(mode)})'
        )

    def _dir(self, what: str, key: str, dirs: List[str], create: bool) -> Optional[int]:
        """A descriptor of the directory ``dirs`` below the root (the
        caller closes it), opened one level at a time without following
        links; with ``create``, missing levels are made and their parent
        fsynced. None when a level is missing (or a file is in the way)."""
        current = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for i, seg in enumerate(dirs):
                while True:
                    try:
                        opened = _open_dir_at(current, seg)
                        break
                    except FileNotFoundError:
                        if not create:
                            return None
                        try:
                            os.mkdir(seg, 0o755, dir_fd=current)
                            # The new directory's own name must survive a crash too.
                            os.fsync(current)
                        except FileExistsError:
                            pass
                    except OSError as e:
                        if e.errno not in _NOT_FOLLOWED:
                            raise
                        st = _lstat_at(current, seg)
                        path = "/".join(dirs[: i + 1])
                        if st is not None and stat.S_ISLNK(st.st_mode):
                            raise self._link_error(what, key, path) from None
                        if st is not None and stat.S_ISDIR(st.st_mode):
                            raise
                        if not create:
                            return None  # a file in the way: no key lives below it
                        raise OSError(errno.ENOTDIR, f'"{path}" is not a directory') from None
                os.close(current)
                current = opened
            result, current = current, -1
            return result
        finally:
            if current >= 0:
                os.close(current)

    def _parent(self, op: str, key: str, create: bool) -> Tuple[Optional[int], str]:
        segments = self._check("key", key, False)
        try:
            return self._dir("key", key, segments[:-1], create), segments[-1]
        except OSError as e:
            raise BackendIOError(f'cannot {op} "{key}": {e}') from e

    def get(self, key: str) -> Optional[bytes]:
        d, name = self._parent("read", key, False)
        if d is None:
            return None
        try:
            try:
                # O_NONBLOCK: opening a FIFO must not wait for a writer.
                fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=d)
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.EMLINK):
                    raise self._link_error("key", key, key) from None
                raise
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise self._special_error(key, st.st_mode)
                limit = self._limit(key)
                # Checked before a byte is read: a sparse file costs no disk.
                if st.st_size > limit:
                    raise ValueTooLargeError(key, st.st_size, limit)
                return _read_bounded(fd, key, st.st_size, limit)
            finally:
                os.close(fd)
        except OSError as e:
            raise BackendIOError(f'cannot read "{key}": {e}') from e
        finally:
            os.close(d)

    def _write_tmp(self, d: int, value: bytes) -> str:
        for attempt in range(_TMP_ATTEMPTS):
            # Random, so another user of the directory cannot plant the name
            # in advance; O_EXCL | O_NOFOLLOW, so a planted name is never
            # opened. (<pid>.<digits>: the Rust host's sweep of dead writers'
            # files recognises it.)
            tmp = f"{TMP_PREFIX}{os.getpid()}.{secrets.randbits(64)}"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=d)
            except FileExistsError:
                if attempt + 1 == _TMP_ATTEMPTS:
                    raise
                continue
            try:
                _write_all(fd, value)
                os.fsync(fd)
            except BaseException:
                os.close(fd)
                # No temporary file outlives a failed write.
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
                raise
            os.close(fd)
            return tmp
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _writing(self, op: str, key: str, value: bytes) -> Iterator[Tuple[int, str]]:
        """The open parent directory of ``key`` (created) and the key's
        name in it, for one write of ``value`` (its size checked first); an
        ``OSError`` in the block is the ``BackendIOError`` of ``op``."""
        self._check_size(key, value)
        d, name = self._parent(op, key, True)
        assert d is not None
        try:
            yield d, name
        except OSError as e:
            raise BackendIOError(f'cannot {op} "{key}": {e}') from e
        finally:
            os.close(d)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        value = bytes(value)
        with self._writing("create", key, value) as (d, name):
            tmp = self._write_tmp(d, value)
            try:
                # link(2) fails if the name exists, a link included (not followed).
                os.link(tmp, name, src_dir_fd=d, dst_dir_fd=d, follow_symlinks=False)
                created = True
            except FileExistsError:
                created = False
            finally:
                os.unlink(tmp, dir_fd=d)
            if created:
                os.fsync(d)
                return True
            # Only a value exists: a link or special file in the way is refused.
            st = _lstat_at(d, name)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise self._link_error("key", key, key)
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise self._special_error(key, st.st_mode)
            return False

    def put(self, key: str, value: bytes) -> None:
        value = bytes(value)
        with self._writing("write", key, value) as (d, name):
            # os.replace would replace a link, not its target; refused anyway.
            st = _lstat_at(d, name)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise self._link_error("key", key, key)
            tmp = self._write_tmp(d, value)
            try:
                os.replace(tmp, name, src_dir_fd=d, dst_dir_fd=d)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
                raise
            os.fsync(d)

    def delete(self, key: str) -> None:
        d, name = self._parent("delete", key, False)
        if d is None:
            return
        try:
            st = _lstat_at(d, name)
            if st is None or stat.S_ISDIR(st.st_mode):
                return
            if stat.S_ISLNK(st.st_mode):
                raise self._link_error("key", key, key)
            try:
                os.unlink(name, dir_fd=d)
            except (FileNotFoundError, NotADirectoryError):
                return
            os.fsync(d)
        except OSError as e:
            raise BackendIOError(f'cannot delete "{key}": {e}') from e
        finally:
            os.close(d)

    def list(self, prefix: str) -> List[str]:
        segments = self._check("prefix", prefix, True)
        dirs = segments[:-1]
        keys: List[str] = []

        def walk(d: int, base: str, depth: int) -> None:
            with os.scandir(d) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        name.encode("utf-8")
                    except UnicodeEncodeError:
                        continue  # not UTF-8: not a key (as the Rust host)
                    if name.startswith(TMP_PREFIX):
                        continue
                    key = base + name
                    sub = key + "/"
                    # Only names that are keys under the prefix, or lead to them.
                    if not key.startswith(prefix) and not prefix.startswith(sub):
                        continue
                    if entry.is_symlink():
                        raise self._link_error("prefix", prefix, key)
                    if entry.is_dir(follow_symlinks=False):
                        if not sub.startswith(prefix) and not prefix.startswith(sub):
                            continue
                        if depth >= _MAX_DEPTH:
                            raise OSError(
                                errno.ELOOP, f"directories nested deeper than {_MAX_DEPTH} levels under the table root"
                            )
                        try:
                            child = _open_dir_at(d, name)
                        except FileNotFoundError:
                            continue
                        except OSError as e:
                            if e.errno in _NOT_FOLLOWED:
                                raise self._link_error("prefix", prefix, key) from None
                            raise
                        try:
                            walk(child, sub, depth + 1)
                        finally:
                            os.close(child)
                    elif entry.is_file(follow_symlinks=False) and key.startswith(prefix):
                        keys.append(key)

        try:
            d = self._dir("prefix", prefix, dirs, False)
            if d is not None:
                try:
                    walk(d, "".join(s + "/" for s in dirs), 0)
                finally:
                    os.close(d)
        except OSError as e:
            raise BackendIOError(f'cannot list "{prefix}": {e}') from e
        return _byte_order(keys)


class SystemClock:
    """The system's wall clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that reads ``ms`` (tests, examples, deterministic replays)."""

    def __init__(self, ms: int = 0) -> None:
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms
