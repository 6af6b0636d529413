"""SQL history import: a corpus of realistic Trino and Spark SQL with the patterns each
statement must yield; malformed statements are skipped and counted; imported filters replay."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mergetree import InvalidArgumentError, Table
from mergetree.cli.app import main
from mergetree.organize import extract_queries, import_sql
from mergetree.organize.sqlimport import (
    FUNCTION,
    NOT_CONSTANT,
    OR_BRANCH,
    SUBQUERY,
    TOO_LARGE,
    TWO_COLUMNS,
    UNKNOWN_COLUMN,
    read_statements,
)
from mergetree.table.workload import querylog

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64()), ("c", pa.string()),
                    ("ts", pa.timestamp("us")), ("d", pa.date32()), ("category", pa.string()),
                    ("amount", pa.float64()), ("price", pa.decimal128(10, 2))])

# (dialect, statement, [(filter, predicates, order_by, limit, group_by, measures), ...]) — one tuple
# per place the statement reads `events`
CORPUS = [
    ("trino", "SELECT * FROM events WHERE a = 5",
     [(("a", "=", 5), [("a", "eq")], [], None, [], [])]),
    ("trino", "SELECT * FROM hive.db.events WHERE a IN (1, 2, 3) AND b > 0.5",
     [(("and", [("a", "in", [1, 2, 3]), ("b", ">", 0.5)]), [("a", "in"), ("b", "range")], [], None, [], [])]),
    ("trino", "SELECT id FROM events e WHERE e.a BETWEEN 10 AND 20 OR (e.c = 'x' AND NOT e.b >= 1)",
     [(("or", [("and", [("a", ">=", 10), ("a", "<=", 20)]), ("and", [("c", "=", "x"), ("b", "<", 1.0)])]),
       [("a", "range"), ("c", "eq"), ("b", "range")], [], None, [], [])]),
    ("trino", "SELECT * FROM events WHERE NOT (a = 1 OR c IS NULL)",
     [(("and", [("a", "!=", 1), ("c", "is not null", None)]), [("a", "ne"), ("c", "not_null")], [], None, [], [])]),
    ("trino", "SELECT * FROM events WHERE ts >= TIMESTAMP '2024-03-01 00:00:00' AND d = DATE '2024-03-01'",
     [(("and", [("ts", ">=", dt.datetime(2024, 3, 1)), ("d", "=", dt.date(2024, 3, 1))]),
       [("ts", "range"), ("d", "eq")], [], None, [], [])]),
    ("spark", "SELECT * FROM events WHERE d >= '2024-01-01' AND price > 9.99 AND a > -3",
     [(("and", [("d", ">=", dt.date(2024, 1, 1)), ("price", ">", Decimal("9.99")), ("a", ">", -3)]),
       [("d", "range"), ("price", "range"), ("a", "range")], [], None, [], [])]),
    ("trino", "SELECT * FROM events WHERE c LIKE 'user_%' OR c LIKE 'abc%'",
     # 'user_%' has a wildcard inside: the whole OR says nothing about files
     [(None, [("c", "expression"), ("c", "like_prefix")], [], None, [], [])]),
    ("trino", "SELECT * FROM events WHERE c LIKE 'abc%' AND lower(c) = 'x' AND a = 1",
     [(("and", [("c", ">=", "abc"), ("c", "<", "abd"), ("a", "=", 1)]),
       [("c", "like_prefix"), ("c", "expression"), ("a", "eq")], [], None, [], [])]),
    ("trino", "SELECT id, ts FROM events WHERE category = 'books' ORDER BY ts DESC, id LIMIT 10",
     [(("category", "=", "books"), [("category", "eq")], [("ts", "desc"), ("id", "asc")], 10, [], [])]),
    ("spark", "SELECT id, ts AS t FROM events ORDER BY t DESC LIMIT 5",
     [(None, [], [("ts", "desc")], 5, [], [])]),
    ("trino", "SELECT category, sum(amount), count(*), avg(b) FROM events WHERE category IN ('a', 'b') "
              "GROUP BY category ORDER BY 2 DESC",
     [(("category", "in", ["a", "b"]), [("category", "in")], [], None, ["category"],
       [("amount", "sum"), ("*", "count"), ("b", "sum"), ("b", "count")])]),
    ("trino", "SELECT category, c, max(amount) AS top FROM events GROUP BY 1, 2",
     [(None, [], [], None, ["category", "c"], [("amount", "max")])]),
    ("trino", "SELECT count(DISTINCT id), min(ts) FROM events WHERE a = 2",
     [(("a", "=", 2), [("a", "eq")], [], None, [], [("ts", "min")])]),
    # CTE passing the table on, filtered again outside, joined, grouped
    ("trino", "WITH recent AS (SELECT * FROM events WHERE ts >= TIMESTAMP '2024-05-01 00:00:00') "
              "SELECT r.category, sum(r.amount) FROM recent r JOIN users u ON r.id = u.id AND u.country = 'FR' "
              "WHERE r.a IN (1, 2) GROUP BY r.category",
     [(("and", [("ts", ">=", dt.datetime(2024, 5, 1)), ("a", "in", [1, 2])]), [("ts", "range"), ("a", "in")], [],
       None, ["category"], [("amount", "sum")])]),
    # a subquery that keeps only some columns: the outer filter on a kept column still applies
    ("spark", "SELECT * FROM (SELECT id, a FROM events WHERE b < 0) s WHERE s.a > 3 ORDER BY s.a LIMIT 7",
     [(("and", [("b", "<", 0.0), ("a", ">", 3)]), [("b", "range"), ("a", "range")], [("a", "asc")], 7, [], [])]),
    # a subquery that aggregates: the outer filter is on groups, not on the table's rows
    ("trino", "SELECT * FROM (SELECT category, sum(amount) AS s FROM events GROUP BY category) g "
              "WHERE g.category = 'x'",
     [(None, [], [], None, ["category"], [("amount", "sum")])]),
    # a self-join: two reads, predicates attributed by alias; join keys are no predicates
    ("trino", "SELECT x.id FROM events x JOIN events y ON x.id = y.id WHERE x.a = 1 AND y.b < 0",
     [(("a", "=", 1), [("a", "eq")], [], None, [], []), (("b", "<", 0.0), [("b", "range")], [], None, [], [])]),
    # another table's columns with the same name are not ours
    ("trino", "SELECT * FROM events e JOIN dim d ON e.category = d.category WHERE d.a = 3 AND e.c = 'k'",
     [(("c", "=", "k"), [("c", "eq")], [], None, [], [])]),
    # IN (subquery) is logged, but has no replayable filter
    ("trino", "SELECT * FROM events WHERE id IN (SELECT id FROM other WHERE z = 1) AND a < 4",
     [(("a", "<", 4), [("id", "expression"), ("a", "range")], [], None, [], [])]),
    # window functions do not group
    ("spark", "SELECT id, row_number() OVER (PARTITION BY category ORDER BY ts) FROM events WHERE a = 9",
     [(("a", "=", 9), [("a", "eq")], [], None, [], [])]),
    # a value of the wrong type is logged as a predicate, not as a filter
    ("trino", "SELECT * FROM events WHERE a = 'seven' AND c = 'q'",
     [(("c", "=", "q"), [("a", "eq"), ("c", "eq")], [], None, [], [])]),
    ("trino", "INSERT INTO archive SELECT * FROM events WHERE d < DATE '2024-01-01'",
     [(("d", "<", dt.date(2024, 1, 1)), [("d", "range")], [], None, [], [])]),
    ("trino", "SELECT * FROM events WHERE a = 1 UNION ALL SELECT * FROM events WHERE a = 2",
     [(("a", "=", 1), [("a", "eq")], [], None, [], []), (("a", "=", 2), [("a", "eq")], [], None, [], [])]),
    ("trino", "SELECT * FROM other_table WHERE a = 1", []),
]


@pytest.mark.parametrize("dialect,sql,expected", CORPUS, ids=[f"{i}" for i in range(len(CORPUS))])
def test_the_corpus_yields_the_expected_patterns(dialect, sql, expected):
    got = extract_queries(sql, SCHEMA, "events", dialect)
    shapes = [(q.filter, [tuple(p) for p in q.predicates], q.order_by, q.limit, q.group_by, q.measures) for q in got]
    assert sorted(shapes, key=repr) == sorted(expected, key=repr)


def _events(tmp_path):
    table = Table.create(str(tmp_path / "events"), SCHEMA)
    table.write({"id": list(range(20)), "a": [i % 5 for i in range(20)], "b": [i / 10 for i in range(20)],
                 "c": [f"abc{i}" if i % 2 else f"x{i}" for i in range(20)],
                 "ts": [dt.datetime(2024, 5, 1) + dt.timedelta(hours=i) for i in range(20)],
                 "d": [dt.date(2024, 5, 1 + i % 3) for i in range(20)], "category": ["k", "m"] * 10,
                 "amount": [1.5] * 20, "price": [Decimal("1.00")] * 20})
    return table


def _logged(table):
    querylog.flush()
    log = querylog.log_path(table.path)
    return Table.open(log).read().to_pylist() if os.path.isdir(log) else []


def _multiline(sql):
    """The statement as people write it: a clause a line, indented."""
    for word in (" FROM ", " WHERE ", " AND ", " OR ", " GROUP BY ", " ORDER BY ", " JOIN ", " UNION ALL "):
        sql = sql.replace(word, "\n  " + word.strip() + " ")
    return sql


def test_import_logs_queries_skips_malformed_and_replays(tmp_path):
    table = _events(tmp_path)
    history = tmp_path / "history.sql"
    trino = [x for x in CORPUS if x[0] == "trino"]
    parts = [f"-- exported {dt.date(2024, 5, 2)}\n\n"]
    parts += [_multiline(sql.replace("events", "db.events")) + ";\n\n" for _, sql, _ in trino]
    parts += ["SELEC * FORM events;\n", "SELECT * FROM db.events WHERE (a = 1;\n", "SELECT * FROM db.events\n"]
    history.write_text("".join(parts))
    result = import_sql(table.path, history, dialect="trino", table_name="db.events")
    assert result.statements == len(trino) + 3
    assert result.skipped == 2 and len(result.errors) == 2
    assert "not a statement" in result.errors[0] and result.errors[0].startswith("line ")
    assert result.other_tables == 1
    assert result.imported == sum(len(expected) for _, _, expected in trino) + 1
    log = _logged(table)
    assert len(log) == result.imported and {r["source"] for r in log} == {"import"}
    # every statement logged with its whole text, each logged filter replays on the table
    for r in log:
        table.read(filter=querylog.filter_from_json(r["filter"]))
    texts = {r["sql"] for r in log}
    assert _multiline(trino[1][1].replace("events", "db.events")) in texts


def test_json_lines_carry_time_user_and_duration(tmp_path):
    table = _events(tmp_path)
    history = tmp_path / "history.jsonl"
    records = [
        {"query": "SELECT *\nFROM db.events\nWHERE c LIKE 'abc%'", "user": "ana", "ts": "2024-05-02T08:00:00Z",
         "duration_ms": 42},
        {"sql": "SELECT * FROM db.events WHERE a = 1; SELECT * FROM db.events WHERE a = 2;", "user": "bo"},
    ]
    lines = [json.dumps(r) for r in records] + ["{not json", '{"user": "no query"}', ""]
    history.write_text("\n".join(lines) + "\n")
    result = import_sql(table.path, history, dialect="trino", table_name="db.events")
    assert (result.statements, result.imported, result.skipped) == (5, 3, 2)
    assert result.errors[0].startswith("line 3: not a JSON object") and result.errors[1].startswith("line 4: ")
    log = _logged(table)
    ana = next(r for r in log if r["user"] == "ana")
    assert ana["duration_ms"] == 42 and ana["ts"] == dt.datetime(2024, 5, 2, 8, tzinfo=dt.timezone.utc)
    assert ana["predicates"] == [{"column": "c", "kind": "like_prefix"}]
    assert sorted(querylog.filter_from_json(r["filter"]) for r in log if r["user"] == "bo") == \
        [("a", "=", 1), ("a", "=", 2)]
    # the LIKE-prefix range selects what LIKE does
    like = table.read(filter=querylog.filter_from_json(ana["filter"]))
    assert sorted(like.column("c").to_pylist()) == sorted(c for c in table.read().column("c").to_pylist()
                                                          if c.startswith("abc"))


def test_bad_arguments_are_clear(tmp_path):
    table = Table.create(str(tmp_path / "events"), SCHEMA)
    (tmp_path / "h.sql").write_text("SELECT 1\n")
    with pytest.raises(InvalidArgumentError, match="unknown SQL dialect 'nosuch'"):
        import_sql(table.path, tmp_path / "h.sql", dialect="nosuch")
    with pytest.raises(InvalidArgumentError, match="cannot read the SQL history"):
        import_sql(table.path, tmp_path / "missing.sql")


# ---------------------------------------------------------------------------
# Real multi-line SQL: SSB and TPC-H shapes on a lineorder table
# ---------------------------------------------------------------------------

LINEORDER = pa.schema([("lo_orderkey", pa.int64()), ("lo_linenumber", pa.int32()), ("lo_orderdate", pa.date32()),
                       ("lo_commitdate", pa.date32()), ("lo_receiptdate", pa.date32()), ("lo_quantity", pa.int32()),
                       ("lo_discount", pa.int32()), ("lo_extendedprice", pa.float64()), ("lo_shipmode", pa.string()),
                       ("lo_comment", pa.string())])

# (statement, filter logged for lineorder, reasons of the predicates left out)
WORKLOAD = [
    ("""-- SSB Q1.1: the date dimension joined the old way
