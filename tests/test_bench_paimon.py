"""`mergetree bench --paimon` at a tiny size (2,000 keys, 4 commits, bucket 1 and 4, 20 lookups; the
deletion-vector case on bucket 4) through `bench.main` and the real code path: pypaimon writes the
tables in its own interpreter, every reader's answers are checked and right, mergetree's compactions
are checked, the report, targets and JSON come out.  Nothing here asserts a timing target: at this
size the numbers are only sensible, not meaningful."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from paimon_fixtures import PAIMON_PYTHON
from rich.console import Console

from benchmarks import bench
from benchmarks import bench_paimon as bp

KEYS = 2_000
LOOKUPS = 20
TABLES = ["c4-b1", "c4-b4"]
DV_TABLES = ["dv-b4"]

needs_pypaimon = pytest.mark.skipif(bp.paimon_missing() is not None,
                                    reason=f"no pypaimon interpreter at {bp.PAIMON_PYTHON} (make paimon-env)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One `mergetree bench --paimon-only --paimon-keys 2000` through `bench.main`, only 4 commits and
    20 lookups: its exit code, its JSON and the report."""
    if bp.paimon_missing() is not None:
        pytest.skip(bp.paimon_missing())
    reports = []

    def keep(*args, **kwargs):
        reports.append(run_paimon_bench(*args, directory=str(tmp_path_factory.mktemp("paimon-bench")), **kwargs))
        return reports[-1]

    run_paimon_bench = bp.run_paimon_bench
    numbers = tmp_path_factory.mktemp("paimon") / "paimon.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bp, "COMMIT_COUNTS", (4,))
        patch.setattr(bp, "LOOKUPS", LOOKUPS)
        patch.setattr(bp, "run_paimon_bench", keep)
        code = bench.main(["--paimon-only", "--paimon-keys", str(KEYS), "--no-progress", "--json", str(numbers)])
    return code, json.loads(numbers.read_text()), reports[0]


@pytest.fixture(scope="module")
def report(run):
    return run[2]


def test_the_bench_uses_the_tests_pypaimon_interpreter():
    assert bp.PAIMON_PYTHON == PAIMON_PYTHON


@needs_pypaimon
def test_every_reader_reads_every_table_right(report):
    assert report.ok, [(r.table, r.reader, r.operation, r.phase, r.check) for r in report.results if not r.ok]
    assert report.skipped is None and report.keys == KEYS and report.tables == TABLES
    rust = bp.pypaimon_rust_available()
    for name, buckets in zip(TABLES, (1, 4)):
        write = report.find(name, bp.PYPAIMON, bp.WRITE)
        assert write.ok and write.rows_in == write.rows_out == 4 * KEYS // 2 and write.seconds > 0
        assert write.max_runs == 4 and write.files == 4 * buckets  # a sorted run per commit in every bucket
        for phase, rows_in, runs in ((bp.UNMERGED, 2 * KEYS, 4), (bp.COMPACTED, KEYS, 1)):
            for reader in bp.READERS:
                read = report.find(name, reader, bp.READ, phase)
                lookup = report.find(name, reader, bp.LOOKUP, phase)
                if reader == bp.PYPAIMON_RUST and not rust:
                    assert read.unavailable and lookup.unavailable
                    continue
                assert read.ok and lookup.ok, (name, reader, phase, read.check, lookup.check)
                assert read.rows_out == KEYS and read.rows_in == rows_in and read.max_runs == runs
                assert read.seconds > 0 and read.rows_per_second > 0 and 1 <= read.timed_runs <= bp.REPEAT
                assert read.cpu_seconds > 0 and read.rows_per_cpu_second == read.rows_in / read.cpu_seconds
                assert lookup.rows_in == lookup.rows_out == lookup.timed_runs == LOOKUPS
                latency = lookup.latency_ms
                assert latency["count"] == LOOKUPS
                assert 0 < latency["min"] <= latency["median"] <= latency["p95"] <= latency["max"]


@needs_pypaimon
def test_the_compaction_and_its_baseline_check_out(report):
    for name, buckets in zip(TABLES, (1, 4)):
        compact = report.find(name, bp.MERGETREE, bp.COMPACT)
        assert compact.ok and compact.seconds > 0 and compact.timed_runs == 1
        assert compact.rows_in == 2 * KEYS and compact.rows_out == KEYS and compact.max_runs == 1
        assert buckets <= compact.files <= 2 * buckets
        assert any("snapshot 4 -> 5" in note for note in compact.notes), compact.notes
        rewrite = report.find(name, bp.PYARROW, bp.REWRITE)
        assert rewrite.ok and rewrite.rows_in == rewrite.rows_out == 2 * KEYS and rewrite.seconds > 0


