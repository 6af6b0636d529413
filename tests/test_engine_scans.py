"""Polars, DuckDB and DataFusion scans of mergetree and Paimon tables (`mergetree.polars`,
`.duckdb`, `.datafusion`): every answer equals a row-by-row model of the query over the table's
merged rows (and `Table.read` with the same filter), whatever the engine pushed; selective
queries read fewer files than full ones; the query log names the engine and the pushed filter."""
from __future__ import annotations

import datetime as dt
import decimal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, write_paimon
from sql_truth import truth as model

import mergetree
from mergetree import InvalidArgumentError, SnapshotNotFoundError, TableNotFoundError
from mergetree.engines.predicates import from_polars
from mergetree.table.workload import querylog

pl = pytest.importorskip("polars")

SCHEMA = pa.schema([("part", pa.int64()), ("id", pa.int64()), ("s", pa.string()), ("d", pa.date32()),
                    ("v", pa.int64())])
COLUMNS = SCHEMA.names
STRINGS = ["a", "b", "c", None]
DATES = [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(6)] + [None]


def _rows(seed: int, n: int, ids: range) -> list[dict]:
    out = []
    for i in range(n):
        x = (seed * 7919 + i * 104729) % 1000003
        key = ids[x % len(ids)]
        out.append({"part": key % 3, "id": key, "s": STRINGS[x % 4], "d": DATES[x % 7],
                    "v": None if x % 5 == 0 else x % 9 - 4})
    return out


def _unique_by_key(rows: list[dict]) -> list[dict]:
    return list({r["id"]: r for r in rows}.values())


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, mergetree.Table]:
    """An append table and a primary-key table with several unmerged runs (overlapping keys,
    deletes), both partitioned by `part` so that pruning shows in the files read."""
    root = tmp_path_factory.mktemp("engines")
    append = mergetree.Table.create(root / "append", SCHEMA, partition_by=["part"])
    pk = mergetree.Table.create(root / "pk", SCHEMA, primary_key=["part", "id"], partition_by=["part"],
                                options={"write-only": "true"})  # runs stay unmerged
    for run in range(4):
        append.write(pa.Table.from_pylist(_rows(run, 40, range(60)), SCHEMA))
        rows = _unique_by_key(_rows(run + 10, 40, range(run * 10, run * 10 + 40)))
        pk.write(pa.Table.from_pylist(rows, SCHEMA))
    doomed = [r for r in _unique_by_key(_rows(99, 8, range(0, 40)))]
    kinds = pa.Table.from_pylist(doomed, SCHEMA).append_column("_row_kind", pa.array(["-D"] * len(doomed)))
    pk.write(kinds)
    return {"append": append, "pk": pk}


# ---------------------------------------------------------------- random queries

COLUMN_VALUES = {"part": st.integers(-1, 3), "id": st.integers(-2, 62), "v": st.integers(-5, 5),
                 "s": st.sampled_from(["a", "b", "c", "bb", ""]),
                 "d": st.sampled_from([d for d in DATES if d is not None] + [dt.date(2019, 12, 31)])}


@st.composite
def atoms(draw: Any) -> tuple:
    column = draw(st.sampled_from(sorted(COLUMN_VALUES)))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]))
    if op in ("in", "not in"):
        return (column, op, draw(st.lists(COLUMN_VALUES[column], min_size=1, max_size=4)))
    if op in ("is null", "is not null"):
        return (column, op, None)
    return (column, op, draw(COLUMN_VALUES[column]))


queries = st.recursive(atoms(), lambda inner: st.one_of(
    st.tuples(st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=3)),
    st.tuples(st.just("not"), inner)), max_leaves=5)
projections = st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=5, unique=True)