SELECT SUM(lo_extendedprice * lo_discount) AS revenue
FROM lineorder, dates
WHERE lo_orderdate = d_datekey
  AND d_year = 1993
  AND lo_discount BETWEEN 1 AND 3
  AND lo_quantity < 25""",
     ("and", [("lo_discount", ">=", 1), ("lo_discount", "<=", 3), ("lo_quantity", "<", 25)]), []),
    ("""/* SSB Q2.1; brands of a category */
SELECT SUM(lo.lo_extendedprice), d.d_year, p.p_brand1
FROM lineorder lo
JOIN dates d ON lo.lo_orderdate = d.d_datekey
JOIN part p ON lo.lo_partkey = p.p_partkey
JOIN supplier s ON lo.lo_suppkey = s.s_suppkey
WHERE p.p_category = 'MFGR#12'
  AND s.s_region = 'AMERICA'
GROUP BY d.d_year, p.p_brand1
ORDER BY d.d_year, p.p_brand1""", None, []),
    ("""-- TPC-H Q6 on lineorder: the interval arithmetic has no filter form
select
    sum(lo_extendedprice * lo_discount) as revenue
from
    lineorder
where
    lo_orderdate >= date '1994-01-01'
    and lo_orderdate < date '1994-01-01' + interval '1' year
    and lo_discount between 6 - 1 and 6 + 1
    and lo_quantity < 24""",
     ("and", [("lo_orderdate", ">=", dt.date(1994, 1, 1)), ("lo_quantity", "<", 24)]),
     [NOT_CONSTANT, NOT_CONSTANT]),
    ("""SELECT lo_shipmode, count(*) AS orders  -- per mode; no ';' ends it here
