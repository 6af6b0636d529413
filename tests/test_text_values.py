"""Values as people write them: ISO-8601 text for dates, times and timestamps and decimal text,
in Python filters, deletes and dict/row-dict writes; errors naming column, row and value."""
import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from mergetree import Table
from mergetree.errors import InvalidArgumentError, SchemaMismatchError
from mergetree.table.text_values import parse_text

SCHEMA = pa.schema([("id", pa.int64()), ("updated", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("t", pa.time32("ms")), ("amount", pa.decimal128(10, 2)), ("naive", pa.timestamp("ns"))])


@pytest.fixture
def table(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id")
    t.write({"id": [1, 2], "updated": ["2024-06-02", dt.date(2024, 5, 1)],
             "ts": ["2024-06-02 10:00", "2024-06-02T11:00:00Z"], "t": ["10:30", None],
             "amount": ["12.34", 5], "naive": ["2024-01-01 00:00:00.123456789", None]})
    return t


def test_text_is_written_as_the_columns_values(table):
    rows = table.read().sort_by("id").to_pylist()
    assert rows[0]["updated"] == dt.date(2024, 6, 2) and rows[1]["updated"] == dt.date(2024, 5, 1)
    assert rows[0]["ts"] == dt.datetime(2024, 6, 2, 10, tzinfo=dt.timezone.utc)
    assert rows[1]["ts"] == dt.datetime(2024, 6, 2, 11, tzinfo=dt.timezone.utc)
    assert rows[0]["t"] == dt.time(10, 30) and rows[0]["amount"] == Decimal("12.34")
    assert rows[1]["amount"] == Decimal("5.00")
    assert table.read(columns="naive", filter=("id", "=", 1)).column("naive").cast(pa.int64())[0].as_py() \
        == 1704067200123456789  # nanoseconds kept


def test_filters_and_deletes_take_text(table):
    assert table.read(filter=("updated", ">=", "2024-05-04")).column("id").to_pylist() == [1]
    assert table.read(filter=("amount", "=", "12.34")).column("id").to_pylist() == [1]
    assert table.read(filter=("ts", "<", "2024-06-02T11:30:00+01:00")).column("id").to_pylist() == [1]
    assert table.read(filter=("updated", "in", ["2024-05-01", "2030-01-01"])).column("id").to_pylist() == [2]
    table.delete(filter=("updated", "<", "2024-06-01"))
    assert table.read().column("id").to_pylist() == [1]


@pytest.mark.parametrize("data, message", [
    ({"id": [3], "updated": ["2024-13-01"]}, r"column 'updated', row 0: '2024-13-01'"),
    ([{"id": 4}, {"id": "7"}], r"column 'id', row 1: '7'"),
    ({"id": [3], "amount": ["12.345"]}, r"column 'amount', row 0: '12.345'"),
    ({"id": [3, 4], "naive": [None, "2024-01-01T00:00+02:00"]}, r"column 'naive', row 1: .*offset"),
])
def test_a_value_that_does_not_fit_names_column_row_and_value_and_writes_nothing(table, data, message):
    before = table.latest_snapshot().id
    with pytest.raises(SchemaMismatchError, match=message):
        table.write(data)
    assert table.latest_snapshot().id == before


def test_an_arrow_cast_that_loses_a_value_names_its_row(tmp_path):
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("small", pa.int32())]), primary_key="id")
    with pytest.raises(SchemaMismatchError, match=r"row 2: 1099511627776 does not fit"):
        t.write(pa.table({"id": [1, 2, 3], "small": pa.array([1, 2, 2**40])}))


def test_a_filter_text_that_is_not_a_value_is_refused_naming_the_column(table):
    with pytest.raises(InvalidArgumentError, match="filter on 'updated'.*not an ISO-8601 date"):
        table.read(filter=("updated", "=", "yesterday"))
    with pytest.raises(InvalidArgumentError, match="'id'"):
        table.read(filter=("id", "=", "7"))  # ints take no text: a string there is a mistake


def test_parse_text_on_a_zoned_column_reads_wall_time_in_its_zone():
    lisbon = pa.timestamp("us", tz="Europe/Lisbon")
    assert parse_text("2024-07-01 10:00", lisbon) == parse_text("2024-07-01T09:00:00Z", lisbon)  # summer: +01:00
    assert parse_text("2024-05-04", pa.date32()) == dt.date(2024, 5, 4)
    with pytest.raises(ValueError):
        parse_text("12.345", pa.decimal128(10, 2))


def test_the_cli_reads_filter_text_as_python_filters_do():
    from mergetree.cli.commands import parse_filter
    from mergetree.table.filters import normalize
    for column, text in [("updated", "2024-05-04"), ("t", "10:30"), ("amount", "12.3"),
                         ("ts", "2024-06-02T11:30:00+01:00"), ("naive", "2024-01-01 00:00:00.5")]:
        assert parse_filter(f"{column} >= {text}", SCHEMA) == normalize((column, ">=", text), SCHEMA)
    with pytest.raises(InvalidArgumentError, match="not an ISO-8601 time"):
        parse_filter("t = noon", SCHEMA)
