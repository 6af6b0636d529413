"""The names of a table's own files, in one place.

Everything mergetree writes in a table directory matches one of these patterns, and every
cleanup (orphan removal, snapshot expiration, a failed write discarding its files) deletes
only paths that match them: a foreign file in the directory is never touched, whatever
its age.  Names read from metadata are checked against the same patterns before use, so
a damaged manifest cannot point a deletion outside the table either.
"""
from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

__all__ = [
    "CHANGELOG_DIR",
    "CONSUMER_DIR",
    "LATEST_HINT",
    "MANIFEST_DIR",
    "SCHEMA_DIR",
    "SCHEMA_FILE",
    "SNAPSHOT_DIR",
    "bucket_directory",
    "changelog_file_name",
    "consumer_file",
    "consumer_id_of",
    "data_file_name",
    "deletion_vector_file_name",
    "is_changelog_file",
    "is_data_file",
    "is_deletion_vector_file",
    "is_manifest",
    "is_manifest_list",
    "is_owned",
    "is_sidecar",
    "is_temporary",
    "manifest_list_name",
    "manifest_name",
    "partition_text",
    "retained_changelog_file",
    "retained_changelog_id_of",
    "schema_file",
    "schema_id_of",
    "sidecar_name",
    "snapshot_file",
    "snapshot_id_of",
    "temporary_final",
    "temporary_name",
]

SCHEMA_DIR = "schema"
SNAPSHOT_DIR = "snapshot"
MANIFEST_DIR = "manifest"
SCHEMA_FILE = f"{SCHEMA_DIR}/schema-0.json"  # the first version, written by create
# The id of the newest snapshot committed, written after each commit: a hint that can lag
# behind (a crash between commit and hint) but never run ahead, so a hint above the newest
# snapshot file means that file was lost.
LATEST_HINT = f"{SNAPSHOT_DIR}/LATEST"

_HEX = "[0-9a-f]{32}"
_SNAPSHOT = re.compile(rf"{SNAPSHOT_DIR}/snapshot-(\d+)\.json")
_SCHEMA = re.compile(rf"{SCHEMA_DIR}/schema-(\d+)\.json")
_MANIFEST = re.compile(rf"manifest-{_HEX}\.json")
_MANIFEST_LIST = re.compile(rf"manifest-list-{_HEX}\.json")
_DATA = re.compile(rf"bucket-\d+/data-{_HEX}\.parquet")
# files beside a data file that belong to it: its bitmap index, its pre-aggregates
_SIDECAR = re.compile(rf"bucket-\d+/data-{_HEX}\.(?:bitmap|agg-[A-Za-z0-9_-]+)\.parquet")
# a deletion-vector index file (rows of the bucket's data files that newer versions replaced)
_DELETION_VECTORS = re.compile(rf"bucket-\d+/index-{_HEX}\.dv")
# a changelog file: a commit's changes as rows with their kinds (`changelog-producer`)
_CHANGELOG = re.compile(rf"bucket-\d+/changelog-{_HEX}\.parquet")
# a snapshot's metadata kept after the snapshot expired, for its changelog (`changelog.*` retention)
CHANGELOG_DIR = "changelog"
_RETAINED_CHANGELOG = re.compile(rf"{CHANGELOG_DIR}/changelog-(\d+)\.json")
# a named consumer's progress: the next snapshot it reads (`consumer-id`)
CONSUMER_DIR = "consumer"
_CONSUMER = re.compile(rf"{CONSUMER_DIR}/consumer-([A-Za-z0-9_.-]{{1,200}})\.json")
_TEMPORARY = re.compile(rf"(.+)\.(?:{_HEX}|\d+)\.tmp")
# a local store's file being written (`mergetree.storage.LocalDiskStore`): ".<name>.tmp-<hex>"
_STORE_TEMPORARY = re.compile(rf"((?:.*/)?)\.([^/]+)\.tmp-{_HEX}")


def temporary_final(name: str) -> str | None:
    """The name a temporary file was to be published under, or None if it is not one."""
    temporary = _TEMPORARY.fullmatch(name)
    if temporary:
        return temporary.group(1)
    stored = _STORE_TEMPORARY.fullmatch(name)
    return stored.group(1) + stored.group(2) if stored else None


def schema_file(schema_id: int) -> str:
    return f"{SCHEMA_DIR}/schema-{schema_id}.json"


def schema_id_of(name: str) -> int | None:
    """The id in a schema file's name (relative to the table), or None."""
    match = _SCHEMA.fullmatch(name)
    return int(match.group(1)) if match else None


def snapshot_file(snapshot_id: int) -> str:
    return f"{SNAPSHOT_DIR}/snapshot-{snapshot_id}.json"


def snapshot_id_of(name: str) -> int | None:
    """The id in a snapshot file's name (relative to the table), or None."""
    match = _SNAPSHOT.fullmatch(name)
    return int(match.group(1)) if match else None


def manifest_name() -> str:
    return f"manifest-{uuid.uuid4().hex}.json"


