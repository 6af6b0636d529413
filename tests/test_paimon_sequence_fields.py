"""`sequence.field` with several columns and `sequence.field.sort-order`: the versions of a key
are ordered by the fields lexicographically in the listed order (each ascending, or each
descending), a null older than any value in both orders, then by the sequence number — as
the comparator Paimon generates (`GenerateUtils.generateRowCompare`, nulls first, only the
non-null comparison negated).  Checked against a row-by-row model of that comparator, and
against pypaimon (which implements the same comparator) before and after compaction."""
from __future__ import annotations

import functools
import math
import random
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read, rows, write_paimon

import mergetree.paimon as mp
from mergetree import UnsupportedPaimonFeatureError
from mergetree.table.paimon.options import check_options
from mergetree.table.sequence_fields import ORDER_COLUMN, ranked

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.float64()), ("v", pa.string()),
                    ("cnt", pa.int64()), ("op", pa.string())])


def java_compare(x: tuple, y: tuple, descending: bool) -> int:
    """Paimon's generated record comparator over the sequence fields: field by field, a null
    first whatever the order, the sign applied to the comparison of two values only; floats as
    Java's Double.compare (NaN above +inf, -0.0 below 0.0)."""
    sign = -1 if descending else 1
    for a, b in zip(x, y):
        if a is None and b is None:
            continue
        if a is None:
            return -1
        if b is None:
            return 1
        if isinstance(a, float):
            a, b = _java_double(a), _java_double(b)
        if a != b:
            return sign if a > b else -sign
    return 0


def _java_double(x: float) -> tuple:
    return (1, 0.0, 0.0) if math.isnan(x) else (0, x, math.copysign(1.0, x))


def ordered(versions: list[tuple[tuple, int]], descending: bool) -> list[int]:
    """Indexes of (sequence fields, sequence number) versions from oldest to newest."""
    def cmp(i: int, j: int) -> int:
        c = java_compare(versions[i][0], versions[j][0], descending)
        return c or (versions[i][1] > versions[j][1]) - (versions[i][1] < versions[j][1])
    return sorted(range(len(versions)), key=functools.cmp_to_key(cmp))


def _fold(engine: str, order: list[dict]) -> dict | None:
    """A key's versions (oldest first) merged by the engine; None: the key is deleted."""
    if engine == "deduplicate":
        return None if order[-1]["op"] in ("-D", "-U") else order[-1]
    state: dict = {}
    for row in order:
        if engine == "partial-update":
            state = {c: row[c] if row[c] is not None else state.get(c) for c in row}
        else:  # aggregation: cnt summed, the sequence fields the newest value, the rest the last non-null
            state = {c: (row[c] if state.get(c) is None else state[c] if row[c] is None else state[c] + row[c])
                     if c == "cnt" else row[c] if c in ("a", "b") or row[c] is not None else state.get(c)
                     for c in row}
    return state


def model(engine: str, stages: list[list[pa.Table]], fields: list[str], descending: bool) -> list[dict]:
    """What a read returns: per key, its versions ordered by the comparator, then folded.
    Between stages the table was fully compacted: each key's versions became the merged row
    (a deleted key none), which is all the later versions are compared with — as in Paimon."""
    versions: dict[int, list[tuple[tuple, int, dict]]] = {}
    n = 0
    for i, commits in enumerate(stages):
        if i:
            for k, vs in list(versions.items()):
                row = _fold(engine, [vs[j][2] for j in ordered([(v[0], v[1]) for v in vs], descending)])
                versions[k] = [] if row is None else [(tuple(row[f] for f in fields), n, row)]
        for commit in commits:
            for row in commit.to_pylist():
                n += 1
                versions.setdefault(row["id"], []).append((tuple(row[f] for f in fields), n, row))
    out = [_fold(engine, [vs[j][2] for j in ordered([(v[0], v[1]) for v in vs], descending)])
           for vs in versions.values() if vs]
    return rows(pa.Table.from_pylist([r for r in out if r is not None], schema=SCHEMA), ["id"])


def written(engine: str, tables: list[pa.Table], fields: list[str], descending: bool) -> pa.Table:
    """One write's rows as its level-0 files hold them: a key's versions folded in the
    comparator's order, as Java's write buffer folds them (a partial-update row then carries each
    sequence field's newest non-null value into later comparisons; a deleting version stays)."""
    versions: dict[int, list[tuple[tuple, int, dict]]] = {}
    for n, row in enumerate(pa.concat_tables(tables).to_pylist()):
        versions.setdefault(row["id"], []).append((tuple(row[f] for f in fields), n, row))
    out = []
    for vs in versions.values():
        order = [vs[j][2] for j in ordered([(v[0], v[1]) for v in vs], descending)]
        out.append(order[-1] if engine == "deduplicate" else _fold(engine, order))
    return pa.Table.from_pylist(out, schema=SCHEMA)


VALUES_A = st.none() | st.integers(-3, 3)
VALUES_B = st.none() | st.sampled_from([-1.5, -0.0, 0.0, 2.0, math.inf, -math.inf, math.nan])


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(st.lists(st.tuples(VALUES_A, VALUES_B), max_size=12), max_size=4), descending=st.booleans(),
       two=st.booleans())