FROM lineorder
WHERE lo_shipmode IN ('MAIL', 'SHIP',
                      'AIR;REG')   -- a ';' in a string
  AND lo_orderdate BETWEEN DATE '1995-01-01' AND DATE '1995-12-31'
GROUP BY lo_shipmode
ORDER BY lo_shipmode""",
     ("and", [("lo_shipmode", "in", ["MAIL", "SHIP", "AIR;REG"]), ("lo_orderdate", ">=", dt.date(1995, 1, 1)),
              ("lo_orderdate", "<=", dt.date(1995, 12, 31))]), []),
    ("""-- TPC-H Q12 on lineorder: a column compared with a column of its own table
SELECT l.lo_shipmode,
       sum(CASE WHEN o.o_orderpriority = '1-URGENT' OR o.o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END)
FROM orders o
JOIN lineorder l ON o.o_orderkey = l.lo_orderkey
WHERE l.lo_shipmode IN ('MAIL', 'SHIP')
  AND l.lo_commitdate < l.lo_receiptdate
  AND l.lo_receiptdate >= DATE '1994-01-01' AND l.lo_receiptdate < DATE '1995-01-01'
GROUP BY l.lo_shipmode""",
     ("and", [("lo_shipmode", "in", ["MAIL", "SHIP"]), ("lo_receiptdate", ">=", dt.date(1994, 1, 1)),
              ("lo_receiptdate", "<", dt.date(1995, 1, 1))]), [TWO_COLUMNS]),
    ("""SELECT *
