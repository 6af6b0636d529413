"""A state machine drives a table through random writes, upserts, deletes, compactions,
reopens, filtered reads and time travel, checking every read against a dict model — on Paimon
tables (what `Table.create` makes), whose semantics the model follows: a partial-update table
refuses deletes (Paimon refuses retractions there), and where a batch read leaves level 0 out
(deletion vectors without ``deletion-vectors.merge-on-read``, and first-row) a read sees the
rows compaction has resolved: exactly the model after a full compaction, an unknown mix after
a partial one (not checked)."""
from __future__ import annotations

import datetime
import shutil
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from mergetree import Table

SCHEMA = pa.schema([("id", pa.int32()), ("p", pa.string()), ("a", pa.int64()), ("b", pa.string())])
IDS = st.integers(0, 40)
PARTS = st.sampled_from(["x", "y"])
ROW = st.fixed_dictionaries({"id": IDS, "p": PARTS, "a": st.one_of(st.none(), st.integers(-5, 5)),
                             "b": st.one_of(st.none(), st.text(alphabet="abc", max_size=3))})


class TableMachine(RuleBasedStateMachine):
    @initialize(engine=st.sampled_from(["deduplicate", "partial-update", "first-row", "aggregate"]),
                buckets=st.sampled_from([1, 1, 3]), partitioned=st.booleans(),
                trigger=st.integers(2, 5), write_only=st.booleans(),
                file_size=st.sampled_from(["2 kb", "1 mb"]), deletion_vectors=st.booleans(),
                merge_on_read=st.booleans())
    def create(self, engine, buckets, partitioned, trigger, write_only, file_size, deletion_vectors, merge_on_read):
        self.dir = tempfile.mkdtemp(prefix="mergetree-model-")
        self.engine = engine
        self.partitioned = partitioned
        # a Paimon batch read leaves level 0 out here: only compaction makes rows visible, so
        # the table compacts only when told (what a read sees is then known after a full one)
        self.hides_level0 = not merge_on_read if deletion_vectors else engine == "first-row"
        self.deletes = engine == "deduplicate"  # a partial-update table refuses deletes, as Paimon does
        pk = ["id", "p"] if partitioned else ["id"]
        self.table = Table.create(self.dir, SCHEMA if partitioned else SCHEMA.remove(1), primary_key=pk,
                                  partition_by=["p"] if partitioned else None, buckets=buckets,
                                  merge_engine=engine, options={
                                      **({"fields.a.aggregate-function": "sum"} if engine == "aggregate" else {}),
                                      "num-sorted-run.compaction-trigger": str(trigger),
                                      "write-only": str(write_only or self.hides_level0).lower(),
                                      "target-file-size": file_size,
                                      # reads must be the same with deletion vectors on and off
                                      **({"deletion-vectors.enabled": "true"} if deletion_vectors else {}),
                                      **({"deletion-vectors.merge-on-read": "true"}
                                         if deletion_vectors and merge_on_read else {})})
        self.model: dict[tuple, dict] = {}
        self.visible: dict[tuple, dict] | None = {}  # what a read sees (None: not known)
        self.history: dict[int, dict | None] = {}

    def teardown(self):
        shutil.rmtree(getattr(self, "dir", ""), ignore_errors=True)

    def key(self, row):
        return (row["id"], row["p"]) if self.partitioned else (row["id"],)

    def shape(self, row):
        return row if self.partitioned else {k: v for k, v in row.items() if k != "p"}

    def apply(self, row):
        k = self.key(row)
        old = self.model.get(k)
        if self.engine == "deduplicate" or old is None:
            self.model[k] = dict(row)
        elif self.engine == "partial-update":
            self.model[k] = {c: (row[c] if row[c] is not None else old[c]) for c in row}
        elif self.engine == "aggregate":  # a: sum, b: last non-null
            a = old["a"] if row["a"] is None else row["a"] if old["a"] is None else old["a"] + row["a"]
            self.model[k] = {**row, "a": a, "b": row["b"] if row["b"] is not None else old["b"]}
        # first-row keeps the first version

    def remember(self, snapshot, resolved: bool | None = None):
        """Record what reads of the new snapshot see; `resolved`: a compaction that resolved
        level 0 (True: all of it, False: perhaps part)."""
        if not self.hides_level0 or resolved:
            self.visible = {k: dict(v) for k, v in self.model.items()}
        elif resolved is False:
            self.visible = None
        seen = None if self.visible is None else {k: dict(v) for k, v in self.visible.items()}
        if snapshot is not None:
            self.history[snapshot.id] = seen
        latest = self.table.latest_snapshot()
        if latest is not None and latest.id not in self.history:  # a compaction after the write
            self.history[latest.id] = seen

    def expected(self, model=None, keep=lambda r: True):
        rows = [self.shape(r) for r in (model if model is not None else self.visible).values() if keep(r)]
        return sorted(rows, key=lambda r: (r.get("p", ""), r["id"]))

    def actual(self, table: pa.Table):
        return sorted(table.to_pylist(), key=lambda r: (r.get("p", ""), r["id"]))

    ACTIONS = (["write_rows"] * 4 + ["upsert_known_keys"] * 4 + ["delete"] * 2
               + ["compact", "reopen", "read_range", "read_value_filter", "time_travel", "expire"])

    @rule(data=st.data())
    def act(self, data):
        """One step, drawn with weights: mostly writes, so versions and runs pile up."""
        action = data.draw(st.sampled_from(self.ACTIONS), label="action")
        getattr(self, action)(data)

    def write_rows(self, data):
        self.write(data.draw(st.lists(ROW, min_size=1, max_size=30)))

    def write(self, rows):
        snapshot = self.table.write(pa.Table.from_pylist([self.shape(r) for r in rows]))
        for r in rows:
            self.apply(r)
        self.remember(snapshot)

    def upsert_known_keys(self, data):
        """Rewrite keys that exist, so versions of one key pile up across runs."""
        if not self.model:
            return
        keys = data.draw(st.lists(st.sampled_from(sorted(self.model)), min_size=1, max_size=20))
        rows = []
        for k in keys:
            row = data.draw(ROW)
            row.update(dict(zip(("id", "p"), k)) if self.partitioned else {"id": k[0]})
            rows.append(row)
        self.write(rows)

    def delete(self, data):
        if not self.deletes:
            return
        keys = data.draw(st.lists(st.tuples(IDS, PARTS), min_size=1, max_size=10))
        rows = [{"id": i, "p": p} for i, p in keys]
        snapshot = self.table.delete(pa.Table.from_pylist(
            [self.shape(r) for r in rows], schema=pa.schema([f for f in self.table.schema
                                                             if f.name in ("id", "p")])))
        for r in rows:
            self.model.pop(self.key(r), None)
        self.remember(snapshot)

    def compact(self, data):
        full = data.draw(st.booleans(), label="full")
        self.remember(self.table.compact(full=full), resolved=full)

    def expire(self, data):
        """Expire old snapshots and remove orphans: nothing a live snapshot needs may go."""
        retain = data.draw(st.integers(1, 4), label="retain")
        expired = self.table.expire_snapshots(retain_last=retain, older_than=0)
        for i in expired:
            self.history.pop(i, None)
        self.table.remove_orphan_files(older_than=datetime.timedelta(0))

    def reopen(self, data):
        self.table = Table.open(self.dir)

    def read_range(self, data):
        low, width = data.draw(IDS), data.draw(st.integers(0, 10))
        got = self.table.read(filter=[("id", ">=", low), ("id", "<", low + width)])
        if self.visible is not None:
            assert self.actual(got) == self.expected(keep=lambda r: low <= r["id"] < low + width)

    def read_value_filter(self, data):
        ids, value = data.draw(st.lists(IDS, min_size=1, max_size=4)), data.draw(st.integers(-5, 5))
        # a filter on a non-key column must see the merged value, not an older version
        got = self.table.read(filter=("or", [("id", "in", ids), ("a", "=", value)]))
        if self.visible is not None:
            assert self.actual(got) == self.expected(keep=lambda r: r["id"] in ids or r["a"] == value)

    def time_travel(self, data):
        if not self.history:
            return
        snapshot_id = data.draw(st.sampled_from(sorted(self.history)))
        got = self.table.read(snapshot=snapshot_id)
        seen = self.history[snapshot_id]
        if seen is not None:
            assert self.actual(got) == self.expected(seen)

    @invariant()
    def reads_equal_model(self):
        if hasattr(self, "table"):
            got = self.table.read()
            if self.visible is not None:
                assert self.actual(got) == self.expected()


# no "explain" phase: its tracing slows a failing case's shrinking of file-writing steps tenfold
TableMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None,
                                          phases=[p for p in Phase if p is not Phase.explain],
                                          suppress_health_check=[HealthCheck.too_slow])
test_table_model = TableMachine.TestCase