def to_polars(q: tuple) -> Any:
    if q[0] in ("and", "or") and isinstance(q[1], list):
        out = to_polars(q[1][0])
        for x in q[1][1:]:
            out = (out & to_polars(x)) if q[0] == "and" else (out | to_polars(x))
        return out
    if q[0] == "not":
        return ~to_polars(q[1])
    column, op, value = q
    c = pl.col(column)
    if op in ("is null", "is not null"):
        return c.is_null() if op == "is null" else c.is_not_null()
    if op in ("in", "not in"):
        return c.is_in(value) if op == "in" else ~c.is_in(value)
    lit = pl.lit(value)
    return {"=": c == lit, "!=": c != lit, "<": c < lit, "<=": c <= lit, ">": c > lit, ">=": c >= lit}[op]


def _sql_value(v: Any) -> str:
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def to_sql(q: tuple) -> str:
    if q[0] in ("and", "or") and isinstance(q[1], list):
        return "(" + f" {q[0].upper()} ".join(to_sql(x) for x in q[1]) + ")"
    if q[0] == "not":
        return f"(NOT {to_sql(q[1])})"
    column, op, value = q
    if op in ("is null", "is not null"):
        return f"({column} {op.upper()})"
    if op in ("in", "not in"):
        return f"({column} {op.upper()} ({', '.join(_sql_value(v) for v in value)}))"
    return f"({column} {op} {_sql_value(value)})"


def to_arrow(q: tuple) -> pc.Expression:
    if q[0] in ("and", "or") and isinstance(q[1], list):
        out = to_arrow(q[1][0])
        for x in q[1][1:]:
            out = (out & to_arrow(x)) if q[0] == "and" else (out | to_arrow(x))
        return out
    if q[0] == "not":
        return ~to_arrow(q[1])
    column, op, value = q
    f = pc.field(column)
    if op in ("is null", "is not null"):
        return f.is_null() if op == "is null" else f.is_valid()
    if op in ("in", "not in"):
        # isin says false for a null row; SQL says unknown, which NOT keeps unknown
        inside = pc.if_else(f.is_valid(), f.isin(pa.array(value, SCHEMA.field(column).type)),
                            pa.scalar(None, pa.bool_()))
        return inside if op == "in" else ~inside
    s = pa.scalar(value, SCHEMA.field(column).type)
    return {"=": f == s, "!=": f != s, "<": f < s, "<=": f <= s, ">": f > s, ">=": f >= s}[op]


def canonical(rows: list[dict], columns: list[str]) -> list[tuple]:
    return sorted((tuple(r[c] for c in columns) for r in rows), key=lambda t: [(x is None, x) for x in t])


def expected(everything: pa.Table, q: tuple, columns: list[str]) -> list[tuple]:
    return canonical([r for r in everything.to_pylist() if model(q, r) is True], columns)


def engine_rows(engine: str, table: Any, q: tuple, columns: list[str], paimon: tuple | None = None) -> list[tuple]:
    if engine == "polars":
        import mergetree.polars as mpl
        lf = mpl.scan_paimon(*paimon) if paimon else mpl.scan_table(table)
        return canonical(lf.filter(to_polars(q)).select(columns).collect().to_dicts(), columns)
    query = f"SELECT {', '.join(columns)} FROM t WHERE {to_sql(q)}"
    if engine == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        import mergetree.duckdb as mdd
        con = duckdb.connect()
        mdd.register_paimon(con, "t", *paimon) if paimon else mdd.register(con, "t", table)
        return canonical(con.sql(query).to_arrow_table().to_pylist(), columns)
    datafusion = pytest.importorskip("datafusion")
    import mergetree.datafusion as mdf
    ctx = datafusion.SessionContext()
    mdf.register_paimon(ctx, "t", *paimon) if paimon else mdf.register(ctx, "t", table)
    return canonical(mdf.sql(ctx, query).to_pylist(), columns)


ENGINES = ["polars", "duckdb", "datafusion"]


def _or_of_not_ins(q: tuple) -> bool:
    """Does `q` hold an OR of NOT IN lists on one column?  DataFusion (55) simplifies
    `c NOT IN (a) OR c NOT IN (b)` to true, forgetting that a null `c` makes both unknown: it
    answers rows of null `c` that SQL leaves out (`test_datafusion_still_answers_or_of_not_in_wrongly`)."""
    if q[0] in ("and", "or"):
        if q[0] == "or":
            columns = [a[0] for a in q[1] if a[0] not in ("and", "or") and a[1] == "not in"]
            if len(columns) != len(set(columns)):
                return True
        return any(_or_of_not_ins(a) for a in q[1])
    return False