FROM lineorder
WHERE lo_comment = 'it''s -- not a comment; nor /* this */'
   OR lo_orderkey = 7""",
     ("or", [("lo_comment", "=", "it's -- not a comment; nor /* this */"), ("lo_orderkey", "=", 7)]), []),
    ("""SELECT *
FROM lineorder
WHERE lo_shipmod = 'AIR'              -- a typo: no such column
  AND upper(lo_comment) LIKE 'X%'
  AND lo_orderkey IN (SELECT o_orderkey FROM orders WHERE o_status = 'F')
  AND (lo_quantity > 10 OR lo_comment LIKE '%late%')
  AND lo_linenumber = 1""",
     ("lo_linenumber", "=", 1), [UNKNOWN_COLUMN, FUNCTION, SUBQUERY, OR_BRANCH]),
]


@pytest.mark.parametrize("sql,expected,reasons", WORKLOAD, ids=[f"{i}" for i in range(len(WORKLOAD))])
def test_real_multiline_statements_yield_their_filters(sql, expected, reasons):
    [query] = extract_queries(sql, LINEORDER, "lineorder", "trino")
    assert query.filter == expected
    assert [d.reason for d in query.dropped] == reasons


def test_a_multiline_history_logs_each_statement_whole(tmp_path):
    table = Table.create(str(tmp_path / "lineorder"), LINEORDER, primary_key=["lo_orderkey", "lo_linenumber"])
    history = tmp_path / "ssb.sql"
    history.write_text("-- exported from the warehouse\n\n" + ";\n\n".join(sql for sql, _, _ in WORKLOAD) + ";\n")
    result = import_sql(table.path, history, dialect="trino")
    assert (result.statements, result.imported, result.skipped, result.too_large) == (len(WORKLOAD),) * 2 + (0, 0)
    log = _logged(table)
    assert sorted(r["sql"] for r in log) == sorted(sql.split("\n", 1)[1] if sql.startswith(("--", "/*")) else sql
                                                     for sql, _, _ in WORKLOAD)
    assert sorted(map(repr, (querylog.filter_from_json(r["filter"]) for r in log))) == \
        sorted(repr(f) for _, f, _ in WORKLOAD)
    reasons = Counter(r for _, _, rs in WORKLOAD for r in rs)
    assert result.dropped == reasons
    assert len(result.dropped_examples) == min(5, sum(reasons.values()))
    # each example names its line in the file: the typo'd column is on the line that has it
    lines = history.read_text().splitlines()
    typo = next(e for e in result.dropped_examples if UNKNOWN_COLUMN in e)
    number = int(typo.split(":")[0].removeprefix("line ").replace(",", ""))
    assert "lo_shipmod = 'AIR'" in lines[number - 1]


# ---------------------------------------------------------------------------
# Splitting: the same statements back whatever joins them
# ---------------------------------------------------------------------------

_SEPARATORS = st.lists(st.sampled_from([" ", "\n", "\t", "\r\n", "\n\n", "-- a comment; with 'quotes'\n",
                                        "--\n", "/* a ; block\n comment ' */", "/**/", ";"]), max_size=4).map("".join)
_POOL = [sql for dialect, sql, _ in CORPUS if dialect == "trino"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(_POOL))), _SEPARATORS, st.booleans()), min_size=1, max_size=6),
       _SEPARATORS, st.integers(min_value=4, max_value=300))
def test_statements_joined_by_whitespace_and_comments_split_back(chosen, tail, window):
    statements = [_multiline(_POOL[i]) if multiline else _POOL[i] for i, _, multiline in chosen]
    text, offsets = "", []
    for sql, (_, sep, _) in zip(statements, chosen):
        text += sep
        offsets.append(len(text))
        text += sql + sep + ";"
    text += tail
    got = list(read_statements(text, "trino", window_chars=window))
    assert [s.problem for s in got] == [None] * len(statements)
    assert [s.sql for s in got] == statements
    assert [s.line for s in got] == [text[:offset].count("\n") + 1 for offset in offsets]
    for statement, sql in zip(got, statements):
        # parsed from the split tokens, the statement gives what its text alone gives, on the file's lines
        split = [(q.filter, q.predicates, q.dropped) for q in extract_queries(statement, SCHEMA, "events", "trino")]
        alone = [(q.filter, q.predicates, [replace(d, line=d.line + statement.line - 1) for d in q.dropped])
                 for q in extract_queries(sql, SCHEMA, "events", "trino")]
        assert split == alone


# pieces whose quoting, escapes and comments differ by dialect, each hiding a ';' somewhere
_PIECES = {"trino": ["'a;b'", "'it''s;'", "/* x; y */", "-- c;\n", '"q;"', "12", "x", ", ", ";", "\n", " ", "'"],
           "mysql": ["'a\\';b'", "# c;\n", "/* ; */", "`i;d`", "3", ", ", ";", " ", "\n"],
           "postgres": ["$$ ; $$", "'a'';b'", "-- ;\n", "4", "y", ", ", ";", " "],
           "bigquery": ["'''a;\n'''", "r'a;b'", "# ;\n", "`p;q`", "5", ", ", ";", "\n"]}


def _reference_split(text, dialect, limit):
    """sqlglot's tokens of the whole text at once, cut at its semicolons: (statement, refused)."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError
    from sqlglot.tokens import TokenType

    tokenizing = Dialect.get_or_raise(dialect)
    tokenizer = tokenizing.tokenizer_class(dialect=tokenizing)  # as sqlimport makes one, on any sqlglot
    try:
        tokens, broken = [*tokenizer.tokenize(text), None], False
    except TokenError:  # its statements up to the last ';' before where it stopped, then a report
        tokens, broken = list(tokenizer.tokens), True
        tokens = tokens[:max((i + 1 for i, t in enumerate(tokens) if t.token_type == TokenType.SEMICOLON),
                             default=0)]
    out, current = [], []
    for token in tokens:
        if token is None or token.token_type == TokenType.SEMICOLON:
            if current:
                sql = text[current[0].start:current[-1].end + 1]
                out.append(("", True) if len(sql) > limit else (sql, False))
            current = []
        else:
            current.append(token)
    return out + [("", False)] * broken


