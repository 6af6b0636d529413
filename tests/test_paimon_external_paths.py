"""Paimon tables whose data files live under other roots (``data-file.external-paths`` and its
strategies), written by pypaimon with every strategy: read by mergetree like the row model and
pypaimon, compacted with the outputs placed as Paimon places them (root, relative bucket path,
entropy directories; the full path in ``_EXTERNAL_PATH``), read back by both; every spelling of a
``file:`` path read alike; outputs of a failed compaction removed from the external roots."""
from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path

import fastavro
import pytest
from paimon_fixtures import PAIMON_PYTHON, needs_pypaimon, pypaimon_read, rows, write_paimon
from test_paimon import _commits, _key, _options, model

import mergetree.paimon as mp
from mergetree.errors import CompactionConflictError, CorruptTableError, UnsupportedPaimonFeatureError
from mergetree.paimon.handle import PaimonTableHandle
from mergetree.table.compaction.runner import execute_unit, plan_units
from mergetree.table.compaction.transaction import rewrite_transaction
from mergetree.table.paimon.metadata import PaimonTable, external_location
from mergetree.table.paimon.options import ExternalPaths, check_options, external_paths
from mergetree.table.paimon.writer import entropy_directories

NAME = "db.t"
KEY = _key(True)
STRATEGIES = ["round-robin", "specific-fs", "entropy-inject", "weight-robin", "none"]


def _external_options(roots: list[Path], strategy: str) -> dict:
    opts = {**_options("deduplicate", 2, True, False),
            "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
            "data-file.external-paths.strategy": strategy}
    if strategy == "specific-fs":
        opts["data-file.external-paths.specific-fs"] = "file"
    if strategy == "weight-robin":
        opts["data-file.external-paths.weights"] = "3,1"
    return opts


def _files(root: Path) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names if n.startswith("data-")}


def _live(wh: Path) -> list:
    t = PaimonTable.open(str(wh), NAME)
    return t.live_files(t.latest_snapshot())


def _check_placement(wh: Path, roots: list[Path], strategy: str) -> None:
    """Every live file where Paimon puts it: ``<root>/<partition>/bucket-<n>/[entropy/]<file>``,
    the manifest recording ``file:<that path>``; none in the table with a strategy."""
    for f in _live(wh):
        external = f.record["_FILE"]["_EXTERNAL_PATH"]
        if strategy == "none":
            assert external is None and f.name is not None
            continue
        region = f.partition[0]
        middle = f"{entropy_directories(f.file_name)}/" if strategy == "entropy-inject" else ""
        wanted = [f"file:{r}/region={region}/bucket-{f.bucket}/{middle}{f.file_name}" for r in roots]
        assert external in wanted, (external, wanted)
        assert os.path.exists(f.path) and f.path == external[len("file:"):]
    if strategy != "none":
        assert not _files(wh)


@needs_pypaimon
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_external_paths_read_compact_and_keep_writing(tmp_path: Path, strategy: str) -> None:
    wh, work = tmp_path / "wh", tmp_path / "work"
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    opts = _external_options(roots, strategy)
    commits = _commits(41, 4, 100, True, True)
    write_paimon(work, wh, NAME, commits, KEY, ["region"], opts)
    expected = model("deduplicate", commits, KEY)
    _check_placement(wh, roots, strategy)
    assert rows(mp.read(str(wh), NAME), KEY) == expected
    assert rows(mp.read(str(wh), NAME, filter=("id", "<", 40)), KEY) == [r for r in expected if r["id"] < 40]

    before = set().union(*(_files(r) for r in roots)) | _files(wh)
    assert mp.compact(str(wh), NAME, full=True) is not None
    assert mp.info(str(wh), NAME).max_sorted_runs == 1
    _check_placement(wh, roots, strategy)
    new = {f.path for f in _live(wh)} - before
    assert new  # the compaction's outputs, placed as checked above
    assert rows(mp.read(str(wh), NAME), KEY) == expected
    assert rows(pypaimon_read(wh, NAME, work), KEY) == expected
    if strategy != "entropy-inject":  # pypaimon keeps writing after mergetree's compaction: once is enough
        return
    more = _commits(8, 2, 160, True, True)
    write_paimon(work, wh, NAME, more, KEY, ["region"], opts)
    expected = model("deduplicate", commits + more, KEY)
    assert rows(mp.read(str(wh), NAME), KEY) == expected == rows(pypaimon_read(wh, NAME, work), KEY)
    _check_placement(wh, roots, strategy)


