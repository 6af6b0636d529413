"""Replay: re-planning logged queries on the table now agrees with what they scanned when
nothing changed, shows the gain after a rewrite, and a simulated layout predicts that gain."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from mergetree import InvalidArgumentError, Table
from mergetree.organize import replay
from mergetree.table.workload import querylog

ROWS, FILES = 60_000, 30


@pytest.fixture()
def logged_table(tmp_path):
    rng = np.random.default_rng(3)
    data = pa.table({"id": rng.permutation(ROWS), "a": rng.integers(0, 10**9, ROWS), "b": rng.normal(0, 1, ROWS)})
    t = Table.create(str(tmp_path / "t"), data.schema,
                     options={"target-file-size": str(int(data.nbytes / FILES * 1.05)), "write-only": "true"})
    per = ROWS // FILES
    for i in range(FILES):
        t.write(data.slice(i * per, per))
    for _ in range(80):
        low = int(rng.integers(0, 10**9 - 2 * 10**7))
        t.read(filter=[("a", ">=", low), ("a", "<", low + 2 * 10**7)], columns=["id"])
    t.read(order_by=[("b", "desc")], limit=5)
    querylog.flush()
    return t


def test_replay_now_matches_the_log_until_the_layout_changes(logged_table):
    t = logged_table
    now = replay(t.path)
    assert len(now.queries) == 81 and now.skipped == 0
    # nothing changed since the queries ran: the planner picks the same files
    assert [q.files for q in now.queries if not q.predicates.startswith("order")] == \
        [float(q.logged_files) for q in now.queries if not q.predicates.startswith("order")]
    predicted = replay(t.path, layout="linear:a")
    t.optimize(order=["a"], strategy="linear")
    after = replay(t.path)
    assert after.files < now.files / 5
    # the simulation predicted the rewrite within a factor of two
    assert after.files / 2 <= predicted.files <= after.files * 2


def test_replay_arguments_are_checked(logged_table):
    with pytest.raises(InvalidArgumentError, match="STRATEGY:COL"):
        replay(logged_table.path, layout="spiral:a")
    with pytest.raises(InvalidArgumentError, match="not in the table"):
        replay(logged_table.path, layout="hilbert:a,nope")


def test_the_commands_run(logged_table):
    def run(*args):
        out = subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout
    assert "replayed queries" in run("replay", logged_table.path, "--no-progress", "--per-query", "3")
    assert "simulated hilbert:a,b" in run("replay", logged_table.path, "--layout", "hilbert:a,b", "--no-progress")
    shown = run("queries", "show", logged_table.path)
    assert "81 queries logged" in shown and "range" in shown
    advice = run("advise", logged_table.path, "--since", "1h")
    assert "+linear(a)" in advice and "--apply" in advice
    run("advise", logged_table.path, "--apply")
    assert Table.open(logged_table.path).options.clustering.columns == ("a",)


def test_imported_queries_are_never_compared_with_a_zero_as_run(logged_table, tmp_path):
    """Queries imported from a SQL history never ran here and carry no bytes: they are replayed,
    the comparison with 'as run' covers only the queries that ran (it said 530.9% when the
    imported ones counted as zero), and a simulated layout is compared with the current files
    simulated on the same sample."""
    from mergetree.organize import import_sql

    t = logged_table
    history = tmp_path / "history.sql"
    history.write_text("SELECT id\nFROM t\nWHERE a >= 100 AND a < 20000100;\n" * 40)
    assert import_sql(t.path, history).imported == 40
    now = replay(t.path)
    assert len(now.queries) == 121 and now.unmeasured == 40 and len(now.measured) == 81
    # nothing changed since the 81 ran: the planner reads what they read (the Top-N read stopped
    # early when it ran, a plan does not)
    ratio = now.versus_logged
    assert ratio is not None and 1.0 <= ratio < 1.05
    assert f"{ratio:.1%} of what 81 of the queries scanned when they ran" in now.summary()
    assert "40 imported queries carry no measured bytes" in now.summary()
    simulated = replay(t.path, layout="linear:a")
    assert simulated.baseline_bytes and simulated.versus_baseline < 0.5
    assert "read on the current files simulated on the same sample" in simulated.summary()
    out = subprocess.run([sys.executable, "-m", "mergetree", "replay", t.path, "--no-progress"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and f"{ratio:.1%} of what 81" in out.stdout, out.stdout


def test_a_history_of_imported_queries_only_compares_layouts_with_each_other(tmp_path):
    from mergetree.organize import import_sql

    rng = np.random.default_rng(4)
    data = pa.table({"id": rng.permutation(ROWS), "a": rng.integers(0, 10**9, ROWS)})
    t = Table.create(str(tmp_path / "t"), data.schema, options={
        "target-file-size": str(int(data.nbytes / FILES * 1.05)), "write-only": "true", "query-log.enabled": "false"})
    per = ROWS // FILES
    for i in range(FILES):
        t.write(data.slice(i * per, per))
    history = tmp_path / "history.sql"
    history.write_text("".join(f"SELECT * FROM t WHERE a BETWEEN {low} AND {low + 10**7};\n"
                               for low in rng.integers(0, 10**9 - 10**7, 30)))
    import_sql(t.path, history)
    now = replay(t.path)
    assert now.versus_logged is None and now.logged_bytes == 0 and now.unmeasured == 30
    assert "nothing to compare with as run" in now.summary() and "%" not in now.summary()
    simulated = replay(t.path, layout="linear:a")
    assert simulated.versus_baseline is not None and simulated.versus_baseline < 0.2
    advice = t.advise()
    assert advice.reduction is not None and advice.reduction > 0.5   # simulated layouts against each other