@pytest.mark.parametrize("kind", ["append", "pk"])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=queries, columns=projections)
def test_every_engine_answers_as_the_model(tables: dict, kind: str, q: tuple, columns: list[str]) -> None:
    table = tables[kind]
    everything = table.read()
    want = expected(everything, q, columns)
    assert canonical(table.read(columns, filter=to_arrow(q)).to_pylist(), columns) == want
    for engine in ENGINES:
        if engine == "datafusion" and _or_of_not_ins(q):
            continue  # DataFusion's own wrong answer, not the scan's (see `_or_of_not_ins`)
        assert engine_rows(engine, table, q, columns) == want, engine


def test_datafusion_still_answers_or_of_not_in_wrongly() -> None:
    """The DataFusion bug the model test steps around: when this fails, DataFusion answers
    right and `_or_of_not_ins` can go."""
    datafusion = pytest.importorskip("datafusion")
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [pa.table({"i": pa.array([1, None, 3]), "x": [1, 2, 3]}).to_batches()])
    rows = ctx.sql("select x from t where i not in (1) or i not in (2)").to_arrow_table().column("x").to_pylist()
    assert rows == [1, 2, 3]  # SQL says [1, 3]: a null i is neither in nor not in a list


def test_the_primary_key_table_has_unmerged_runs_and_deletes(tables: dict) -> None:
    pk = tables["pk"]
    info = pk.info()
    assert info.files > 3  # the fixture's premise: several runs per partition to merge
    rows = pk.read().to_pylist()
    assert len({r["id"] for r in rows}) == len(rows)  # merged: one version per key
    written = {r["id"] for run in range(4) for r in _rows(run + 10, 40, range(run * 10, run * 10 + 40))}
    assert len(rows) < len(written)  # the deletes took rows away


# ---------------------------------------------------------------- pushdown happens, and is logged

def _last_record(table: mergetree.Table) -> dict:
    log = querylog.read_rows(table.path).sort_by("ts").to_pylist()
    return log[-1]


def _query(engine: str, table: mergetree.Table, where: str | None, polars_filter: Any = None,
           limit: int | None = None) -> int:
    """Run a query through `engine`; the number of rows it returned."""
    if engine == "polars":
        import mergetree.polars as mpl
        lf = mpl.scan_table(table)
        if polars_filter is not None:
            lf = lf.filter(polars_filter)
        if limit is not None:
            lf = lf.head(limit)
        return lf.select("v").collect().height
    query = "SELECT v FROM t" + (f" WHERE {where}" if where else "") + (f" LIMIT {limit}" if limit else "")
    if engine == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        import mergetree.duckdb as mdd
        con = mdd.register(duckdb.connect(), "t", table)
        return len(con.sql(query).fetchall())
    datafusion = pytest.importorskip("datafusion")
    import mergetree.datafusion as mdf
    ctx = datafusion.SessionContext()
    mdf.register(ctx, "t", table)
    return mdf.sql(ctx, query).num_rows


@pytest.mark.parametrize("engine", ENGINES)
def test_a_selective_query_reads_fewer_files_and_logs_its_engine_and_filter(tables: dict, engine: str) -> None:
    pk = tables["pk"]
    _query(engine, pk, None)
    assert pk.last_read is not None
    full = pk.last_read.files_read
    record = _last_record(pk)
    assert record["source"] == engine and record["filter"] is None and record["files_scanned"] == full
    found = _query(engine, pk, "part = 1 AND id = 31", (pl.col("part") == 1) & (pl.col("id") == 31))
    assert 0 < pk.last_read.files_read < full
    record = _last_record(pk)
    assert record["source"] == engine
    pushed = querylog.filter_from_json(record["filter"])
    assert mergetree.table.filters.normalize(pushed) in (("and", [("part", "=", 1), ("id", "=", 31)]),
                                                         ("and", [("id", "=", 31), ("part", "=", 1)]))
    assert record["columns"] is not None and set(record["columns"]) == {"part", "id", "v"}
    assert record["files_scanned"] == pk.last_read.files_read
    assert found == pk.read(filter=[("part", "=", 1), ("id", "=", 31)]).num_rows == 1
    assert found == pk.read(filter=[("part", "=", 1), ("id", "=", 31)]).num_rows == 1