@settings(max_examples=200, deadline=None)
@example(("trino", "SELECT 1;\nSELECT 12, 12, 12, 12, 12, 12, 'oops;\nSELECT 2;\n"), 4, 8)  # refused, yet unreadable
@given(st.sampled_from(sorted(_PIECES)).flatmap(
           lambda d: st.tuples(st.just(d), st.lists(st.sampled_from(_PIECES[d]), max_size=60).map("".join))),
       st.integers(min_value=1, max_value=64), st.integers(min_value=1, max_value=80) | st.just(1_000_000))
def test_splitting_a_window_at_a_time_is_splitting_the_whole_text(dialect_text, window, limit):
    """Whatever the window (cutting strings, comments and numbers anywhere) and the limit, the
    statements are those of sqlglot's tokens of the whole text, exactly those longer than the
    limit are refused, and where sqlglot cannot tokenize, the rest is one report at the end."""
    dialect, text = dialect_text
    expected = _reference_split(text, dialect, limit)
    got = list(read_statements(text, dialect, max_statement_chars=limit, window_chars=window))
    assert [(s.sql, s.too_large) for s in got] == expected
    broken = [s.problem for s in got if s.problem is not None and not s.too_large]
    assert broken == [] or (len(broken) == 1 and got[-1].problem == broken[0]
                            and "cannot be split into tokens" in broken[0])


