"""Dynamic bucket mode (``bucket = -1`` on a primary-key table, Paimon's default): which bucket
a key goes to is recorded, not computed.  Each bucket has a hash index file (index type
``HASH`` in the index manifest: the 32-bit hash of every key it ever took, big-endian ints, as
Java's ``IntFileUtils`` writes them); a key seen before goes where it went, a new one to the
first bucket (ascending) holding fewer than ``dynamic-bucket.target-row-num`` keys, else to a
new bucket (the smallest unused id), and past ``dynamic-bucket.max-buckets`` to a random one
(Java's ``PartitionIndex.assign``).  The hash is the trimmed primary key's BinaryRow hash, the
one Paimon's bucket function uses.

One writer at a time (as Java asks: a dynamic-bucket table takes a single write job): a commit
that finds another writer gave one of its new keys another bucket since it read the index
raises `CommitConflictError` and commits nothing (`PartitionAssigner.conflicts`); new keys of
different writers that do not meet are merged into each bucket's index."""
from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

import numpy as np

from ...errors import CorruptTableError, UnsupportedPaimonFeatureError

__all__ = ["HASH_INDEX", "PartitionAssigner", "decode_hashes", "encode_hashes"]

HASH_INDEX = "HASH"
MAX_BUCKETS = 32768  # a bucket id is a Java short


def decode_hashes(data: bytes, where: str) -> np.ndarray:
    """A hash index file's ints (int32), checked: whole 4-byte words only."""
    if len(data) % 4:
        raise CorruptTableError(f"hash index {where} holds {len(data)} bytes, not whole 4-byte ints", path=where)
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


def encode_hashes(hashes: np.ndarray) -> bytes:
    """A bucket's hashes as its index file: each once, ascending, big-endian."""
    return np.unique(hashes.astype(np.int32)).astype(">i4").tobytes()


