"""SQL history import: a corpus of realistic Trino and Spark SQL with the patterns each
statement must yield; malformed statements are skipped and counted; imported filters replay."""
from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pyarrow as pa
import pytest

from mergetree import InvalidArgumentError, Table
from mergetree.organize import extract_queries, import_sql
from mergetree.table import querylog

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
