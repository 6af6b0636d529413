"""A table location: a URI (`s3://bucket/prefix`, `gs://`, `az://`/`abfss://`, `hdfs://`,
`file://`) or a plain local path, parsed once (`resolver.resolve` turns it into its `Store`).

Only `scheme://` starts a URI; anything else is a local path — except one that starts with a
known scheme and a colon (`s3:/lake`), which is a mistyped URI, refused rather than turned
into a local directory named `s3:`."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from mergetree.errors import InvalidArgumentError

from .options import AZURE, GCS, HDFS, LOCAL, REDACTED, S3, ResolvedOptions, resolve_options

__all__ = ["SCHEMES", "Location", "parse_location", "redact_uri"]

# scheme -> backend
SCHEMES = {"file": LOCAL, "s3": S3, "s3a": S3, "gs": GCS, "gcs": GCS, "az": AZURE, "azure": AZURE,
           "abfs": AZURE, "abfss": AZURE, "adl": AZURE, "hdfs": HDFS, "viewfs": HDFS}
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)
_MISTYPED = re.compile(r"^(" + "|".join(SCHEMES) + r"):(?!//)", re.IGNORECASE)
# Environment variables whose values are secrets: scrubbed from every message too.
SECRET_ENVIRONMENT = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY",
                      "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_SAS_TOKEN",
                      "AZURE_CLIENT_SECRET", "AZURE_STORAGE_CLIENT_SECRET", "GOOGLE_SERVICE_ACCOUNT_KEY")


@dataclass(frozen=True)
class Location:
    """Where a table lives.  `backend` is local, s3, gcs, azure or hdfs; `container` the
    bucket, container or namenode (empty for local); `root` the prefix under it (a local
    location: the absolute directory).  `str()` is the URI with secrets redacted."""
    uri: str
    scheme: str
    backend: str
    container: str
    root: str
    account: str = ""  # Azure: the storage account named in an abfss:// host
    options: ResolvedOptions = field(default_factory=ResolvedOptions, repr=False, compare=False)

    def __str__(self) -> str:
        return redact_uri(self.uri)

    def __repr__(self) -> str:
        return f"Location({str(self)!r}, backend={self.backend!r})"

    def child(self, path: str) -> str:
        """The redacted URI of an object under this location."""
        return str(self).rstrip("/") + "/" + path

    def shown_options(self) -> dict[str, str]:
        return dict(self.options.shown)

    @property
    def secrets(self) -> tuple[str, ...]:
        env = tuple(v for k in SECRET_ENVIRONMENT if (v := os.environ.get(k)))
        return self.options.secrets + env


def redact_uri(uri: str) -> str:
    """A URI without a password in its user part or a query string (SAS tokens)."""
    match = _URI.match(uri)
    if not match:
        return uri
    scheme, rest = match.groups()
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        user, _, host = authority.rpartition("@")
        if ":" in user:
            authority = f"{REDACTED}@{host}"
    if "?" in path:
        path = path.split("?", 1)[0] + "?" + REDACTED
    elif "?" in authority:
        authority = authority.split("?", 1)[0] + "?" + REDACTED
    return f"{scheme}://{authority}{slash}{path}"


def parse_location(uri: str | os.PathLike[str], storage_options: Mapping[str, object] | None = None) -> Location:
    """Parse a location and check its storage options (nothing is contacted)."""
    if isinstance(uri, os.PathLike):
        uri = os.fspath(uri)
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidArgumentError(f"a table location must be a URI or a local path, got {uri!r}")
    match = _URI.match(uri)
    if not match:
        if _MISTYPED.match(uri):
            raise InvalidArgumentError(f"{redact_uri(uri)!r} looks like a URI missing '//' (write "
                                       f"{uri.split(':', 1)[0]}://...); it is not taken as a local path")
        return _local(uri, uri, storage_options)
    scheme = match.group(1).lower()
    shown = redact_uri(uri)
    backend = SCHEMES.get(scheme)
    if backend is None:
        known = ", ".join(f"{s}://" for s in ("s3", "gs", "az", "abfss", "hdfs", "file"))
        raise InvalidArgumentError(f"unknown storage scheme {scheme!r} in {shown!r}: use {known} or a local path")
    parts = urlsplit(uri)
    if backend == LOCAL:
        if parts.netloc not in ("", "localhost"):
            raise InvalidArgumentError(f"{shown!r}: a file:// URI names a path on this machine (file:///path), "
                                       f"not host {parts.netloc!r}")
        return _local(uri, file_uri_path(parts.path), storage_options)
    options = resolve_options(storage_options, backend, repr(shown))
    root = parts.path.strip("/")
    if parts.query:
        raise InvalidArgumentError(f"{shown!r}: query parameters are not read; pass settings as storage_options")
    account = ""
    if backend == HDFS:
        if not parts.hostname:
            raise InvalidArgumentError(f"{shown!r}: an hdfs:// URI names its namenode (hdfs://host:port/path)")
        return Location(uri.rstrip("/"), scheme, backend, parts.netloc, "/" + root, options=options)
    container = parts.netloc
    if backend == AZURE and "@" in container:  # abfss://container@account.dfs.core.windows.net/path
        container, _, host = container.partition("@")
        account = host.split(".", 1)[0]
    if not container:
        raise InvalidArgumentError(f"{shown!r} names no bucket or container ({scheme}://BUCKET/prefix)")
    return Location(uri.rstrip("/"), scheme, backend, container, root, account, options)


def file_uri_path(uri_path: str, windows: bool = os.name == "nt") -> str:
    """The local path a file:// URI's path names: on Windows `file:///C:/data` is `C:/data`
    (the slash before the drive letter is the URI's, not the path's)."""
    if windows and re.match(r"^/[A-Za-z]:(/|$)", uri_path):
        return uri_path[1:3] + (uri_path[3:] or "/")  # "C:" alone would be the current directory
    return uri_path or "/"


def _local(uri: str, path: str, storage_options: Mapping[str, object] | None) -> Location:
    if storage_options:
        key = next(iter(storage_options))
        raise InvalidArgumentError(f"storage option {key!r} does not apply to a local path ({redact_uri(uri)!r})")
    root = os.path.abspath(os.path.expanduser(path))
    return Location(uri, "file", LOCAL, "", root)
