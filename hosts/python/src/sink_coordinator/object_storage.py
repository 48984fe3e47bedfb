"""``ObjectStoreStorage``: a table on an object store (S3, GCS, Azure, or
obstore's in-memory store) through `obstore <https://pypi.org/project/obstore/>`_,
the Python binding of the Rust ``object_store`` crate that the Rust host's
``ObjectStorage`` uses, with the same semantics.

obstore is an optional dependency (``pip install 'sink-coordinator[s3]'``,
Python 3.11 or later): it is imported when a storage is made, never by
``import sink_coordinator``; without it the constructor raises an
``ImportError`` naming the extra."""

from __future__ import annotations

import importlib
from datetime import timedelta
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .errors import BackendError, BackendIOError, InvalidKeyError
from .storage import _byte_order, check_key_rules

if TYPE_CHECKING:
    from obstore.store import ClientConfig, ObjectStore, RetryConfig

#: The extra that installs obstore.
EXTRA = "sink-coordinator[s3]"

#: The retries of a store opened by ``from_url`` (the Rust host's: a few
#: within seconds, since a coordinator call waits for its storage calls and
#: the engine retries a failed call anyway). A conditional create is never
#: retried by the store once sent, so its timeout is an error (ambiguous).
DEFAULT_RETRY: "RetryConfig" = {"max_retries": 3, "retry_timeout": timedelta(seconds=20)}


#: obstore's ``ClientConfig`` keys (0.12): given among a store's options,
#: ``from_url`` moves them to ``client_options`` (obstore 0.12 panics on a
#: client key among the store's own).
CLIENT_OPTIONS = frozenset(
    """allow_http allow_invalid_certificates connect_timeout default_content_type
    default_headers http1_only http2_keep_alive_interval http2_keep_alive_timeout
    http2_keep_alive_while_idle http2_only pool_idle_timeout pool_max_idle_per_host
    proxy_url proxy_ca_certificate proxy_excludes root_certificate randomize_addresses
    read_timeout timeout user_agent""".split()
)


def _obstore() -> ModuleType:
    """The ``obstore`` module, or an ``ImportError`` naming the extra."""
    try:
        return importlib.import_module("obstore")
    except ImportError as e:
        raise ImportError(
            f"ObjectStoreStorage needs obstore, which is not installed: pip install '{EXTRA}' "
            f"(obstore 0.12, Python 3.11 or later) ({e})"
        ) from e


def _clip(s: str) -> str:
    """At most 200 characters of ``s``, for messages that echo a key."""
    return s if len(s) <= 200 else f"{s[:200]}... ({len(s.encode('utf-8'))} bytes)"


def _table_prefix(prefix: str) -> str:
    """A table prefix inside a store: one leading and one trailing ``/`` are
    dropped (as ``object_store``'s ``Path::parse`` does), the rest follows the
    key rules (empty: the store's root)."""
    p = prefix[1:] if prefix.startswith("/") else prefix
    p = p[:-1] if p.endswith("/") else p
    if p:
        check_key_rules("table prefix", p, False)
    return p