@needs_pypaimon
def test_the_report_shows_every_target(report):
    targets = bp.paimon_targets(report)
    assert [(t.table, t.name) for t in targets] == [(name, target) for name in TABLES for target in bp.TARGETS] + \
        [(name, target) for name in DV_TABLES for target in bp.DV_TARGETS]
    rust = bp.pypaimon_rust_available()
    for t in targets:
        if "rust" in t.name and not rust:
            assert t.value is None and "n/a" in t.text
        else:
            assert t.value is not None and t.value > 0 and t.met is not None, t.text
            assert ("PASS" in t.text) == t.met and ("MISS" in t.text) != t.met
    console = Console(record=True, width=400)
    console.print(bp.format_paimon_results(report))
    text = console.export_text()
    for word in ("c4-b1", "c4-b4", "unmerged", "compacted", "pypaimon", "mergetree", "(reference)", "targets:",
                 "compaction rows/s / pyarrow read + rewrite rows/s", "dv-b4", bp.DV, bp.MOR, bp.COMPACT_DV,
                 "full read (deletion vectors), mergetree / pypaimon", "deletion vectors over merge-on-read",
                 "with deletion vectors / without", "rows/cpu-s",
                 *(["full read (unmerged) rows per CPU-second, mergetree / pypaimon-rust ("] if rust else [])):
        assert word in text


@needs_pypaimon
def test_main_paimon_only_returns_0_and_writes_the_paimon_json(run):
    code, document, report = run
    assert code == 0
    paimon = document["paimon"]
    assert paimon["ok"] is True and paimon["keys"] == KEYS and paimon["commit_counts"] == [4]
    assert paimon["bucket_counts"] == [1, 4] and paimon["lookups"] == LOOKUPS
    dv_results = 2 * 5 + 2 * len(bp.READERS) * 2  # per phase: 2 writes, 2 compactions, the changes, the readers
    write_results = 4 * len(bp.WRITE_BUCKETS)  # pypaimon, pypaimon-rust, mergetree write-only and compacting
    assert len(paimon["results"]) == len(report.results) == \
        2 * (3 + 2 * len(bp.READERS) * 2) + dv_results + write_results
    assert all(r["check"] == "ok" or r["check"].startswith("unavailable") for r in paimon["results"])
    reads = [r for r in paimon["results"] if r["operation"] == bp.READ and r["check"] == "ok"]
    assert reads and all(r["rows_per_cpu_second"] > 0 for r in reads)
    assert len(paimon["targets"]) == len(TABLES) * len(bp.TARGETS) + len(DV_TABLES) * len(bp.DV_TARGETS)
    assert set(paimon["target_summary"]) == set(bp.ALL_TARGETS)
    assert paimon["dv_buckets"] == [4] and len(paimon["dv_findings"]) == 2
    assert "results" not in document or document["results"] == []  # no merge workload ran


@needs_pypaimon
def test_the_write_case_writes_the_same_rows_with_every_writer_and_checks_each_table(report):
    writes = [r for r in report.results if r.case == bp.WRITE_CASE]
    assert {(r.reader, r.operation) for r in writes} == {
        (bp.PYPAIMON, bp.WRITE_ONLY), (bp.PYPAIMON_RUST, bp.WRITE_ONLY), (bp.MERGETREE, bp.WRITE_ONLY),
        (bp.MERGETREE, bp.WRITE_AND_COMPACT)}
    for r in writes:
        if r.reader == bp.PYPAIMON_RUST and not bp.pypaimon_rust_available():
            assert r.unavailable
            continue
        assert r.ok and r.seconds > 0 and r.rows_in == 2 * KEYS, (r.reader, r.check)  # 4 commits of half the keys
        assert r.cpu_seconds > 0


