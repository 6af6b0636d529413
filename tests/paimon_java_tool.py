"""Runs under the interpreter of `make paimon-env`'s .venv-paimon-java, where pypaimon 0.2.0
drives Apache Paimon's own Java code (0.9.0, the bundle in its jar) over py4j: the tests check
mergetree's tables against Java's reader, writer, compaction, expiry and orphan cleaning.

    python paimon_java_tool.py serve   one JSON list [command, *args] per stdin line (as paimon_tool)

Commands:
    read WH TABLE OUT.arrow [SNAPSHOT] [FILTER]   Java's batch read (SNAPSHOT an id, a tag name or ""
                                         for the latest; FILTER JSON [[column, value], ...]: equalities,
                                         which Java plans with its statistics and file indexes), as Arrow IPC
    write WH TABLE IN.arrow [KIND]       one Java commit of the rows (KIND "overwrite": INSERT OVERWRITE)
    compact WH TABLE                     Java's full compaction of every bucket holding files, one commit
    expire WH TABLE RETAIN               Java's snapshot expiry keeping the last RETAIN snapshots
    orphans WH TABLE                     Java's orphan cleaning of everything older than now + 1 day

The environment gives Hadoop's classes (Paimon's bundle needs them) as _PYPAIMON_HADOOP_CLASSPATH:
the tests point it at pyspark's jars.
"""
from __future__ import annotations

import json
import tempfile

import pyarrow as pa
from pypaimon.py4j import Catalog
from pypaimon.py4j.java_gateway import get_gateway
from tool_protocol import main


def _table(warehouse: str, name: str):
    return Catalog.create({"warehouse": warehouse}).get_table(name)


def _ipc(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as f:
        return pa.ipc.open_file(f).read_all()


def read(warehouse: str, name: str, out: str, snapshot: str = "", filter: str = "[]") -> None:
    table = _table(warehouse, name)
    if snapshot:
        key = "scan.snapshot-id" if snapshot.isdigit() else "scan.tag-name"
        table._j_table = table._j_table.copy({key: snapshot})
    builder = table.new_read_builder()
    equalities = json.loads(filter)
    if equalities:
        predicates = builder.new_predicate_builder()
        terms = [predicates.equal(column, value) for column, value in equalities]
        builder = builder.with_filter(terms[0] if len(terms) == 1 else predicates.and_predicates(terms))
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    with pa.OSFile(out, "wb") as f, pa.ipc.new_file(f, result.schema) as w:
        w.write_table(result)
    print(json.dumps({"rows": result.num_rows}))


def _io_manager():
    """Spill and lookup files' directory: Java's lookup writers (deletion vectors, first-row) need one."""
    return get_gateway().jvm.org.apache.paimon.disk.IOManager.create(tempfile.mkdtemp(prefix="paimon-java-io-"))


def write(warehouse: str, name: str, path: str, kind: str = "append") -> None:
    table = _table(warehouse, name)
    builder = table.new_batch_write_builder()
    if kind == "overwrite":
        builder = builder.overwrite({})
    writer, committer = builder.new_write(), builder.new_commit()
    writer._j_batch_table_write.withIOManager(_io_manager())
    data = _ipc(path)
    writer.write_arrow(data.cast(writer._arrow_schema))  # Java's own field types and nullability
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()
    print(json.dumps({"rows": data.num_rows}))


def _compact_unaware(j_table) -> dict:
    """A bucket-unaware append table's compaction, as Java's dedicated job does it: the
    coordinator picks each partition's small files, each task merges its files."""
    jvm = get_gateway().jvm
    tasks = jvm.org.apache.paimon.append.UnawareAppendTableCompactionCoordinator(j_table, False).run()
    user = str(jvm.java.util.UUID.randomUUID())
    write = j_table.store().newWrite(user)
    messages = jvm.java.util.ArrayList()
    for task in tasks:
        messages.add(task.doCompact(j_table, write))
    committer = j_table.newCommit(user)
    committer.commit(jvm.java.lang.Long.MAX_VALUE, messages)
    write.close()
    committer.close()
    return {"buckets": 0, "messages": messages.size()}


def compact(warehouse: str, name: str) -> None:
    jvm = get_gateway().jvm
    j_table = _table(warehouse, name)._j_table
    if j_table.bucketMode() == jvm.org.apache.paimon.table.BucketMode.BUCKET_UNAWARE:
        print(json.dumps(_compact_unaware(j_table)))
        return
    # py4j finds interface default methods through pypaimon's InvocationUtil only
    builder = jvm.InvocationUtil.getBatchWriteBuilder(j_table)
    writer = builder.newWrite().withIOManager(_io_manager())
    seen = jvm.java.util.HashSet()  # (partition, bucket) pairs, equal as Java compares them
    for split in jvm.InvocationUtil.getReadBuilder(j_table).newScan().plan().splits():
        pair = jvm.org.apache.paimon.utils.Pair.of(split.partition(), split.bucket())
        if pair not in seen:  # py4j's Python view of the set (its add returns nothing)
            seen.add(pair)
            writer.compact(split.partition(), split.bucket(), True)
    messages = writer.prepareCommit()
    committer = builder.newCommit()
    committer.commit(messages)
    writer.close()
    committer.close()
    print(json.dumps({"buckets": len(seen), "messages": len(messages)}))


def expire(warehouse: str, name: str, retain: str) -> None:
    jvm = get_gateway().jvm
    j_table = _table(warehouse, name)._j_table
    config = (jvm.org.apache.paimon.options.ExpireConfig.builder()
              .snapshotRetainMax(int(retain)).snapshotRetainMin(int(retain))
              .snapshotTimeRetain(jvm.java.time.Duration.ZERO).build())
    print(json.dumps({"expired": j_table.newExpireSnapshots().config(config).expire()}))


def orphans(warehouse: str, name: str) -> None:
    jvm = get_gateway().jvm
    j_table = _table(warehouse, name)._j_table
    # every unreferenced file counts, however new: "older than" tomorrow
    # (LocalDateTime's own text drops zero seconds, which Java's parser then refuses)
    tomorrow = jvm.java.time.LocalDateTime.now().plusDays(1).format(
        jvm.java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss"))
    deleted = jvm.org.apache.paimon.operation.OrphanFilesClean(j_table).olderThan(tomorrow).clean()
    print(json.dumps({"deleted": sorted(str(p.getName()) for p in deleted)}))


COMMANDS = {"read": read, "write": write, "compact": compact, "expire": expire, "orphans": orphans}


if __name__ == "__main__":
    main(COMMANDS)