def test_statement_lines_are_the_files_own():
    text = "-- head\n\nSELECT 1;\n/* two\nlines */ SELECT *\nFROM events\nWHERE a = 1;SELECT 2\n;\n\nSELECT 3"
    for window in (5, 17, 1000):
        got = list(read_statements(text, "trino", window_chars=window))
        assert [(s.sql, s.line) for s in got] == [("SELECT 1", 3), ("SELECT *\nFROM events\nWHERE a = 1", 5),
                                                  ("SELECT 2", 7), ("SELECT 3", 10)]


# ---------------------------------------------------------------------------
# Encodings, huge statements, broken files
# ---------------------------------------------------------------------------

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True, timeout=120)


def test_undecodable_history_is_one_line_through_the_cli_and_logs_nothing(tmp_path):
    table = _events(tmp_path)
    history = tmp_path / "latin1.sql"
    data = "SELECT * FROM events WHERE a = 1;\nSELECT * FROM events WHERE c = 'café';\n".encode("latin-1")
    history.write_bytes(data)
    done = _cli("queries", "import", table.path, "--sql", str(history), "--no-progress")
    assert done.returncode != 0 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    offset = data.index(b"\xe9")
    assert "not valid utf-8" in done.stderr and f"offset {offset}" in done.stderr and "(line 2)" in done.stderr
    assert _logged(table) == []  # not even the first, decodable statement
    with pytest.raises(InvalidArgumentError, match=f"byte 0xe9 at offset {offset}"):
        import_sql(table.path, history)
    # with the file's encoding stated, it imports, the value decoded right
    done = _cli("queries", "import", table.path, "--sql", str(history), "--encoding", "latin-1", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "2 queries of the table logged" in done.stdout
    assert ("c", "=", "café") in [querylog.filter_from_json(r["filter"]) for r in _logged(table)]
    done = _cli("queries", "import", table.path, "--sql", str(history), "--encoding", "klingon", "--no-progress")
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
    assert "unknown encoding 'klingon'" in done.stderr


def test_the_cli_prints_the_dropped_predicates(tmp_path, capsys):
    table = _events(tmp_path)
    history = tmp_path / "h.sql"
    history.write_text("SELECT * FROM events\nWHERE lower(c) = 'x'\n  AND a = 1;\n"
                       "SELECT * FROM events WHERE colour = 'red';\n"
                       "SELECT * FROM events WHERE a = 2 OR c LIKE '%z';\n"
                       "SELECT * FROM events WHERE id IN (SELECT id FROM other);\n")
    assert main(["queries", "import", table.path, "--sql", str(history), "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("4 statements: 4 queries of the table logged")
    assert out[1] == ("4 predicates left out of the logged filters: 1 a function or expression of a column; "
                      "1 a column the table does not have; 1 an OR with a branch that has no filter form "
                      "(the whole OR is left out); 1 a subquery")
    assert out[2:] == ["  line 2: LOWER(c) = 'x': a function or expression of a column",
                       "  line 4: colour = 'red': a column the table does not have — colour",
                       "  line 5: a = 2 OR c LIKE '%z': an OR with a branch that has no filter form (the whole OR is "
                       "left out) — because of c LIKE '%z': a LIKE pattern that is not a plain prefix, or NOT LIKE"]


def test_huge_statements_are_refused_by_line_and_counted(tmp_path):
    table = _events(tmp_path)
    history = tmp_path / "h.sql"
    numbers = ", ".join(str(i) for i in range(300_000))                # 2.3 million characters, no quotes
    strings = ", ".join(f"'k{i};'" for i in range(3_000))              # quotes (and ';') all the way
    huge = [f"SELECT * FROM events WHERE id IN ({numbers})", f"SELECT * FROM events\nWHERE c IN ({strings})"]
    history.write_text(f"SELECT * FROM events WHERE a = 1;\n{huge[0]};\n"
                       f"SELECT * FROM events WHERE a = 2;\n{huge[1]}  \n;\n"
                       f"SELECT * FROM events WHERE a = 3")
    started = time.perf_counter()
    result = import_sql(table.path, history, max_statement_chars=20_000)
    assert time.perf_counter() - started < 30  # was ~7 s a million characters, and 1 GB for 5 MB
    assert (result.statements, result.imported, result.too_large, result.skipped) == (5, 3, 2, 0)
    assert result.refused == [f"line {line}: a statement of {len(sql):,} characters, longer than the limit of "
                              f"20,000 (max_statement_chars, --max-statement-chars); not logged"
                              for line, sql in zip((2, 4), huge)]
    assert "2 refused (too long)" in result.summary()
    assert sorted(querylog.filter_from_json(r["filter"]) for r in _logged(table)) == \
        [("a", "=", 1), ("a", "=", 2), ("a", "=", 3)]
    # JSON lines: a record's statement over the limit is refused too
    jsonl = tmp_path / "h.jsonl"
    jsonl.write_text(json.dumps({"query": f"SELECT * FROM events WHERE id IN ({numbers[:50_000]})"}) + "\n")
    result = import_sql(table.path, jsonl, max_statement_chars=20_000)
    assert (result.too_large, result.refused[0][:8]) == (1, "line 1: ")
    with pytest.raises(InvalidArgumentError, match="max_statement_chars must be a positive"):
        import_sql(table.path, jsonl, max_statement_chars=0)


def test_a_filter_too_large_to_log_is_reported(tmp_path):
    table = _events(tmp_path)
    history = tmp_path / "h.sql"
    history.write_text("SELECT * FROM events WHERE id IN (" + ", ".join(str(i) for i in range(20_000)) + ") AND a = 1")
    result = import_sql(table.path, history)
    assert result.imported == 1 and result.dropped == {TOO_LARGE: 1}
    [row] = _logged(table)
    assert row["filter"] is None and {p["column"] for p in row["predicates"]} == {"id", "a"}


def test_unterminated_quote_and_missing_semicolon_are_said(tmp_path):
    table = _events(tmp_path)
    history = tmp_path / "h.sql"
    history.write_text("SELECT * FROM events WHERE a = 1\nSELECT * FROM events WHERE a = 2;\n"
                       "SELECT * FROM events WHERE a = 3;\nSELECT * FROM events WHERE c = 'oops\n;\n")
    result = import_sql(table.path, history)
    # the first two lines have no ';' between them: split where the second starts a statement
    assert (result.statements, result.imported, result.skipped, result.unterminated) == (4, 3, 1, 2)
    assert result.errors[0].startswith("line 4: cannot be split into tokens") and "not read" in result.errors[0]
    assert sorted(querylog.filter_from_json(r["filter"])[2] for r in _logged(table)) == [1, 2, 3]
    # where no line starts a statement, the missing ';' is said
    history.write_text("SELECT * FROM events WHERE a = 1 SELECT * FROM events WHERE a = 2;\n")
    result = import_sql(table.path, history)
    assert result.skipped == 1 and "is the ';' before it missing?" in result.errors[0]


def test_statements_that_read_nothing_are_counted_quietly(tmp_path, capsys, caplog):
    """GRANT, VACUUM (which sqlglot parses as a Command, with a warning of its own), REFRESH:
    statements, counted as not reading the table; no stderr line each."""
    table = _events(tmp_path)
    history = tmp_path / "h.sql"
    history.write_text("GRANT SELECT ON events TO bob;\nVACUUM events;\nREFRESH TABLE events;\n"
                       "OPTIMIZE events ZORDER BY (a);\nSELECT * FROM events WHERE a = 1;\nSELEC * FORM events;\n")
    assert main(["queries", "import", table.path, "--sql", str(history), "--dialect", "spark", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == ("6 statements: 1 queries of the table logged, 4 not reading it, "
                                            "1 skipped (not parsable)")
    assert captured.err == "" and [r for r in caplog.records if r.name.startswith("sqlglot")] == []


def test_a_history_without_semicolons_splits_where_lines_start_statements(tmp_path):
    """Exports of a query log are often one statement per line, with no ';': each line (or block
    starting with a statement's first word) is its own statement, and the summary says so."""
    table = _events(tmp_path)
    history = tmp_path / "history.sql"
    history.write_text("SELECT * FROM events WHERE a = 1\n"
                       "SELECT count(*) FROM events WHERE b > 0.5 AND a IN (1, 2)\n"
                       "select *\n  from events\n  where a >= 3\n"
                       "WITH x AS (SELECT * FROM events WHERE a < 4) SELECT * FROM x\n")
    result = import_sql(table.path, history)
    assert (result.statements, result.imported, result.skipped, result.unterminated) == (4, 4, 0, 4)
    assert "4 had no ';' between them" in result.summary()
    filters = sorted(json.dumps(r["filter"]) for r in _logged(table))
    assert len(filters) == 4 and all(f != "null" for f in filters)
    # text that is not a run of statements is still one unparsable statement, not split
    history.write_text("FROBNICATE events\nSELECT * FROM events WHERE a = 1\n")
    assert import_sql(table.path, history).skipped == 1
