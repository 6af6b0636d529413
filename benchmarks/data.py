"""The data the benchmarks generate, shared by the harnesses and the asv suite (``asv_bench/``):
every generator takes its sizes and a seed, and the same arguments give the same rows.

* sorted runs for the bare merge (``benchmarks/bench_merge.py``, ``asv_bench``'s merge
  benchmarks): ``K`` runs sorted by key ``k``, each a random half of a key space twice as large
  as a run, with a sequence ``seq`` (every row of run ``i`` newer than any row of run ``i - 1``)
  and an int64, a float64 and a string payload column; int64 keys, int64 keys over a fixed
  1,000,000-key space in ``2K`` runs, 128-character random strings, or 128-character strings
  whose first 100 characters are shared;
* sorted runs whose key ranges overlap by a chosen share (``ranged_runs``; the sorted-merge
  workloads of ``benchmarks/bench_merge.py``, SORTED_MERGE_OVERLAPS): every run spanning one key
  range (interleaved), each run above the one before (disjoint: time-ordered keys), or each run's
  range overlapping the next run's by 10%;
* the upserts of the table workload (``benchmarks/bench_table.py``, ``asv_bench``'s table
  benchmarks, ``benchmarks/bench_storage.py``): commits of distinct random ids, payload values
  that differ in every commit, and the newest version of every key they leave;
* the rows of the layout workload (``benchmarks/bench_layout.py``, ``benchmarks/bench_advisor.py``,
  ``asv_bench``'s layout benchmarks; its queries are in ``benchmarks/queries.py``);
* row counts as people write them (``100k``, ``10M``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "CATEGORIES",
    "LAYOUT_SCHEMA",
    "MERGE_WORKLOADS",
    "SORTED_MERGE_OVERLAPS",
    "TABLE_SCHEMA",
    "LayoutData",
    "file_slices",
    "int_runs",
    "k16_runs",
    "make_layout_data",
    "newest_rows",
    "parse_row_count",
    "prefix_runs",
    "ranged_runs",
    "short_count",
    "sorted_runs",
    "string_runs",
    "table_commits",
]

# ---------------------------------------------------------------- sorted runs (the merge)

KEY = "k"
SEQ = "seq"
CHUNK_ROWS = 65_536
STRING_KEY_LENGTH = 128
K16_DISTINCT_KEYS = 1_000_000
SHARED_PREFIX = b"https://shop.example.com/catalog/electronics/computers/laptops/ultrabooks/14-inch/item?id=".ljust(
    100, b"0")  # the first 100 of every key's 128 characters
MERGE_SEED = 20240611
MERGE_WORKLOADS = ("int64", "int64-k16", "string128", "prefix128")
# the sorted-merge workloads: name -> the share of a run's key range that the next run's range overlaps
SORTED_MERGE_OVERLAPS = {"interleaved": 1.0, "disjoint": 0.0, "overlap10": 0.1}
_ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8
)


def _rows_per_run(total_rows: int, runs: int) -> int:
    if runs < 1:
        raise ValueError("--runs must be at least 1")
    return max(total_rows // runs, 1)


def _sorted_sample(rng: np.random.Generator, space: int, size: int) -> np.ndarray:
    """``size`` distinct values of ``range(space)``, ascending."""
    return np.sort(rng.choice(space, size=size, replace=False))


def _payload(rng: np.random.Generator, seq: np.ndarray, null_fraction: float) -> dict:
    numbers = pc.cast(pa.array(seq), pa.string())
    v_int = rng.integers(0, 1 << 40, size=len(seq), dtype=np.int64)
    v_float = rng.random(len(seq))
    # gaps for the partial-update engine to fill, drawn after the values (so null_fraction=0 draws the same values)
    masks = [rng.random(len(seq)) < null_fraction for _ in range(2)] if null_fraction else [None, None]
    return {
        "v_int": pa.array(v_int, mask=masks[0]),
        "v_float": pa.array(v_float, mask=masks[1]),
        "v_str": pc.binary_join_element_wise("p-", numbers, ""),
    }


def _run_table(keys: pa.Array | pa.ChunkedArray, seq: np.ndarray, rng: np.random.Generator,
               null_fraction: float) -> pa.Table:
    columns = {KEY: keys, SEQ: pa.array(seq, type=pa.int64()), **_payload(rng, seq, null_fraction)}
    table = pa.table(columns).combine_chunks()
    return pa.Table.from_batches(table.to_batches(max_chunksize=CHUNK_ROWS), table.schema)


def _sequences(run_index: int, per_run: int) -> np.ndarray:
    """Unique sequence numbers; every row of run i is newer than any row of run i - 1."""
    return np.arange(run_index * per_run, (run_index + 1) * per_run, dtype=np.int64)


def int_runs(total_rows: int, runs: int, seed: int = MERGE_SEED, null_fraction: float = 0.0) -> list[pa.Table]:
    """``runs`` runs of int64 keys, each a random half of a key space twice a run's size.
    ``null_fraction``: that share of ``v_int`` and ``v_float`` null."""
    return ranged_runs(total_rows, runs, 1.0, seed, null_fraction)


def ranged_runs(total_rows: int, runs: int, overlap: float, seed: int = MERGE_SEED,
                null_fraction: float = 0.0) -> list[pa.Table]:
    """``runs`` runs of int64 keys, each a random half of a key range twice a run's size, run
    ``i``'s range starting ``i * (1 - overlap)`` ranges above run 0's: ``overlap`` 1 puts every
    run in the same range (``int_runs``, the same rows), 0 each run above the one before, 0.1
    each run's last tenth of its range (about a tenth of its rows) beside the next run's first."""
    if not 0.0 <= overlap <= 1.0:
        raise ValueError(f"overlap must be between 0 and 1, not {overlap}")
    rng = np.random.default_rng(seed)
    per_run = _rows_per_run(total_rows, runs)
    span = 2 * per_run
    tables = []
    for index in range(runs):
        start = round(index * (1.0 - overlap) * span)
        keys = pa.array(_sorted_sample(rng, span, per_run).astype(np.int64) + start)
        tables.append(_run_table(keys, _sequences(index, per_run), rng, null_fraction))
    return tables


def _string_key_space(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` random alphanumeric strings of STRING_KEY_LENGTH bytes, sorted (numpy ``S`` dtype)."""
    letters = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(size, STRING_KEY_LENGTH), dtype=np.uint8)]
    return np.sort(letters.view(f"S{STRING_KEY_LENGTH}").ravel())


