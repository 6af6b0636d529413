"""The Spark data source on every type of the type policy: reads, pushed filters and writes,
against the table's own reads (themselves checked against pyarrow by the type matrix).
Generated from the policy: a type added there is read through Spark here, or refused up front
with the column named when Spark has no type for it."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from typed_data import POLICY_TYPES, comparable, random_array

from mergetree import Table
from mergetree.errors import UnsupportedTypeError
from mergetree.table import type_policy

try:
    import pyspark  # noqa: F401
except ImportError:  # the installed-wheel check runs without pyspark (in the source tree the other
    # Spark tests' fixture fails loudly on a missing pyspark)
    pytest.skip("pyspark is not installed: the Spark type tests need it", allow_module_level=True)


def _spark_type(dtype: pa.DataType) -> pa.DataType | None:
    from mergetree.spark import spark_arrow_type
    try:
        return spark_arrow_type(type_policy.stored_type(dtype))
    except UnsupportedTypeError:
        return None


SPARK_TYPES = [t for t in POLICY_TYPES if _spark_type(t) is not None]
NO_SPARK_TYPES = [t for t in POLICY_TYPES if _spark_type(t) is None]
N = 300


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory):
    """A primary-key table with one column per type Spark can hold, in 3 commits with upserts."""
    path = str(tmp_path_factory.mktemp("spark-types") / "t")
    rng = np.random.default_rng(7)
    columns = {f"c{i}": t for i, t in enumerate(SPARK_TYPES) if type_policy.storable(t)}
    schema = pa.schema([("id", pa.int64())] + [(name, t) for name, t in columns.items()])
    t = Table.create(path, schema, primary_key="id", buckets=3)
    for commit in range(3):
        ids = np.arange(commit * N // 2, commit * N // 2 + N)
        t.write(pa.table({"id": pa.array(ids, pa.int64()),
                          **{name: random_array(dt, N, rng) for name, dt in columns.items()}}, schema=schema))
    return t


def _as_spark(table: pa.Table) -> list[dict]:
    """The table's rows as Spark yields them (types per `spark_arrow_type`), by id."""
    from mergetree.spark import spark_schema
    from mergetree.spark.types import to_spark_batch
    batches = [to_spark_batch(b, spark_schema(table.schema)) for b in table.to_batches()]
    out = pa.Table.from_batches(batches, schema=spark_schema(table.schema)).sort_by("id")
    return comparable(out.to_pylist())


def _spark_rows(df) -> list[dict]:
    return comparable(df.toArrow().sort_by("id").to_pylist())


def test_every_type_reads_through_spark(spark, typed_table):
    import mergetree.spark
    mergetree.spark.register(spark)
    df = spark.read.format("mergetree").load(typed_table.path)
    assert _spark_rows(df) == _as_spark(typed_table.read())


def test_pushed_filters_on_every_type_stay_exact(spark, typed_table):
    from pyspark.sql import functions as F

    import mergetree.spark
    mergetree.spark.register(spark)
    local = typed_table.read()
    spark_local = _as_spark(local)
    for field in typed_table.schema:
        name, dtype = field.name, field.type
        if name == "id":
            continue
        stored = dtype
        if not type_policy.supports(stored, "filter_eq"):
            continue
        spark_values = [r[name] for r in spark_local if r[name] is not None and r[name] == r[name]]
        if not spark_values:
            continue
        value = spark_values[0]
        df = spark.read.format("mergetree").load(typed_table.path).where(F.col(name) == F.lit(value))
        want = [r for r in spark_local if r[name] is not None and r[name] == value]
        assert _spark_rows(df) == want, (name, dtype)
        nulls = spark.read.format("mergetree").load(typed_table.path).where(F.col(name).isNull())
        assert _spark_rows(nulls) == [r for r in spark_local if r[name] is None], (name, dtype)


def test_spark_writes_every_type_back(spark, typed_table, tmp_path):
    """A Spark DataFrame of every type written through the data source reads back the same (into a
    new table)."""
    import mergetree.spark
    mergetree.spark.register(spark)
    df = spark.read.format("mergetree").load(typed_table.path)
    out = str(tmp_path / "copy")
    mergetree.spark.write(df, out, primaryKey="id", buckets=2)
    assert _as_spark(Table.open(out).read()) == _as_spark(typed_table.read())


@pytest.mark.parametrize("dtype", NO_SPARK_TYPES, ids=[str(t) for t in NO_SPARK_TYPES])
def test_types_spark_cannot_hold_are_refused_naming_the_column(spark, tmp_path, dtype):
    import mergetree.spark
    mergetree.spark.register(spark)
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("odd", dtype)]))
    t.write(pa.table({"id": [1], "odd": random_array(dtype, 1, np.random.default_rng(0))}))
    with pytest.raises(Exception, match="'odd'"):
        spark.read.format("mergetree").load(t.path).collect()