def _rewrite_external_paths(table_dir: Path, spell) -> None:
    """Every manifest's ``_EXTERNAL_PATH`` respelled (DELETE entries too, so they still match)."""
    for path in (table_dir / "manifest").iterdir():
        if path.name.startswith("manifest-list-") or not path.name.startswith("manifest-"):
            continue
        with path.open("rb") as f:
            reader = fastavro.reader(f)
            schema, codec, records = reader.writer_schema, reader.codec, list(reader)
        for r in records:
            if r["_FILE"]["_EXTERNAL_PATH"]:
                plain = re.fullmatch(r"(?:file:(?://(?:localhost)?)?)?(/.*)", r["_FILE"]["_EXTERNAL_PATH"])
                assert plain is not None
                r["_FILE"]["_EXTERNAL_PATH"] = spell(plain.group(1))
        with path.open("wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec)


@needs_pypaimon
def test_every_spelling_of_a_local_external_path(tmp_path: Path) -> None:
    """pypaimon and Java write ``file:/x``; ``file:///x``, ``file://localhost/x`` and a bare
    ``/x`` name the same file.  A file on another host, or a relative path, is refused."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    commits = _commits(43, 4, 80, True, True)
    write_paimon(work, wh, NAME, commits, KEY, ["region"], _external_options(roots, "round-robin"))
    expected = model("deduplicate", commits, KEY)
    spellings = {"file:///x": lambda p: f"file://{p}", "file://localhost/x": lambda p: f"file://localhost{p}",
                 "/x": lambda p: p, "file:/x": lambda p: f"file:{p}"}
    for i, spell in enumerate(spellings.values()):
        copy = tmp_path / f"wh{i}"  # a table at another path: nothing cached for it
        shutil.copytree(wh, copy)
        _rewrite_external_paths(copy / "db.db" / "t", spell)
        assert rows(mp.read(str(copy), NAME), KEY) == expected
        if i == 0:
            assert all(f.record["_FILE"]["_EXTERNAL_PATH"].startswith("file:///") for f in _live(copy))
            assert mp.compact(str(copy), NAME, full=True) is not None  # DELETEs copy the inputs' spelling
            assert rows(mp.read(str(copy), NAME), KEY) == expected
    for i, (spell, error, match) in enumerate(((lambda p: f"file://elsewhere{p}", UnsupportedPaimonFeatureError,
                                                "on host 'elsewhere'"),
                                               (lambda p: p.lstrip("/"), CorruptTableError,
                                                "neither a URI nor an absolute path"))):
        copy = tmp_path / f"bad{i}"
        shutil.copytree(wh, copy)
        _rewrite_external_paths(copy / "db.db" / "t", spell)
        with pytest.raises(error, match=match):
            mp.read(str(copy), NAME)


def test_external_location() -> None:
    assert external_location("file:/a/b") == external_location("file:///a/b") == "/a/b"
    assert external_location("file://localhost/a/b") == external_location("/a/b") == "/a/b"
    assert external_location("s3://bucket/a/b") == "s3://bucket/a/b"


@needs_pypaimon
def test_outputs_of_a_failed_compaction_leave_the_external_roots(tmp_path: Path) -> None:
    wh, work = tmp_path / "wh", tmp_path / "work"
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    commits = _commits(47, 5, 100, True, True)
    write_paimon(work, wh, NAME, commits, KEY, ["region"], _external_options(roots, "entropy-inject"))
    # a full compaction planned and carried out on the engine, bucket by bucket, not committed
    directory = PaimonTableHandle(str(wh), None, NAME).at().directory
    base, units = plan_units(directory, None, True)
    assert base is not None and units
    before = set().union(*(_files(r) for r in roots))
    adds, deletes = [], []
    for unit in units:
        a, d = execute_unit(directory, unit, None, None)
        adds += a
        deletes += d
    inputs = {e.file.file_name for e in deletes}
    written = [e.file.origin.path for e in adds if e.file.file_name not in inputs]
    assert written and all(not p.startswith(str(wh)) for p in written)
    assert all(os.path.exists(p) for p in written)
    assert set().union(*(_files(r) for r in roots)) - before == set(written)  # placed under the roots
    assert mp.compact(str(wh), NAME, full=True) is not None  # another compaction commits first
    latest = PaimonTable.open(str(wh), NAME).latest_snapshot_id()
    with pytest.raises(CompactionConflictError):
        with rewrite_transaction(directory, base.id) as rewrite:
            rewrite.replace(deletes, adds)
            rewrite.commit()
    # the failed commit removed its outputs from the external roots, and committed nothing
    assert not any(os.path.exists(p) for p in written)
    assert PaimonTable.open(str(wh), NAME).latest_snapshot_id() == latest
    live = {f.path for f in _live(wh)}  # the inputs stay until Paimon's expiry removes them
    assert set().union(*(_files(r) for r in roots)) - before == live - before
    assert rows(mp.read(str(wh), NAME), KEY) == model("deduplicate", commits, KEY)


@pytest.mark.parametrize(("options", "named", "why"), [
    ({"data-file.external-paths": "/tmp/x", "data-file.external-paths.strategy": "round-robin"},
     "data-file.external-paths", "needs a scheme"),
    ({"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "random"},
     "data-file.external-paths.strategy", "strategies are"),
    ({"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "specific-fs"},
     "data-file.external-paths.specific-fs", "needs the scheme"),
    ({"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "specific-fs",
      "data-file.external-paths.specific-fs": "s3"}, "data-file.external-paths.specific-fs", "no root"),
    ({"data-file.external-paths": "file:///x,file:///y", "data-file.external-paths.strategy": "weight-robin",
      "data-file.external-paths.weights": "1,0"}, "data-file.external-paths.weights", "positive"),
    ({"data-file.external-paths": "file:///x,file:///y", "data-file.external-paths.strategy": "weight-robin",
      "data-file.external-paths.weights": "1"}, "data-file.external-paths.weights", "1 weights for 2 roots"),
    ({"data-file.external-paths": "file:///x,file:///y", "data-file.external-paths.strategy": "weight-robin",
      "data-file.external-paths.weights": "a,b"}, "data-file.external-paths.weights", "integers"),
])
def test_external_path_options_refused_by_name(options: dict, named: str, why: str) -> None:
    with pytest.raises(UnsupportedPaimonFeatureError, match=f"'{re.escape(named)}'.*{why}"):
        external_paths(options)
    # reads do not depend on them: every file's place is in the manifest
    assert check_options({"bucket": "1", **options}, ["k", "v"], ["k"], []).buckets == 1


def test_external_path_options_as_paimon_reads_them() -> None:
    assert external_paths({}) is None
    assert external_paths({"data-file.external-paths": "s3://b/x"}) is None  # strategy none by default
    assert external_paths({"data-file.external-paths": "s3://b/x/, file:///y",
                           "data-file.external-paths.strategy": "ROUND-ROBIN"}) == \
        ExternalPaths("round-robin", ("s3://b/x", "file:///y"))
    assert external_paths({"data-file.external-paths": "s3://b/x,file:///y,S3://c",
                           "data-file.external-paths.strategy": "specific-fs",
                           "data-file.external-paths.specific-fs": "s3"}) == \
        ExternalPaths("round-robin", ("s3://b/x", "S3://c"))
    # one root or no weights: round-robin, as Java's provider falls back
    assert external_paths({"data-file.external-paths": "s3://b/x", "data-file.external-paths.strategy": "weight-robin",
                           "data-file.external-paths.weights": "5"}).strategy == "round-robin"
    assert external_paths({"data-file.external-paths": "s3://b/x,s3://b/y",
                           "data-file.external-paths.strategy": "weight-robin",
                           "data-file.external-paths.weights": "5, 2"}) == \
        ExternalPaths("weight-robin", ("s3://b/x", "s3://b/y"), (5, 2))


@needs_pypaimon
def test_an_unwritable_root_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    wh, work = tmp_path / "wh", tmp_path / "work"
    commits = _commits(49, 3, 60, False, False)
    write_paimon(work, wh, NAME, commits, KEY, ["region"], _options("deduplicate", 1, False, False))
    schema_file = wh / "db.db" / "t" / "schema" / "schema-0"
    d = json.loads(schema_file.read_text())
    d["options"].update({"data-file.external-paths": "nosuchscheme://x/y",
                         "data-file.external-paths.strategy": "round-robin"})
    schema_file.write_text(json.dumps(d))
    before = _files(wh)
    with pytest.raises(UnsupportedPaimonFeatureError, match="data-file.external-paths"):
        mp.compact(str(wh), NAME, full=True)
    assert _files(wh) == before
    assert rows(mp.read(str(wh), NAME), KEY) == model("deduplicate", commits, KEY)


def test_external_roots_on_s3(s3_server, tmp_path: Path) -> None:
    """A warehouse on S3 whose data files pypaimon put under two other prefixes of the bucket:
    read with the warehouse's storage options, compacted with the outputs placed under the roots
    (``s3://...`` recorded), read back by pypaimon."""
    if not os.path.exists(PAIMON_PYTHON):
        pytest.skip(f"no pypaimon interpreter at {PAIMON_PYTHON}")
    from test_paimon_s3 import Pypaimon, _objects

    unique = uuid.uuid4().hex[:10]
    uri, opts = f"s3://lake/wh-{unique}", s3_server.options()
    roots = [f"s3://lake/ext-{unique}/a", f"s3://lake/ext-{unique}/b"]
    options = {**_options("deduplicate", 2, True, False), "data-file.external-paths": ",".join(roots),
               "data-file.external-paths.strategy": "round-robin"}
    commits = _commits(51, 4, 100, True, True)
    driver = Pypaimon(s3_server, tmp_path / "work")
    driver.write(uri, NAME, commits, options)
    driver.run()
    expected = model("deduplicate", commits, KEY)
    assert not [k for k in _objects(s3_server, f"wh-{unique}/") if "/data-" in k]
    before = set(_objects(s3_server, f"ext-{unique}/"))
    assert before
    assert rows(mp.read(uri, NAME, storage_options=opts), KEY) == expected

    assert mp.compact(uri, NAME, full=True, storage_options=opts) is not None
    t = PaimonTable.open(uri, NAME, opts)
    for f in t.live_files(t.latest_snapshot()):
        external = f.record["_FILE"]["_EXTERNAL_PATH"]
        assert external in [f"{r}/region={f.partition[0]}/bucket-{f.bucket}/{f.file_name}" for r in roots]
    new = set(_objects(s3_server, f"ext-{unique}/")) - before
    assert new and {f"s3://lake/{k}" for k in new} == \
        {f.record["_FILE"]["_EXTERNAL_PATH"] for f in t.live_files(t.latest_snapshot())} - \
        {f"s3://lake/{k}" for k in before}
    assert not [k for k in _objects(s3_server, f"wh-{unique}/") if "/data-" in k]
    assert rows(mp.read(uri, NAME, storage_options=opts), KEY) == expected
    driver.read(uri, NAME)
    assert rows(driver.run()[0], KEY) == expected