@pytest.mark.parametrize("engine", ["polars", "datafusion"])
def test_a_limit_reaches_the_scan(tables: dict, engine: str) -> None:
    append = tables["append"]
    _query(engine, append, None)
    full = append.last_read.files_read
    assert _query(engine, append, None, limit=3) == 3
    assert append.last_read.files_read < full
    assert _last_record(append)["limit"] == 3


def test_a_limit_after_an_untranslatable_predicate_is_not_pushed(tables: dict) -> None:
    import mergetree.polars as mpl
    pk = tables["pk"]
    # v * 2 > 0 does not translate: a limit pushed under it could return too few rows
    got = mpl.scan_table(pk).filter(pl.col("v") * 2 > 0).head(5).collect()
    assert got.height == min(5, sum(1 for r in pk.read().to_pylist() if r["v"] is not None and r["v"] > 0))
    record = _last_record(pk)
    assert record["limit"] is None and record["filter"] is None


def test_polars_batches_are_cut_to_the_batch_size(tables: dict) -> None:
    from mergetree.engines.polars import frames
    table = tables["append"]
    frames = list(frames(table.scan(), None, ["id"], None, 7))
    assert [f.height for f in frames[:-1]] == [7] * (len(frames) - 1) and 0 < frames[-1].height <= 7
    assert sum(f.height for f in frames) == table.read().num_rows


# ---------------------------------------------------------------- translation details

def test_literals_are_typed_by_the_column_or_not_pushed() -> None:
    schema = pa.schema([("i8", pa.int8()), ("f", pa.float64()), ("ts", pa.timestamp("us")),
                        ("tz", pa.timestamp("us", "UTC")), ("dec", pa.decimal128(10, 2)), ("d", pa.date32()),
                        ("s", pa.string())])
    assert from_polars(pl.col("i8") == 5, schema).filter == ("i8", "=", 5)
    assert from_polars(pl.col("i8") == 300, schema).filter is None  # not an int8: polars widens, we do not guess
    assert from_polars(pl.col("i8") < 1.5, schema).filter is None
    assert from_polars(pl.col("f") > 1.0, schema).filter is None  # NaN orders differently: never pushed
    when = dt.datetime(2020, 1, 2, 3)
    assert from_polars(pl.col("ts") >= when, schema).filter == ("ts", ">=", when)
    assert from_polars(pl.col("tz") >= when, schema).filter is None  # naive against zoned
    assert from_polars(pl.col("dec") > decimal.Decimal("1.25"), schema).filter == ("dec", ">", decimal.Decimal("1.25"))
    assert from_polars(pl.col("dec") > decimal.Decimal("1.255"), schema).filter is None  # would round
    assert from_polars(pl.col("d") == dt.datetime(2020, 1, 1), schema).filter is None
    assert from_polars(pl.col("s") == "x", schema).filter == ("s", "=", "x")
    assert from_polars(pl.lit(5) > pl.col("i8"), schema).filter == ("i8", "<", 5)


