"""What a coordinator needs from its host: a ``Storage`` (the table's object
store) and a ``Clock``, as protocols, with an in-memory and a local-directory
storage and a system and a manual clock.

A storage reports a failure by raising ``BackendIOError`` or
``InvalidKeyError`` (the component's ``storage-error``); anything else it
raises traps the component."""

from __future__ import annotations

import itertools
import os
import time
from typing import Dict, List, Optional, Protocol, runtime_checkable

from .errors import BackendIOError, InvalidKeyError


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
    """A table in a dict (tests, examples): ``items`` holds it."""

    def __init__(self) -> None:
        self.items: Dict[str, bytes] = {}

    def get(self, key: str) -> Optional[bytes]:
        return self.items.get(key)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        if key in self.items:
            return False
        self.items[key] = bytes(value)
        return True

    def put(self, key: str, value: bytes) -> None:
        self.items[key] = bytes(value)

    def delete(self, key: str) -> None:
        self.items.pop(key, None)

    def list(self, prefix: str) -> List[str]:
        return _byte_order([k for k in self.items if k.startswith(prefix)])


#: Temporary files start with this; keys may not (the Rust host's prefix).
TMP_PREFIX = ".sinkcoord-tmp."
_tmp_counter = itertools.count()


class DirectoryStorage:
    """A table in a local directory: key ``a/b`` is the file ``ROOT/a/b``, the
    same layout as the Rust host's ``LocalDirStorage`` (``sinkcoord inspect``
    reads it). Keys are confined under the root (absolute keys, empty, ``.``
    and ``..`` segments, backslashes and NUL are ``InvalidKeyError``); writes
    go through a temporary file that is fsynced before it becomes visible
    (``link`` for create-once, ``rename`` for overwrite)."""

    def __init__(self, root: "os.PathLike[str] | str") -> None:
        self.root = os.fspath(root)
        os.makedirs(self.root, exist_ok=True)

    @staticmethod
    def _check(what: str, s: str, last_may_be_partial: bool) -> List[str]:
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

    def _path(self, key: str) -> str:
        return os.path.join(self.root, *self._check("key", key, False))

    def get(self, key: str) -> Optional[bytes]:
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise BackendIOError(f'cannot read "{key}": {e}') from e

    def _write_tmp(self, key: str, path: str, value: bytes) -> str:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f"{TMP_PREFIX}{os.getpid()}.{next(_tmp_counter)}")
        with open(tmp, "wb") as f:
            f.write(value)
            f.flush()
            os.fsync(f.fileno())
        return tmp

    def _sync_dir(self, path: str) -> None:
        fd = os.open(os.path.dirname(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        path = self._path(key)
        try:
            tmp = self._write_tmp(key, path, bytes(value))
            try:
                os.link(tmp, path)
                created = True
            except FileExistsError:
                created = False
            finally:
                os.unlink(tmp)
            if created:
                self._sync_dir(path)
            return created
        except OSError as e:
            raise BackendIOError(f'cannot create "{key}": {e}') from e

    def put(self, key: str, value: bytes) -> None:
        path = self._path(key)
        try:
            tmp = self._write_tmp(key, path, bytes(value))
            os.replace(tmp, path)
            self._sync_dir(path)
        except OSError as e:
            raise BackendIOError(f'cannot write "{key}": {e}') from e

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as e:
            raise BackendIOError(f'cannot delete "{key}": {e}') from e

    def list(self, prefix: str) -> List[str]:
        segments = self._check("prefix", prefix, True)
        start = os.path.join(self.root, *segments[:-1])
        keys: List[str] = []
        try:
            for directory, dirs, files in os.walk(start):
                rel = os.path.relpath(directory, self.root)
                rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
                keys.extend(
                    rel + name
                    for name in files
                    if not name.startswith(TMP_PREFIX) and (rel + name).startswith(prefix)
                )
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