def manifest_list_name() -> str:
    return f"manifest-list-{uuid.uuid4().hex}.json"


def is_manifest(name: str) -> bool:
    """A manifest's name as a manifest list holds it (relative to manifest/)."""
    return _MANIFEST.fullmatch(name) is not None


def is_manifest_list(name: str) -> bool:
    return _MANIFEST_LIST.fullmatch(name) is not None


def temporary_name(final: str) -> str:
    """Where a file is written before it is published under `final`."""
    return f"{final}.{uuid.uuid4().hex}.tmp"


def partition_text(value: object) -> str:
    """A partition value as one safe path component."""
    if value is None:
        return "__NULL__"
    if value == "":
        return "__EMPTY__"
    return "".join(c if c.isalnum() or c in "-_." else f"%{ord(c):02X}" for c in str(value))


def bucket_directory(partition_by: Sequence[str], partition: Sequence[object], bucket: int) -> str:
    """A bucket's directory relative to the table: `[col=value/...]bucket-N`."""
    parts = [f"{c}={partition_text(v)}" for c, v in zip(partition_by, partition)]
    return "/".join(parts + [f"bucket-{bucket}"])


def data_file_name(directory: str) -> str:
    """A new data file's name in a bucket directory."""
    return f"{directory}/data-{uuid.uuid4().hex}.parquet"


def _in_bucket_directory(name: str, partition_by: Sequence[str], pattern: re.Pattern) -> bool:
    parts = name.split("/")
    if len(parts) != len(partition_by) + 2:
        return False
    for part, column in zip(parts, partition_by):
        prefix = f"{column}="
        if not part.startswith(prefix) or len(part) == len(prefix):
            return False
    return pattern.fullmatch("/".join(parts[-2:])) is not None


def is_data_file(name: str, partition_by: Sequence[str]) -> bool:
    """Is `name` (relative to the table) a data file's name for this partitioning?"""
    return _in_bucket_directory(name, partition_by, _DATA)


def sidecar_name(data_file: str, kind: str) -> str:
    """A file that belongs to a data file: kind "bitmap" or "agg-<model name>"."""
    return f"{data_file[:-len('.parquet')]}.{kind}.parquet"


def is_sidecar(name: str, partition_by: Sequence[str]) -> bool:
    return _in_bucket_directory(name, partition_by, _SIDECAR)


def deletion_vector_file_name(directory: str) -> str:
    """A new deletion-vector index file's name in a bucket directory."""
    return f"{directory}/index-{uuid.uuid4().hex}.dv"


def is_deletion_vector_file(name: str, partition_by: Sequence[str]) -> bool:
    return _in_bucket_directory(name, partition_by, _DELETION_VECTORS)


def changelog_file_name(directory: str) -> str:
    """A new changelog file's name in a bucket directory."""
    return f"{directory}/changelog-{uuid.uuid4().hex}.parquet"


def is_changelog_file(name: str, partition_by: Sequence[str]) -> bool:
    return _in_bucket_directory(name, partition_by, _CHANGELOG)


def retained_changelog_file(snapshot_id: int) -> str:
    """Where snapshot `snapshot_id`'s metadata is kept for its changelog once it expired."""
    return f"{CHANGELOG_DIR}/changelog-{snapshot_id}.json"


def retained_changelog_id_of(name: str) -> int | None:
    match = _RETAINED_CHANGELOG.fullmatch(name)
    return int(match.group(1)) if match else None


def consumer_file(consumer_id: str) -> str:
    """A consumer's file; the id is checked (letters, digits, '_', '.', '-'; 1 to 200)."""
    name = f"{CONSUMER_DIR}/consumer-{consumer_id}.json"
    if not isinstance(consumer_id, str) or _CONSUMER.fullmatch(name) is None or consumer_id in (".", ".."):
        raise ValueError(f"consumer id {consumer_id!r}: use 1 to 200 letters, digits, '_', '.' or '-'")
    return name


def consumer_id_of(name: str) -> str | None:
    match = _CONSUMER.fullmatch(name)
    return match.group(1) if match else None


def is_owned(name: str, partition_by: Sequence[str]) -> bool:
    """Could mergetree have written `name` (relative to the table, '/'-separated)?"""
    final = temporary_final(name)
    if final is not None:
        name = final
        if name == LATEST_HINT:
            return True
    if _SNAPSHOT.fullmatch(name) or _SCHEMA.fullmatch(name):
        return True
    if name.startswith(MANIFEST_DIR + "/"):
        rest = name[len(MANIFEST_DIR) + 1:]
        return is_manifest(rest) or is_manifest_list(rest)
    if _RETAINED_CHANGELOG.fullmatch(name) or _CONSUMER.fullmatch(name):
        return True
    return (is_data_file(name, partition_by) or is_sidecar(name, partition_by)
            or is_deletion_vector_file(name, partition_by) or is_changelog_file(name, partition_by))


def is_temporary(name: str) -> bool:
    return temporary_final(name) is not None