def test_negations_and_partial_translations() -> None:
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    t = from_polars(~((pl.col("a") < 3) | pl.col("s").is_in(["x", None])), schema)
    assert t.exact and t.filter == ("and", [("a", ">=", 3), ("s", "not in", ["x"])])
    t = from_polars((pl.col("a") == 1) & (pl.col("a") * 2 == 4), schema)
    assert not t.exact and t.filter == ("a", "=", 1)  # the untranslatable conjunct is left to polars
    assert from_polars((pl.col("a") == 1) | (pl.col("a") * 2 == 4), schema).filter is None
    assert from_polars(~((pl.col("a") == 1) & (pl.col("a") * 2 == 4)), schema).filter is None
    t = from_polars(pl.col("a").is_in([1, None], nulls_equal=True), schema)
    assert t.filter == ("or", [("a", "in", [1]), ("a", "is null", None)])
    assert from_polars(~pl.col("a").is_in([1], nulls_equal=True), schema).filter is None
    t = from_polars(pl.col("a").is_between(1, 5, closed="left"), schema)
    assert t.filter == ("and", [("a", ">=", 1), ("a", "<", 5)])


def test_the_shapes_duckdb_sends_are_translated() -> None:
    schema = pa.schema([("a", pa.int64()), ("us", pa.timestamp("us", "UTC")), ("ns", pa.timestamp("ns", "UTC"))])
    # DuckDB's x IN (...): unknown for a null x, else the membership
    inside = pl.when(pl.col("a").is_null()).then(pl.lit(None, pl.Boolean)).otherwise(pl.col("a").is_in([1, 2]))
    t = from_polars(inside, schema)
    assert t.exact and t.filter == ("and", [("a", "in", [1, 2]), ("a", "is not null", None)])
    assert from_polars(~inside, schema).filter == ("and", [("a", "not in", [1, 2]), ("a", "is not null", None)])
    # DuckDB casts a timestamp column to its own unit: lossless on a us column, not on a ns one
    when = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    assert from_polars(pl.col("us").dt.cast_time_unit("us") >= when, schema).filter == ("us", ">=", when)
    assert from_polars(pl.col("ns").dt.cast_time_unit("us") >= when, schema).filter is None


def test_timestamps_and_decimals_through_every_engine(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "UTC")), ("dec", pa.decimal128(10, 2))])
    table = mergetree.Table.create(tmp_path / "t", schema, primary_key="id")
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    for run in range(2):  # two runs: the second replaces half of the keys
        ids = range(run * 5, run * 5 + 10)
        table.write(pa.table({"id": list(ids), "ts": [base + dt.timedelta(hours=i + run) for i in ids],
                              "dec": [decimal.Decimal(i * 25 + run) / 100 for i in ids]}, schema=schema))
    rows = table.read().to_pylist()
    cutoff, amount = base + dt.timedelta(hours=7), decimal.Decimal("1.5")
    want = sorted(r["id"] for r in rows if r["ts"] >= cutoff and r["dec"] > amount)
    import mergetree.polars as mpl
    got = mpl.scan_table(table).filter((pl.col("ts") >= cutoff) & (pl.col("dec") > amount)).collect()
    assert sorted(got["id"].to_list()) == want
    pushed = querylog.filter_from_json(_last_record(table)["filter"])
    assert pushed[0] == "and" and sorted(pushed[1], key=repr) == [("dec", ">", amount), ("ts", ">=", cutoff)]
    where = "ts >= TIMESTAMPTZ '2024-01-01 07:00:00+00' AND dec > 1.5"
    duckdb = pytest.importorskip("duckdb")
    import mergetree.duckdb as mdd
    con = mdd.register(duckdb.connect(), "t", table)
    assert sorted(r[0] for r in con.sql(f"SELECT id FROM t WHERE {where}").fetchall()) == want
    assert _last_record(table)["source"] == "duckdb" and _last_record(table)["filter"] is not None
    datafusion = pytest.importorskip("datafusion")
    import mergetree.datafusion as mdf
    ctx = datafusion.SessionContext()
    mdf.register(ctx, "t", table)
    where = "ts >= TIMESTAMP '2024-01-01T07:00:00Z' AND dec > 1.5"
    assert sorted(mdf.sql(ctx, f"SELECT id FROM t WHERE {where}").column("id").to_pylist()) == want
    assert _last_record(table)["source"] == "datafusion" and _last_record(table)["filter"] is not None