def _string_array(fixed: np.ndarray) -> pa.ChunkedArray:
    """Arrow utf8 chunks from a numpy ``S`` array whose strings all have full length."""
    chunks = []
    for start in range(0, len(fixed), CHUNK_ROWS):
        part = fixed[start:start + CHUNK_ROWS]
        offsets = np.arange(0, (len(part) + 1) * STRING_KEY_LENGTH, STRING_KEY_LENGTH, dtype=np.int32)
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(part.tobytes())]
        chunks.append(pa.Array.from_buffers(pa.string(), len(part), buffers))
    return pa.chunked_array(chunks, pa.string())


def k16_runs(total_rows: int, runs: int, seed: int = MERGE_SEED + 2, null_fraction: float = 0.0) -> list[pa.Table]:
    """Twice the runs over a fixed 1,000,000-key space (fewer at small sizes): about 8
    versions of a key."""
    rng = np.random.default_rng(seed)
    per_run = _rows_per_run(total_rows, 2 * runs)
    space = max(per_run + 1, min(K16_DISTINCT_KEYS, total_rows // 8))
    tables = []
    for index in range(2 * runs):
        keys = pa.array(_sorted_sample(rng, space, per_run).astype(np.int64))
        tables.append(_run_table(keys, _sequences(index, per_run), rng, null_fraction))
    return tables


def string_runs(total_rows: int, runs: int, seed: int = MERGE_SEED + 1, prefix: bytes = b"",
                null_fraction: float = 0.0) -> list[pa.Table]:
    """``runs`` runs of 128-character random ASCII keys (their first ``len(prefix)`` characters
    ``prefix``), key space as for ``int_runs``."""
    rng = np.random.default_rng(seed)
    per_run = _rows_per_run(total_rows, runs)
    space = _string_key_space(rng, 2 * per_run)
    if prefix:
        raw = space.view(np.uint8).reshape(len(space), STRING_KEY_LENGTH).copy()
        raw[:, :len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
        space = np.sort(raw.view(f"S{STRING_KEY_LENGTH}").ravel())
    tables = []
    for index in range(runs):
        keys = _string_array(space[_sorted_sample(rng, len(space), per_run)])
        tables.append(_run_table(keys, _sequences(index, per_run), rng, null_fraction))
    return tables


def prefix_runs(total_rows: int, runs: int, seed: int = MERGE_SEED + 3, null_fraction: float = 0.0) -> list[pa.Table]:
    """String keys whose first 100 bytes are one shared prefix: the 8-byte cached image
    of a key tells nothing, only the last 28 characters differ."""
    return string_runs(total_rows, runs, seed, prefix=SHARED_PREFIX, null_fraction=null_fraction)


def sorted_runs(workload: str, total_rows: int, runs: int, seed: int | None = None,
                null_fraction: float = 0.0) -> list[pa.Table]:
    """The runs of one of MERGE_WORKLOADS (``seed=None``: that workload's own seed)."""
    make = {"int64": int_runs, "int64-k16": k16_runs, "string128": string_runs, "prefix128": prefix_runs}[workload]
    if seed is None:
        return make(total_rows, runs, null_fraction=null_fraction)
    return make(total_rows, runs, seed, null_fraction=null_fraction)


# ---------------------------------------------------------------- upserts (the table)

TABLE_KEY = "id"
TABLE_SCHEMA = pa.schema([(TABLE_KEY, pa.int64()), ("v_int", pa.int64()), ("v_float", pa.float64()),
                          ("v_str", pa.string())])
TABLE_SEED = 20240612


def table_commits(upserts: int, keys: int, commits: int, seed: int = TABLE_SEED) -> list[pa.Table]:
    """``commits`` commits of ``upserts / commits`` distinct random ids of ``0 .. keys - 1`` each
    (in random order), in TABLE_SCHEMA; ``v_str`` is ``c<commit>-<id>``, so values differ in
    every commit."""
    per_commit = upserts // commits
    rng = np.random.default_rng(seed)
    tables = []
    for index in range(commits):
        ids = rng.choice(keys, size=per_commit, replace=False).astype(np.int64)  # random order
        text = pc.cast(pa.array(ids), pa.string())
        tables.append(pa.table({
            TABLE_KEY: pa.array(ids),
            "v_int": pa.array(rng.integers(0, 1 << 40, size=per_commit, dtype=np.int64)),
            "v_float": pa.array(rng.random(per_commit)),
            "v_str": pc.binary_join_element_wise(f"c{index}-", text, ""),
        }, schema=TABLE_SCHEMA))
    return tables


def newest_rows(commits: list[pa.Table], key: str = TABLE_KEY) -> pa.Table:
    """The newest version of every key of ``commits`` (later commits win), ascending by key:
    what a primary-key table holding them answers, computed without mergetree."""
    everything = pa.concat_tables(commits).combine_chunks()
    ids = everything.column(key).to_numpy()
    # the first occurrence in the reversed input is the newest version
    _, first_in_reversed = np.unique(ids[::-1], return_index=True)
    return everything.take(pa.array(len(ids) - 1 - first_in_reversed))


# ---------------------------------------------------------------- rows (the layout)

LAYOUT_SEED = 20240613
A_SPAN = 1_000_000_000
ZIPF_S = 1.3
ZIPF_CAP = 1_000_000_000
CATEGORIES = [f"cat-{i:02d}" for i in range(20)]
TS_START_US = int(np.datetime64("2024-01-01T00:00:00", "us").astype(np.int64))
TS_SPAN_US = 30 * 86_400 * 1_000_000

LAYOUT_SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64()), ("z", pa.int64()),
                           ("ts", pa.timestamp("us")), ("category", pa.string()), ("amount", pa.float64()),
                           ("qty", pa.int64())])