def test_ranks_follow_the_generated_comparator(runs, descending: bool, two: bool) -> None:
    """Any section (empty, one run, ties, nulls, NaN, signed zeros): the rank order is the
    comparator's order, then the sequence number."""
    fields = ["a", "b"] if two else ["b"]
    seq = 0
    batches, versions = [], []
    for run in runs:
        a = [x for x, _ in run]
        b = [y for _, y in run]
        seqs = list(range(seq, seq + len(run)))
        random.Random(seq).shuffle(seqs)  # sequence numbers need not follow the run order
        seq += len(run)
        batches.append([pa.record_batch({"a": pa.array(a, pa.int32()), "b": pa.array(b, pa.float64()),
                                         "_SEQUENCE_NUMBER": pa.array(seqs, pa.int64())})])
        versions += [((x, y) if two else (y,), s) for x, y, s in zip(a, b, seqs)]
    ranked_runs = ranked(batches, fields, descending)
    ranks = [r for run in ranked_runs for b in run for r in b.column(ORDER_COLUMN).to_pylist()]
    assert sorted(range(len(ranks)), key=ranks.__getitem__) == ordered(versions, descending)


def test_options_parse_several_fields_and_the_order() -> None:
    opts = check_options({"bucket": "1", "sequence.field": " a , b", "sequence.field.sort-order": "DESCENDING"},
                         SCHEMA.names, ["id"], [])
    assert opts.sequence_fields == ("a", "b") and opts.sequence_descending
    assert opts.sequence_field == "a,b"
    assert check_options({"bucket": "1"}, SCHEMA.names, ["id"], []).sequence_fields == ()
    agg = check_options({"bucket": "1", "sequence.field": "a", "merge-engine": "aggregation",
                         "fields.default-aggregate-function": "sum"}, SCHEMA.names, ["id"], [])
    assert agg.aggregations["a"] == "last_value" and agg.aggregations["cnt"] == "sum"  # not aggregated, as Paimon
    for bad, named in [({"sequence.field": "a,,b"}, "sequence.field"), ({"sequence.field": "a,a"}, "sequence.field"),
                       ({"sequence.field": "a,zz"}, "sequence.field"),
                       ({"sequence.field.sort-order": "up"}, "sequence.field.sort-order"),
                       ({"sequence.field": "a", "merge-engine": "first-row"}, "sequence.field"),
                       ({"sequence.field": "a", "merge-engine": "aggregation", "fields.a.aggregate-function": "max"},
                        "fields.a.aggregate-function")]:
        with pytest.raises(UnsupportedPaimonFeatureError, match=named.replace(".", r"\.")):
            check_options({"bucket": "1", **bad}, SCHEMA.names, ["id"], [])


def _commits(seed: int, count: int, keys: int, deletes: bool) -> list[pa.Table]:
    rng = random.Random(seed)
    out = []
    for c in range(count):
        chosen = rng.sample(range(keys), rng.randint(1, keys * 2 // 3))
        out.append(pa.table({
            "id": chosen,
            # few distinct values: ties on the first field decide on the second, often on neither
            "a": [None if rng.random() < 0.15 else rng.randint(0, 3) for _ in chosen],
            "b": [None if rng.random() < 0.15 else rng.choice([-1.0, 0.5, 2.0]) for _ in chosen],
            "v": [None if rng.random() < 0.3 else f"c{c}-{rng.randint(0, 9)}" for _ in chosen],
            "cnt": [None if rng.random() < 0.2 else rng.randint(0, 9) for _ in chosen],
            "op": ["-D" if deletes and c and rng.random() < 0.2 else "+I" for _ in chosen]}, schema=SCHEMA))
    return out


CASES = [("deduplicate", False, True), ("deduplicate", True, True), ("partial-update", True, False),
         ("aggregation", False, False)]


@needs_pypaimon
@pytest.mark.parametrize(("engine", "descending", "deletes"), CASES,
                         ids=[f"{e}-{'desc' if d else 'asc'}{'-del' if x else ''}" for e, d, x in CASES])
def test_two_sequence_fields_read_and_compact(tmp_path: Path, engine: str, descending: bool, deletes: bool) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    options = {"bucket": "2", "merge-engine": engine, "sequence.field": "a,b",
               "sequence.field.sort-order": "descending" if descending else "ascending"}
    if deletes:
        options["rowkind.field"] = "op"
    if engine == "aggregation":
        options["fields.cnt.aggregate-function"] = "sum"
    commits = _commits(len(engine) + descending, 5, 40, deletes)
    write_paimon(work, wh, name, commits, ["id"], [], options)
    expected = model(engine, [commits], ["a", "b"], descending)
    assert rows(mp.read(str(wh), name), ["id"]) == expected
    assert rows(pypaimon_read(wh, name, work), ["id"]) == expected
    some = {r["id"] for r in expected[::3]}
    got = mp.read(str(wh), name, columns=["id", "v"], filter=("id", "in", sorted(some)))
    assert rows(got, ["id"]) == [{"id": r["id"], "v": r["v"]} for r in expected if r["id"] in some]

    assert mp.compact(str(wh), name, full=True) is not None
    assert mp.info(str(wh), name).max_sorted_runs == 1
    assert rows(mp.read(str(wh), name), ["id"]) == expected
    assert rows(pypaimon_read(wh, name, work), ["id"]) == expected

    more = _commits(99, 2, 50, deletes)  # new versions land on both sides of the compacted ones
    write_paimon(work, wh, name, more, ["id"], [], options)
    expected = model(engine, [commits, more], ["a", "b"], descending)
    assert rows(mp.read(str(wh), name), ["id"]) == expected
    mp.compact(str(wh), name)
    assert rows(mp.read(str(wh), name), ["id"]) == expected

    # mergetree's writes: a key's versions within one write are ordered by the sequence fields too
    # (after a full compaction, the state the model's next stage starts from)
    mp.compact(str(wh), name, full=True)
    last = _commits(7, 3, 50, deletes)
    mp.write(str(wh), name, pa.concat_tables(last))
    expected = model(engine, [commits, more, [written(engine, last, ["a", "b"], descending)]], ["a", "b"],
                     descending)
    assert rows(mp.read(str(wh), name), ["id"]) == expected
    assert rows(pypaimon_read(wh, name, work), ["id"]) == expected