@needs_pypaimon
def test_the_deletion_vector_case_compacts_into_vectors_and_every_reader_reads_it_right(report):
    name = DV_TABLES[0]
    rust = bp.pypaimon_rust_available()
    steps = [r for r in report.results if r.table == name and r.operation not in (bp.READ, bp.LOOKUP)]
    assert [(r.phase, r.operation) for r in steps] == [
        (bp.DV, bp.WRITE_BASE), (bp.MOR, bp.WRITE_BASE), (bp.DV, bp.COMPACT_BASE), (bp.MOR, bp.COMPACT_BASE),
        (bp.DV, bp.WRITE_COMMITS), (bp.MOR, bp.WRITE_COMMITS), (bp.DV, bp.COMPACT_DV), (bp.MOR, bp.COMPACT_DV),
        (bp.DV, bp.CHANGES), (bp.MOR, bp.CHANGES)]
    assert all(r.ok and r.seconds > 0 for r in steps), [(r.phase, r.operation, r.check) for r in steps]
    assert all(r.case == bp.DV_CASE for r in report.results if r.table == name)
    base = report.find(name, bp.PYPAIMON, bp.WRITE_BASE, bp.DV)
    small = report.find(name, bp.PYPAIMON, bp.WRITE_COMMITS, bp.DV)
    assert base.rows_in == KEYS and small.rows_in == bp.DV_COMMITS * bp.DV_MIN_ROWS  # 1% of 2,000 is below it
    for phase in (bp.DV, bp.MOR):
        compact = report.find(name, bp.MERGETREE, bp.COMPACT_DV, phase)
        assert compact.rows_in == small.rows_in and compact.max_runs == 2  # the small commits into a lower level
    for phase in (bp.DV, bp.MOR):  # the net change of the small commits, checked against the workload
        change = report.find(name, bp.MERGETREE, bp.CHANGES, phase)
        assert change.rows_out > 0 and "two full reads of both ends" in change.notes[0]
    marked = report.find(name, bp.MERGETREE, bp.COMPACT_DV, bp.DV).notes[0]
    assert "rows marked in deletion vectors" in marked and ", 0 rows marked" not in marked
    for phase in (bp.DV, bp.MOR):
        for reader in bp.READERS:
            read, lookup = report.find(name, reader, bp.READ, phase), report.find(name, reader, bp.LOOKUP, phase)
            if reader == bp.PYPAIMON_RUST and not rust:
                assert read.unavailable and lookup.unavailable
                continue
            assert read.ok and lookup.ok, (phase, reader, read.check, lookup.check)
            assert 0 < read.rows_out < KEYS and read.max_runs == 2  # some keys were deleted
            assert lookup.timed_runs == LOOKUPS and 0 < lookup.rows_out < LOOKUPS  # some looked-up keys are gone
    assert report.find(name, bp.MERGETREE, bp.READ, bp.DV).rows_out == \
        report.find(name, bp.MERGETREE, bp.READ, bp.MOR).rows_out


def test_the_deletion_vector_workload_matches_a_row_model(tmp_path):
    workload = bp.make_dv_workload(500, str(tmp_path), commits=3, changed=0.6)
    commits = []
    for path in workload.commit_files:
        with pa.memory_map(path, "rb") as source:
            commits.append(pa.ipc.open_file(source).read_all())
    assert [c.num_rows for c in commits] == workload.rows_per_commit == [500, 100, 100, 100]
    assert sorted(commits[0].column("id").to_pylist()) == list(range(500))
    assert set(commits[0].column(bp.OP).to_pylist()) == {bp.INSERT}
    assert {op for c in commits[1:] for op in c.column(bp.OP).to_pylist()} == {bp.DELETE, bp.INSERT}
    state: dict = {}
    for commit in commits:  # the row model: the newest row of every key, a deletion removes it
        for row in commit.to_pylist():
            if row[bp.OP] == bp.DELETE:
                state.pop(row["id"], None)
            else:
                state[row["id"]] = row
    commits_count = len(commits)
    assert workload.expected(commits_count).to_pylist() == [state[k] for k in sorted(state)]
    assert workload.live_keys(commits_count) == len(state) < 500
    assert workload.changed == sorted({r["id"] for c in commits[1:] for r in c.to_pylist()})
    deleted = next(k for k in workload.changed if k not in state)
    assert workload.expected_rows(commits_count, [deleted, 3]) == ([state[3]] if 3 in state else [])
    keys = bp.dv_lookup_keys(workload, 50)
    assert len(set(keys)) == 50 and len(set(keys) & set(workload.changed)) >= 10
    assert len([k for k in keys if k not in state]) >= 5 and len([k for k in keys if k in workload.changed
                                                                  and k in state]) >= 5


