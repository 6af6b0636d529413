"""Property tests: `merge` equals the pure-Python model for every engine and both algorithms."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ReferenceError_, merge_model
from strategies import KEY_TYPES, build_run, canonical, make_schema, run_shapes, sorted_runs

import mergetree

ALGORITHMS = ["loser-tree", "heap"]
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_merge(runs_rows, shapes, schema, key, **kwargs):
    runs = [build_run(rows, schema, shape) for rows, shape in zip(runs_rows, shapes)]
    reader = mergetree.merge(runs, key, **kwargs)
    return reader, reader.read_all()


def check_against_model(data, type_names, *, engine, algorithm, with_kind=False, keep_deletes=False,
                        batch_size=None, kinds=st.integers(0, 3), with_sequence=True, max_runs=64):
    runs_rows = data.draw(sorted_runs(type_names, with_kind=with_kind, kinds=kinds,
                                      with_sequence=with_sequence, max_runs=max_runs))
    shapes = data.draw(run_shapes(len(runs_rows)))
    schema = make_schema(type_names, kind=with_kind, sequence=with_sequence)
    key = [f"k{i}" for i in range(len(type_names))]
    kwargs = dict(engine=engine, algorithm=algorithm, keep_deletes=keep_deletes,
                  sequence="seq" if with_sequence else None, kind="kind" if with_kind else None)
    if batch_size is None:
        batch_size = data.draw(st.sampled_from([1, 2, 5, 65536]))
    expected = merge_model(runs_rows, key, sequence=kwargs["sequence"], kind=kwargs["kind"],
                           engine=engine, keep_deletes=keep_deletes, columns=schema.names)
    reader, table = run_merge(runs_rows, shapes, schema, key, batch_size=batch_size, **kwargs)
    if table.num_columns or any(s["container"] in ("table", "reader", "batch") for s in shapes):
        assert table.schema == schema  # only runs given as bare empty iterables carry no schema
    assert canonical(table.to_pylist()) == canonical(expected)
    stats = reader.stats
    assert stats.rows_in == sum(len(r) for r in runs_rows)
    assert stats.rows_out == len(expected)
    assert all(b.num_rows <= batch_size for b in table.to_batches())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("engine", ["deduplicate", "none", "partial-update", "aggregate"])
@SETTINGS
@given(data=st.data())
def test_int_keys_every_engine(data, engine, algorithm):
    check_against_model(data, ["int64"], engine=engine, algorithm=algorithm, with_kind=data.draw(st.booleans()),
                        keep_deletes=data.draw(st.booleans()))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@SETTINGS
@given(data=st.data())
def test_first_row_engine(data, algorithm):
    # first-row takes no retractions: kinds are +I / +U only
    check_against_model(data, ["int32"], engine="first-row", algorithm=algorithm, with_kind=True,
                        kinds=st.sampled_from([0, 2]))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("engine", ["deduplicate", "none", "partial-update"])
@SETTINGS
@given(data=st.data())
def test_composite_keys_with_nulls(data, engine, algorithm):
    check_against_model(data, ["string", "int16"], engine=engine, algorithm=algorithm,
                        with_kind=data.draw(st.booleans()))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@SETTINGS
@given(data=st.data())
def test_no_sequence_column_later_run_wins(data, algorithm):
    check_against_model(data, ["int8"], engine="deduplicate", algorithm=algorithm, with_sequence=False)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_string128_keys(data, algorithm):
    name = data.draw(st.sampled_from(["string128", "string128_shared_prefix"]))
    check_against_model(data, [name], engine="deduplicate", algorithm=algorithm)


@pytest.mark.parametrize("type_name", sorted(KEY_TYPES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_key_type(data, type_name):
    algorithm = data.draw(st.sampled_from(ALGORITHMS))
    engine = data.draw(st.sampled_from(["deduplicate", "none"]))
    check_against_model(data, [type_name], engine=engine, algorithm=algorithm, max_runs=12)


@pytest.mark.parametrize("type_name", ["float64", "decimal128", "bool", "fixed_binary12", "timestamp_tz"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_key_type_as_second_key_column(data, type_name):
    algorithm = data.draw(st.sampled_from(ALGORITHMS))
    check_against_model(data, ["uint8", type_name], engine="none", algorithm=algorithm, max_runs=12)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=40, deadline=None)
@given(n_runs=st.integers(1, 64), n_keys=st.integers(1, 6), data=st.data())
def test_all_duplicate_keys(n_runs, n_keys, data, algorithm):
    """Every run holds the same keys: each group has one member per run."""
    runs_rows = [[{"k0": k, "seq": r, "v": r * 100 + k} for k in range(n_keys)] for r in range(n_runs)]
    shapes = data.draw(run_shapes(n_runs))
    schema = make_schema(["int64"])
    for engine in ("deduplicate", "none", "first-row"):
        _, table = run_merge(runs_rows, shapes, schema, "k0", sequence="seq", engine=engine,
                             algorithm=algorithm)
        assert table.to_pylist() == merge_model(runs_rows, ["k0"], sequence="seq", engine=engine)
        shapes = data.draw(run_shapes(n_runs))


def test_reference_model_rejects_first_row_retractions():
    with pytest.raises(ReferenceError_):
        merge_model([[{"k0": 1, "kind": 3, "v": 1}]], ["k0"], kind="kind", engine="first-row")
