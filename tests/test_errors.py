"""Bad input gets a clear exception naming the run, row and column; never a wrong answer."""
from __future__ import annotations

import pyarrow as pa
import pytest

import mergetree
from mergetree import (
    InvalidArgumentError,
    InvalidRowError,
    SchemaMismatchError,
    UnsortedRunError,
    UnsupportedTypeError,
)


def table(**cols):
    return pa.table(cols)


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
@pytest.mark.parametrize("batch_rows", [1, 2, 100])
def test_out_of_order_run(algorithm, batch_rows):
    good = table(k=[1, 2, 3, 4])
    bad = pa.Table.from_batches(table(k=[1, 5, 3, 6]).to_batches(max_chunksize=batch_rows))
    with pytest.raises(UnsortedRunError) as info:
        mergetree.merge([good, bad], "k", algorithm=algorithm).read_all()
    err = info.value
    assert (err.run, err.row, err.column) == (1, 2, "k")
    assert "run 1" in str(err) and "row 2" in str(err)


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
def test_repeated_key_in_one_run(algorithm):
    with pytest.raises(UnsortedRunError, match="run 0 .* row 2"):
        mergetree.merge([table(k=["a", "b", "b"])], "k", algorithm=algorithm).read_all()


def test_repeated_key_across_batches_of_one_run():
    run = [table(k=[1, 2]).to_batches()[0], table(k=[2, 3]).to_batches()[0]]
    with pytest.raises(UnsortedRunError) as info:
        mergetree.merge([run], "k").read_all()
    assert info.value.row == 2


def test_unsorted_composite_key():
    run = table(a=[1, 1, 1], b=["x", "z", "y"])
    with pytest.raises(UnsortedRunError, match="row 2"):
        mergetree.merge([run], ["a", "b"]).read_all()


def test_check_order_false_skips_the_check():
    # the caller vouches for order; the merge must still terminate and count every row
    reader = mergetree.merge([table(k=[3, 1, 2])], "k", check_order=False, engine="none")
    assert reader.read_all().num_rows == 3


def test_missing_key_column():
    with pytest.raises(SchemaMismatchError, match="run 1 has no column 'k'"):
        mergetree.merge([table(k=[1], v=[1]), table(v=[1])], "k")


def test_key_column_of_another_type():
    with pytest.raises(SchemaMismatchError, match="run 1 column 'k' is string, but run 0 has int64"):
        mergetree.merge([table(k=[1]), table(k=["1"])], "k")


def test_schema_mismatch_in_a_later_batch():
    def run():
        yield table(k=[1]).to_batches()[0]
        yield table(k=[2.0]).to_batches()[0]
    with pytest.raises(SchemaMismatchError, match="run 0"):
        mergetree.merge([run()], "k").read_all()


def test_key_not_in_runs():
    with pytest.raises(SchemaMismatchError, match="no key column 'id'"):
        mergetree.merge([table(k=[1])], "id")


@pytest.mark.parametrize("dtype", [pa.list_(pa.int64()), pa.struct([("a", pa.int64())]), pa.null()])
def test_unsupported_key_type(dtype):
    run = pa.table({"k": pa.array([None], type=dtype)})
    with pytest.raises(UnsupportedTypeError, match="key column 'k'"):
        mergetree.merge([run], "k")


def test_sequence_must_be_int64():
    with pytest.raises(UnsupportedTypeError, match="sequence column 's' must be int64, not int32"):
        mergetree.merge([pa.table({"k": [1], "s": pa.array([1], pa.int32())})], "k", sequence="s")


def test_null_sequence_value():
    run = pa.table({"k": [1, 2, 3], "s": pa.array([1, None, 3], pa.int64())})
    with pytest.raises(InvalidRowError, match="run 0 row 1: sequence column 's' is null"):
        mergetree.merge([run], "k", sequence="s").read_all()


def test_kind_must_be_int8_with_known_values():
    with pytest.raises(UnsupportedTypeError, match="kind column"):
        mergetree.merge([pa.table({"k": [1], "op": [1]})], "k", kind="op")
    run = pa.table({"k": [1, 2], "op": pa.array([0, 7], pa.int8())})
    with pytest.raises(InvalidRowError, match="run 0 row 1: row-kind column 'op'.*found 7"):
        mergetree.merge([run], "k", kind="op").read_all()


@pytest.mark.parametrize("kwargs, message", [
    ({"engine": "merge-all"}, "unknown engine 'merge-all'"),
    ({"engine": "aggregate", "aggregations": {"v": "median"}}, "unknown aggregate 'median'"),
    ({"engine": "aggregate", "aggregations": {"nope": "sum"}}, "column 'nope'"),
    ({"engine": "aggregate", "aggregations": {"k": "sum"}}, "key, sequence or kind"),
    ({"aggregations": {"v": "sum"}}, "only used by engine='aggregate'"),
    ({"algorithm": "quicksort"}, "unknown algorithm"),
    ({"batch_size": 0}, "batch_size"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        mergetree.merge([table(k=[1], v=[1])], "k", **kwargs)


def test_aggregate_type_mismatch():
    with pytest.raises(UnsupportedTypeError, match="'sum' cannot apply to column 'v'"):
        mergetree.merge([table(k=[1], v=["x"])], "k", engine="aggregate", aggregations={"v": "sum"})


def test_a_single_table_is_not_a_list_of_runs():
    with pytest.raises(InvalidArgumentError, match="list of runs"):
        mergetree.merge(table(k=[1]), "k")


def test_not_a_run():
    with pytest.raises(TypeError, match="a run must be"):
        mergetree.merge([42], "k")


def test_reader_is_consumed_once():
    reader = mergetree.merge([table(k=[1])], "k")
    reader.read_all()
    with pytest.raises(RuntimeError, match="only once"):
        reader.read_all()