class ObjectStoreStorage:
    """A table stored as objects under a prefix of an obstore store: key
    ``a/b`` is the object ``<prefix>/a/b`` (``<prefix>`` below the store's own
    prefix, if it has one). The Rust host's ``ObjectStorage``, key for key:

    - ``put_if_absent`` is a conditional create (``mode="create"``: S3's
      ``If-None-Match: *``, GCS's ``ifGenerationMatch=0``, Azure's
      ``If-None-Match: *``), one request, never multipart; "already exists"
      and "precondition failed" mean the key existed (False), not an error.
      A timeout or lost connection is a ``BackendIOError``, which the storage
      import defines as ambiguous (the write may or may not have landed).
    - ``put`` is a plain overwrite (one request), ``delete`` of a missing key
      succeeds, ``get`` of a missing key is None, ``list`` returns the keys
      starting with the text prefix (``"snap"`` lists ``snapshot/1``) in byte
      order of their UTF-8 (sorted here, not the store's order), relative to
      the table's prefix; objects whose names the key rules refuse (a
      directory marker) are not keys and are not listed.
    - Keys follow the rules of ``DirectoryStorage`` (``check_key_rules``), so a
      table moves between a directory and a bucket; a key the store refuses as
      an object path is an ``InvalidKeyError`` too. Every other failure of the
      store is a ``BackendIOError`` naming the operation, the key and the
      table (its ``__cause__`` is obstore's exception).
    - No bound on values (as on the Rust host's object stores).

    Each call blocks its caller until the store answers (obstore's
    synchronous API, which runs its own runtime; no event loop needed).
    Several storages may share one store object."""

    def __init__(self, store: "ObjectStore", prefix: str = "", *, location: Optional[str] = None) -> None:
        """A table under ``prefix`` (``/``-separated; empty: the store's root
        or its own prefix) of ``store`` (an obstore store:
        ``obstore.store.S3Store(...)``, ``from_url(...)``, ``MemoryStore()``);
        ``location`` names it in messages (default: the store and prefix)."""
        _obstore()
        self._exceptions = importlib.import_module("obstore.exceptions")
        #: The obstore store.
        self.store = store
        #: The table's prefix inside the store (empty: the store's root).
        self.prefix = _table_prefix(prefix)
        #: The table, for messages (``s3://bucket/prefix``).
        self.location = location if location is not None else self._default_location()

    def _default_location(self) -> str:
        base = getattr(self.store, "prefix", None) or ""
        path = "/".join(p for p in (base.strip("/"), self.prefix) if p)
        return f"{type(self.store).__name__} {path!r}"

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        allow_http: bool = False,
        client_options: "Optional[ClientConfig]" = None,
        retry_config: "Optional[RetryConfig]" = None,
        **options: Any,
    ) -> "ObjectStoreStorage":
        """The table at ``url``: ``s3://bucket/prefix`` (also ``s3a://``),
        ``gs://bucket/prefix``, ``az://container/prefix`` (obstore's
        ``from_url``; ``memory:///`` for tests). The URL's path is the table's
        prefix. The store reads its settings from the environment
        (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``), then from ``options``: the
        store's configuration keys, e.g. for S3 ``endpoint``, ``region``,
        ``access_key_id``, ``secret_access_key``, ``session_token``,
        ``conditional_put``. ``allow_http=True`` lets the client reach an
        ``http://`` endpoint (a local S3 API such as MinIO or moto); the
        other HTTP settings (obstore's ``ClientConfig``: ``timeout``,
        ``connect_timeout``, ...; ``CLIENT_OPTIONS``) may be given in
        ``client_options`` or among ``options``. ``retry_config`` defaults to
        ``DEFAULT_RETRY``. A URL or option the store refuses raises
        ``ValueError`` (no request is made here)."""
        _obstore()
        store_mod = importlib.import_module("obstore.store")
        client: Dict[str, Any] = dict(client_options or {})
        if allow_http:
            client["allow_http"] = True
        kwargs: Dict[str, Any] = {}
        for k, v in options.items():
            (client if k in CLIENT_OPTIONS else kwargs)[k] = v
        if not url.startswith("memory:"):
            kwargs["retry_config"] = retry_config if retry_config is not None else DEFAULT_RETRY
            if client:
                kwargs["client_options"] = client
        elif client or retry_config is not None or options:
            raise ValueError(f"table URL {url!r}: memory:// takes no options")
        try:
            store = store_mod.from_url(url, **kwargs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - obstore's errors vary; a bad option may panic
            raise ValueError(f"cannot open the table {url}: {type(e).__name__}: {e}") from e
        # The URL's path became the store's prefix: it must follow the key rules.
        prefix = getattr(store, "prefix", None) or ""
        try:
            _table_prefix(str(prefix))
        except InvalidKeyError as e:
            raise ValueError(f"table URL {url!r}: the table's path: {e.message}") from e
        return cls(store, "", location=url)

    def _path(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _error(self, op: str, key: str, e: Exception) -> BackendError:
        if isinstance(e, BackendError):
            return e
        ambiguous = " (the change may or may not have landed)" if op in ("create", "write", "delete") else ""
        where = f'cannot {op} "{_clip(key)}" on {self.location}'
        # A path the store refuses (obstore raises ValueError when it parses one).
        if isinstance(e, (ValueError, self._exceptions.InvalidPathError)):
            return InvalidKeyError(f"{where}: not a valid object path: {e}")
        return BackendIOError(f"{where}{ambiguous}: {type(e).__name__}: {e}")

    def get(self, key: str) -> Optional[bytes]:
        """The value of ``key``, or None."""
        check_key_rules("key", key, False)
        try:
            return bytes(self.store.get(self._path(key)).bytes())
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001 - every store failure is a storage error
            raise self._error("read", key, e) from e

    def put_if_absent(self, key: str, value: bytes) -> bool:
        """Creates ``key`` with a conditional create unless it exists; whether it did."""
        check_key_rules("key", key, False)
        try:
            self.store.put(self._path(key), bytes(value), mode="create", use_multipart=False)
            return True
        except (self._exceptions.AlreadyExistsError, self._exceptions.PreconditionError):
            # The key existed: its value is untouched.
            return False
        except Exception as e:  # noqa: BLE001
            raise self._error("create", key, e) from e

    def put(self, key: str, value: bytes) -> None:
        """Writes ``key``, replacing any value (one request)."""
        check_key_rules("key", key, False)
        try:
            self.store.put(self._path(key), bytes(value), mode="overwrite", use_multipart=False)
        except Exception as e:  # noqa: BLE001
            raise self._error("write", key, e) from e

    def delete(self, key: str) -> None:
        """Removes ``key`` (no error if it does not exist)."""
        check_key_rules("key", key, False)
        try:
            self.store.delete(self._path(key))
        except FileNotFoundError:
            return
        except Exception as e:  # noqa: BLE001
            raise self._error("delete", key, e) from e

    def _key_of(self, path: str) -> Optional[str]:
        """The key of a listed object, or None for one that is not a key of
        the table (outside the prefix, or a name the key rules refuse)."""
        key = path
        if self.prefix:
            if not path.startswith(self.prefix + "/"):
                return None
            key = path[len(self.prefix) + 1 :]
        try:
            check_key_rules("key", key, False)
        except InvalidKeyError:
            return None
        return key

    def list(self, prefix: str) -> List[str]:
        """The keys starting with ``prefix`` (text, not whole segments), in
        byte order of their UTF-8."""
        check_key_rules("prefix", prefix, True)
        # A store lists by path (whole segments): list the directory holding
        # the prefix's last, partial segment, then match the text.
        head, sep, _ = prefix.rpartition("/")
        directory = self._path(head) if sep else self.prefix
        try:
            objects = self.store.list(directory or None).collect()
        except Exception as e:  # noqa: BLE001
            raise self._error("list", prefix, e) from e
        keys = {k for k in (self._key_of(meta["path"]) for meta in objects) if k is not None and k.startswith(prefix)}
        return _byte_order(list(keys))

    def __repr__(self) -> str:
        return f"ObjectStoreStorage({self.location})"