@dataclass
class PartitionAssigner:
    """One partition's key hashes and their buckets: those the index recorded at snapshot
    `snapshot_id` (`known_*`, sorted by hash) and those this process assigned since
    (`pending_*`), with each bucket's count of keys."""

    snapshot_id: int | None
    target: int
    max_buckets: int
    known_hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    known_buckets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int16))
    pending_hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    pending_buckets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int16))
    counts: dict[int, int] = field(default_factory=dict)
    index_names: dict[int, str] = field(default_factory=dict)  # bucket -> its index file, as known
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, snapshot_id: int | None, per_bucket: dict[int, np.ndarray], target: int,
             max_buckets: int, names: dict[int, str] | None = None) -> PartitionAssigner:
        """From each bucket's index (bucket -> its hashes; `names`: bucket -> its file)."""
        out = cls(snapshot_id, target, max_buckets, index_names=dict(names or {}))
        if per_bucket:
            hashes = np.concatenate([per_bucket[b] for b in sorted(per_bucket)])
            buckets = np.concatenate([np.full(len(per_bucket[b]), b, np.int16) for b in sorted(per_bucket)])
            order = np.argsort(hashes, kind="stable")
            out.known_hashes, out.known_buckets = hashes[order], buckets[order]
            out.counts = {b: len(per_bucket[b]) for b in sorted(per_bucket)}
        return out

    @staticmethod
    def _find(sorted_hashes: np.ndarray, buckets: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """Each hash's bucket in (sorted_hashes, buckets), -1 where it is not there."""
        if not len(sorted_hashes):
            return np.full(len(hashes), -1, np.int32)
        at = np.minimum(np.searchsorted(sorted_hashes, hashes), len(sorted_hashes) - 1)
        return np.where(sorted_hashes[at] == hashes, buckets[at].astype(np.int32), -1)

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """Each row's bucket (int32) for its key hash; new keys assigned in row order."""
        hashes = np.asarray(hashes, dtype=np.int32)
        with self.lock:
            out = self._find(self.known_hashes, self.known_buckets, hashes)
            missing = out < 0
            if missing.any():
                out[missing] = self._find(self.pending_hashes, self.pending_buckets, hashes[missing])
                missing = out < 0
            if not missing.any():
                return out
            new, first = np.unique(hashes[missing], return_index=True)
            new = new[np.argsort(first, kind="stable")]  # in the order the rows bring them
            assigned = self._place(len(new))
            order = np.argsort(new, kind="stable")
            merged_hashes = np.concatenate([self.pending_hashes, new[order]])
            merged_buckets = np.concatenate([self.pending_buckets, assigned[order].astype(np.int16)])
            resort = np.argsort(merged_hashes, kind="stable")
            self.pending_hashes, self.pending_buckets = merged_hashes[resort], merged_buckets[resort]
            out[missing] = self._find(self.pending_hashes, self.pending_buckets, hashes[missing])
            return out

    def _place(self, n: int) -> np.ndarray:
        """Buckets for `n` new keys, in turn: the non-full buckets ascending, then new ones."""
        out = np.empty(n, np.int32)
        done = 0
        limit = MAX_BUCKETS if self.max_buckets == -1 else self.max_buckets
        while done < n:
            open_bucket = next((b for b in sorted(self.counts) if self.counts[b] < self.target), None)
            if open_bucket is None:
                unused = next((b for b in range(limit) if b not in self.counts), None)
                if unused is None:
                    if self.max_buckets == -1:
                        raise UnsupportedPaimonFeatureError(
                            f"a dynamic-bucket partition is out of buckets ({MAX_BUCKETS}); raise "
                            f"'dynamic-bucket.target-row-num' (now {self.target})")
                    # past the table's bucket limit: a random bucket each, as Java's
                    choices = sorted(self.counts)
                    rest = n - done
                    out[done:] = [random.choice(choices) for _ in range(rest)]
                    for b in out[done:]:
                        self.counts[int(b)] += 1
                    return out
                self.counts[unused] = 0
                open_bucket = unused
            take = min(self.target - self.counts[open_bucket], n - done)
            out[done:done + take] = open_bucket
            self.counts[open_bucket] += take
            done += take
        return out

    def pending(self) -> tuple[np.ndarray, np.ndarray]:
        """The keys assigned and not yet committed (hashes, their buckets), as they are now."""
        with self.lock:
            return self.pending_hashes.copy(), self.pending_buckets.copy()

    def known_by_bucket(self) -> dict[int, np.ndarray]:
        """The index as loaded (and committed since): bucket -> its hashes."""
        with self.lock:
            return {int(b): self.known_hashes[self.known_buckets == b] for b in np.unique(self.known_buckets)}

    def conflicts(self, latest: dict[int, np.ndarray], hashes: np.ndarray, buckets: np.ndarray) -> int:
        """How many of the new keys (`hashes` in `buckets`) the latest index (bucket -> hashes)
        places in another bucket (a concurrent writer's doing)."""
        if not len(hashes) or not latest:
            return 0
        other = PartitionAssigner.load(None, latest, self.target, self.max_buckets)
        there = self._find(other.known_hashes, other.known_buckets, hashes)
        return int(np.count_nonzero((there >= 0) & (there != buckets.astype(np.int32))))

    def committed(self, snapshot_id: int, hashes: np.ndarray, names: dict[int, str],
                  index: dict[int, np.ndarray] | None = None) -> None:
        """The new keys `hashes` are in the index of snapshot `snapshot_id` now, whose files
        are `names` (bucket -> file); `index`: the index it was committed on (bucket -> hashes),
        read again because another writer had changed it — the known keys are those then.  Keys
        assigned since stay pending for their own commit."""
        with self.lock:
            written = np.isin(self.pending_hashes, hashes)
            moved_hashes, moved_buckets = self.pending_hashes[written], self.pending_buckets[written]
            if index is not None:
                base = PartitionAssigner.load(None, index, self.target, self.max_buckets)
                self.known_hashes, self.known_buckets = base.known_hashes, base.known_buckets
                for bucket, count in base.counts.items():  # (other writers' keys count too)
                    self.counts[bucket] = max(self.counts.get(bucket, 0), count)
            all_hashes = np.concatenate([self.known_hashes, moved_hashes])
            all_buckets = np.concatenate([self.known_buckets, moved_buckets])
            order = np.argsort(all_hashes, kind="stable")
            self.known_hashes, self.known_buckets = all_hashes[order], all_buckets[order]
            self.pending_hashes, self.pending_buckets = self.pending_hashes[~written], self.pending_buckets[~written]
            self.snapshot_id = snapshot_id
            self.index_names = dict(names)