# ---------------------------------------------------------------- errors

def test_clear_errors(tables: dict, tmp_path: Path) -> None:
    import mergetree.polars as mpl
    with pytest.raises(TableNotFoundError):
        mpl.scan_table(tmp_path / "nothing-here")
    with pytest.raises(SnapshotNotFoundError):
        mpl.scan_table(tables["pk"], snapshot=999)
    with pytest.raises(InvalidArgumentError, match="snapshot"):
        mpl.scan_table(tables["pk"], snapshot="latest")
    with pytest.raises(InvalidArgumentError, match="Table or a table path"):
        mpl.scan_table(42)
    from mergetree.engines.sources import checked_columns
    with pytest.raises(InvalidArgumentError, match="nope"):
        checked_columns(["id", "nope"], SCHEMA, "t")
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        mpl.scan_table(tables["pk"]).select("nope").collect()
    duckdb = pytest.importorskip("duckdb")
    import mergetree.duckdb as mdd
    with pytest.raises(TableNotFoundError):
        mdd.register(duckdb.connect(), "t", tmp_path / "nothing-here")
    datafusion = pytest.importorskip("datafusion")
    import mergetree.datafusion as mdf
    ctx = datafusion.SessionContext()
    with pytest.raises(SnapshotNotFoundError):
        mdf.register(ctx, "t", tables["pk"], snapshot=999)
    mdf.register(ctx, "t", tables["pk"])
    mdf.register(ctx, "t", tables["append"])  # as DuckDB's register: the name now means the other table
    assert mdf.sql(ctx, "SELECT count(*) AS n FROM t").column("n")[0].as_py() == tables["append"].read().num_rows
    ctx.register_record_batches("own", [[pa.record_batch({"x": [1]})]])
    with pytest.raises(InvalidArgumentError, match="already has a table 'own'"):
        mdf.register(ctx, "own", tables["pk"])


def test_a_pinned_snapshot_is_what_every_engine_reads(tmp_path: Path) -> None:
    table = mergetree.Table.create(tmp_path / "t", SCHEMA, primary_key=["part", "id"])
    table.write(pa.Table.from_pylist(_rows(1, 10, range(10)), SCHEMA))
    import mergetree.polars as mpl
    lf = mpl.scan_table(table)
    first = table.read().num_rows
    table.write(pa.Table.from_pylist(_rows(2, 10, range(100, 110)), SCHEMA))
    assert lf.collect().height == first  # the frame reads the snapshot it was made at
    assert mpl.scan_table(table).collect().height == table.read().num_rows > first


# ---------------------------------------------------------------- Paimon tables

@pytest.fixture(scope="module")
def paimon_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("paimon")
    wh = root / "wh"
    commits = [pa.Table.from_pylist(_unique_by_key(_rows(run, 30, range(run * 8, run * 8 + 30))), SCHEMA)
               for run in range(3)]
    write_paimon(root / "work", wh, "db.t", commits, ["part", "id"], ["part"], {"bucket": "2"})
    from mergetree import paimon
    assert paimon.info(str(wh), "db.t").max_sorted_runs > 1  # reads merge several runs
    return str(wh), "db.t"


@needs_pypaimon
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=queries, columns=projections)
def test_paimon_tables_answer_as_the_model(paimon_table: tuple[str, str], q: tuple, columns: list[str]) -> None:
    from mergetree import paimon
    everything = paimon.read(*paimon_table)
    want = expected(everything, q, columns)
    for engine in ENGINES:
        assert engine_rows(engine, None, q, columns, paimon=paimon_table) == want, engine


def test_a_missing_engine_names_the_extra_that_installs_it(tables: dict) -> None:
    code = ("import sys; sys.modules['polars'] = None\n"  # as if polars were not installed
            "import mergetree, mergetree.polars\n"
            f"try:\n    mergetree.polars.scan_table({tables['pk'].path!r})\n"
            "except ImportError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "mergetree.polars needs polars" in done.stdout and "mergetree[polars]" in done.stdout, done.stderr