def test_the_workload_writes_every_key_once_per_two_commits(tmp_path):
    workload = bp.make_paimon_workload(101, (2, 4), str(tmp_path))
    commits = []
    for path in workload.commit_files:
        with pa.memory_map(path, "rb") as source:
            commits.append(pa.ipc.open_file(source).read_all())
    assert [c.num_rows for c in commits] == workload.rows_per_commit == [50, 51, 50, 51]
    for first, second in (commits[:2], commits[2:]):
        ids = np.concatenate([first.column("id").to_numpy(), second.column("id").to_numpy()])
        assert sorted(ids) == list(range(101))
    for number, commit in enumerate(commits):
        assert set(np.right_shift(commit.column("v_int").to_numpy(), bp.VERSION_SHIFT)) == {number}
        assert commit.column("v_str").to_pylist() == [f"v-{v}" for v in commit.column("v_int").to_pylist()]
    expected = workload.expected(4)
    assert expected.column("id").to_pylist() == list(range(101))
    newest = {row["id"]: row for commit in commits for row in commit.to_pylist()}
    assert expected.to_pylist() == [newest[k] for k in range(101)]
    assert workload.expected_rows(2, [7, 3]) == [r for r in workload.expected(2).to_pylist() if r["id"] in (3, 7)]
    with pytest.raises(ValueError):
        bp.make_paimon_workload(100, (1, 4), str(tmp_path))


def test_the_checks_reject_wrong_answers(tmp_path):
    workload = bp.make_paimon_workload(50, (2,), str(tmp_path))
    want = workload.expected(2)
    shuffled = want.take(pa.array(np.random.default_rng(0).permutation(50)))
    assert bp.compare_full(shuffled, want) == "ok"
    assert bp.compare_full(want.slice(1), want).startswith("wrong: 49 rows")
    older = want.set_column(1, "v_int", pa.array(np.arange(50, dtype=np.int64)))
    assert "values of 'v_int' differ" in bp.compare_full(older, want)
    row = want.slice(7, 1).to_pylist()[0]
    assert bp.compare_lookup([row], row) == "ok"
    assert "gave 0 rows" in bp.compare_lookup([], row)
    assert "gave 2 rows" in bp.compare_lookup([row, row], row)
    assert bp.compare_lookup([{**row, "v_float": 0.5}], row).startswith("wrong: id 7 gave")
    assert bp.compare_lookup([], None, 7) == "ok"  # a deleted key: no row
    assert bp.compare_lookup([row], None, 7) == "wrong: id 7 gave 1 rows, expected none (it was deleted)"


def test_a_failing_pypaimon_process_is_reported():
    answer = bp._driver_answer(1, "", "Traceback (most recent call last):\n  ...\nValueError: no such table\n")
    assert answer == {"check": "failed: pypaimon: ValueError: no such table"}
    assert bp._driver_answer(0, "noise\n", "") == {"check": "failed: pypaimon's process printed no result"}
    assert bp._driver_answer(0, 'log line\n{"seconds": 1.5}\n', "") == {"seconds": 1.5}


def test_without_the_pypaimon_interpreter_nothing_runs_and_the_report_is_not_ok(tmp_path, monkeypatch):
    monkeypatch.setattr(bp, "PAIMON_PYTHON", str(tmp_path / "no-python"))
    report = bp.run_paimon_bench(KEYS, commit_counts=(4,), directory=str(tmp_path), progress=False)
    assert report.skipped and "no pypaimon interpreter" in report.skipped and not report.ok
    assert report.results == [] and not list(tmp_path.iterdir())
    console = Console(record=True, width=200)
    console.print(bp.format_paimon_results(report))
    assert "paimon workload not run" in console.export_text()
    assert bp.paimon_json(report)["ok"] is False


@pytest.mark.parametrize("keys", ["lots", "", "10", "1.5k5"])
def test_bad_paimon_keys_are_usage_errors(keys, capsys):
    with pytest.raises(SystemExit) as exit:
        bench.main(["--paimon-only", "--paimon-keys", keys])
    assert exit.value.code == 2
    assert "--paimon-keys" in capsys.readouterr().err


def test_the_header_names_the_cases():
    assert "commits of half the keys" in bp.workload_text("merge") and "deletion" not in bp.workload_text("merge")
    assert bp.workload_text("dv").startswith("the deletion-vector case (1% of the keys updated or deleted over 5")
    assert bp.workload_text("write").startswith("the write case (4 commits of half the keys into an empty table")
    assert bp.workload_text("all") == f"{bp.workload_text('merge')}; {bp.workload_text('dv')}; " \
                                      f"{bp.workload_text('write')}"


def test_keys_parse_with_suffixes():
    assert bp.keys_argument("1M") == 1_000_000 and bp.keys_argument("200k") == 200_000
    assert bp.quick_keys(1_000_000) == 100_000 and bp.quick_keys(1_000) == bp.MIN_KEYS
