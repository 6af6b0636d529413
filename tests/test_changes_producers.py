"""Changelog producers (issue 26): a lookup changelog is exactly the computed change (the -U
rows carry the exact previous rows, also after a lost commit race), an input changelog keeps
the rows as written, and changelog files stay readable after their snapshot expired."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import InvalidArgumentError, Table


def per_commit(table: Table, start: int = 0) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for r in table.changes(start, per_commit=True).read_all().to_pylist():
        out.setdefault(r.pop("_snapshot_id"), []).append(str(r))
    return {c: sorted(rows) for c, rows in out.items()}


def test_an_input_changelog_keeps_the_rows_as_written(tmp_path):
    table = Table.create(tmp_path, pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_key=["k"],
                         options={"changelog-producer": "input"})
    table.write({"k": [1, 2], "v": ["a", "b"]})
    rows = pa.table({"k": [2, 1, 3], "v": ["b", "a", None], "_row_kind": ["-U", "+U", "-D"]})
    table.write(rows)
    got = table.changes(1, 2, per_commit=True).read_all().to_pylist()
    # as written, in key order: the -D of a key the table never held too (a computed change has none)
    assert [(r["k"], r["v"], r["_row_kind"]) for r in got] == [(1, "a", "+U"), (2, "b", "-U"), (3, None, "-D")]
    net = table.changes(1, 2).read_all().to_pylist()  # the net change is computed: input rows are not exact
    assert [(r["k"], r["v"], r["_row_kind"]) for r in net] == [(2, "b", "-D")]


def test_a_source_says_where_the_change_comes_from(tmp_path):
    """source="changelog": the commits' changelog files as written, commit after commit across
    buckets (with ``changelog-producer`` none: the rows each commit wrote); "delta" always
    computes; "auto" computes unless the changelogs are exact."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    table = Table.create(tmp_path / "input", schema, primary_key=["k"], buckets=2,
                         options={"changelog-producer": "input"})
    table.write({"k": [1, 2, 5], "v": ["a", "b", "e"]})
    table.write(pa.table({"k": [2, 1, 3], "v": ["b", "a", None], "_row_kind": ["-U", "+U", "-D"]}))
    rows = [(r["k"], r["v"], r["_row_kind"]) for r in table.changes(0, source="changelog").read_all().to_pylist()]
    assert sorted(rows[:3]) == [(1, "a", "+I"), (2, "b", "+I"), (5, "e", "+I")]
    assert sorted(rows[3:]) == [(1, "a", "+U"), (2, "b", "-U"), (3, None, "-D")]
    stamped = table.changes(0, per_commit=True, source="changelog").read_all()
    assert stamped.column("_snapshot_id").to_pylist() == [1, 1, 1, 2, 2, 2]
    assert [(r["k"], r["v"], r["_row_kind"]) for r in stamped.to_pylist()] == rows
    assert table.changes(0, source="delta").read_all().equals(table.changes(0).read_all())
    assert table.changes(1, per_commit=True, source="delta").read_all().to_pylist() == \
        [{"k": 2, "v": "b", "_row_kind": "-D", "_snapshot_id": 2}]
    with pytest.raises(InvalidArgumentError, match="source must be one of auto, delta, changelog"):
        table.changes(0, source="lookup")

    plain = Table.create(tmp_path / "none", schema, primary_key=["k"])
    plain.write({"k": [1, 2], "v": ["a", "b"]})
    plain.write({"k": [1], "v": ["c"]})
    plain.compact(full=True)  # a compaction changes nothing
    assert [(r["k"], r["v"], r["_row_kind"]) for r in plain.changes(0, source="changelog").read_all().to_pylist()] \
        == [(1, "a", "+I"), (2, "b", "+I"), (1, "c", "+I")]
    assert [(r["k"], r["v"], r["_row_kind"]) for r in plain.changes(1).read_all().to_pylist()] == \
        [(1, "a", "-U"), (1, "c", "+U")]


cdc_rows = st.lists(st.tuples(st.integers(0, 6), st.one_of(st.none(), st.integers(-3, 3)),
                              st.sampled_from(["+I", "-U", "+U", "-D"])), min_size=1, max_size=10)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(engine=st.sampled_from(["deduplicate", "partial-update"]), buckets=st.sampled_from([1, 2]),
       writes=st.lists(cdc_rows, min_size=1, max_size=4))
def test_an_input_changelog_is_every_row_as_written(tmp_path_factory, engine, buckets, writes):
    """Per commit: the rows written (a table ignoring deletes drops retractions as it takes them), in
    key order, a key's rows in write order — repeated keys of one write too."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    table = Table.create(tmp_path_factory.mktemp("t"), schema, primary_key=["k"], buckets=buckets,
                         merge_engine=engine, options={"changelog-producer": "input",  # Paimon refuses a
                                                       # partial-update's retractions unless ignored
                                                       **({"ignore-delete": "true"} if engine != "deduplicate"
                                                          else {})})
    expected: dict[int, list] = {}
    for rows in writes:
        data = pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows], "_row_kind": [r[2] for r in rows]})
        snapshot = table.write(data)
        kept = [r for r in rows if engine == "deduplicate" or r[2] in ("+I", "+U")]
        if kept:
            expected[snapshot.id] = sorted(kept, key=lambda r: r[0])  # stable: write order within a key
    got: dict[int, list] = {}
    for r in table.changes(0, per_commit=True).read_all().to_pylist():
        got.setdefault(r["_snapshot_id"], []).append((r["k"], r["v"], r["_row_kind"]))
    if buckets > 1:  # buckets come one after another: compare each key's rows
        got = {c: sorted(rows, key=lambda r: r[0]) for c, rows in got.items()}
    assert got == expected