@dataclass
class LayoutData:
    """The generated rows, as Arrow (written to every table) and as numpy (the expected answers)."""

    table: pa.Table
    files: int
    columns: dict  # name -> numpy array (ts as int64 microseconds, category as int codes)
    b_sorted_sample: np.ndarray
    _top_order: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return self.table.num_rows

    def top_order(self) -> np.ndarray:
        """Row positions by ts descending, then id ascending (mergetree's tie-break: the other
        columns in schema order)."""
        if self._top_order is None:
            self._top_order = np.lexsort((self.columns["id"], -self.columns["ts"]))
        return self._top_order


def make_layout_data(rows: int, files: int, seed: int = LAYOUT_SEED) -> LayoutData:
    """``rows`` random rows in LAYOUT_SCHEMA, to be written as ``files`` files: ``id`` unique
    (even numbers in random order, so odd ids are absent), ``a`` uniform over [0, 1e9), ``b``
    normal, ``z`` Zipf-skewed, ``ts`` uniform over 30 days, ``category`` 20 values with 1/k
    frequencies, the measures ``amount`` and ``qty``."""
    if rows < files or files < 1:
        raise ValueError("the layout workload needs files >= 1 and rows >= files")
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(CATEGORIES) + 1)
    columns = {
        "id": rng.permutation(rows).astype(np.int64) * 2,
        "a": rng.integers(0, A_SPAN, rows, dtype=np.int64),
        "b": rng.normal(0.0, 1.0, rows),
        "z": np.minimum(rng.zipf(ZIPF_S, rows), ZIPF_CAP).astype(np.int64),
        "ts": TS_START_US + rng.integers(0, TS_SPAN_US, rows, dtype=np.int64),
        "category": rng.choice(len(CATEGORIES), rows, p=weights / weights.sum()).astype(np.int32),
        "amount": np.round(rng.lognormal(3.0, 1.0, rows), 2),
        "qty": rng.integers(1, 101, rows, dtype=np.int64),
    }
    categories = pa.DictionaryArray.from_arrays(pa.array(columns["category"]), pa.array(CATEGORIES))
    arrays = {name: pa.array(values) for name, values in columns.items() if name not in ("ts", "category")}
    arrays["ts"] = pa.array(columns["ts"], pa.timestamp("us"))
    arrays["category"] = categories.cast(pa.string())
    table = pa.table({f.name: arrays[f.name] for f in LAYOUT_SCHEMA}, schema=LAYOUT_SCHEMA)
    sample = np.sort(columns["b"][: min(rows, 1_000_000)])
    return LayoutData(table, files, columns, sample)


def file_slices(data: LayoutData) -> list[pa.Table]:
    """The rows cut into ``data.files`` consecutive slices, one per write (the last takes the rest)."""
    per = data.rows // data.files
    return [data.table.slice(i * per, per if i < data.files - 1 else data.rows - i * per) for i in range(data.files)]


# ---------------------------------------------------------------- sizes

MIN_ROWS = 1_000
_COUNT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?)\s*", re.IGNORECASE)
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}


def parse_row_count(text: str) -> int:
    """``"100k"`` -> 100000, ``"1.5M"`` -> 1500000, ``"2500000"`` -> 2500000 (ValueError otherwise,
    and below MIN_ROWS)."""
    match = _COUNT.fullmatch(text)
    if match is None:
        raise ValueError(f"{text.strip()!r} is not a row count (write it like 100k, 10M or 2500000)")
    try:
        value = Decimal(match.group(1)) * _SUFFIX[match.group(2).lower()]
    except InvalidOperation as error:  # pragma: no cover - the pattern admits only decimals
        raise ValueError(f"{text.strip()!r} is not a row count") from error
    if value != value.to_integral_value():
        raise ValueError(f"{text.strip()!r} is not a whole number of rows")
    if value < MIN_ROWS:
        raise ValueError(f"{text.strip()!r}: a size must be at least {MIN_ROWS:,} rows")
    return int(value)


def short_count(rows: int) -> str:
    """10000000 -> "10M", 20000 -> "20k"."""
    for suffix, factor in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if rows >= factor and rows % factor == 0:
            return f"{rows // factor}{suffix}"
    return f"{rows:,}"
