"""The one cache of decoded file contents: LRU bounded by entries and by weight, keyed on the
file's path, size and modification time (a file replaced in place is loaded again), a missing
file never cached, safe under threads."""
from __future__ import annotations

import os
import threading
from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree.table.filecache import FileCache


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 40)), max_size=60), st.integers(1, 4),
       st.integers(20, 100))
def test_lru_by_entries_and_weight_matches_a_model(tmp_path_factory, calls, max_entries, max_bytes):
    folder = tmp_path_factory.mktemp("files")
    paths = []
    for i in range(6):
        p = folder / f"f{i}"
        p.write_bytes(b"x" * (i + 1))
        paths.append(str(p))
    cache: FileCache[int] = FileCache(max_entries, max_bytes=max_bytes, weight=lambda v: v)
    model: OrderedDict[int, int] = OrderedDict()
    loads = []
    for which, weight in calls:
        def load(which=which, weight=weight) -> int:
            loads.append(which)
            return weight
        expected_load = which not in model
        before = len(loads)
        value = cache.get(paths[which], load)
        assert (len(loads) > before) == expected_load
        if expected_load:
            model[which] = weight
        else:
            assert value == model[which]
        model.move_to_end(which)
        while len(model) > 1 and (len(model) > max_entries or sum(model.values()) > max_bytes):
            model.popitem(last=False)
        assert len(cache) == len(model)


def test_a_file_replaced_in_place_is_loaded_again(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"one")
    cache: FileCache[bytes] = FileCache(8)
    assert cache.get(str(path), path.read_bytes) == b"one"
    assert cache.get(str(path), lambda: b"not read") == b"one"
    path.write_bytes(b"three")  # another size (and mtime): another file
    assert cache.get(str(path), path.read_bytes) == b"three"
    st = os.stat(path)
    path.write_bytes(b"THREE")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # same size, newer mtime
    assert cache.get(str(path), path.read_bytes) == b"THREE"
    assert cache.get(str(path), lambda: b"x", "other key part") == b"x"


def test_a_missing_file_is_never_cached(tmp_path):
    cache: FileCache[int] = FileCache(8)
    calls = []
    for _ in range(3):
        cache.get(str(tmp_path / "missing"), lambda: calls.append(1) or 1)
    assert len(calls) == 3 and len(cache) == 0


def test_threads_share_one_cache(tmp_path):
    paths = []
    for i in range(20):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes(i + 1))
        paths.append(str(p))
    cache: FileCache[int] = FileCache(10)
    errors = []

    def work(seed: int) -> None:
        try:
            for k in range(500):
                i = (seed * 7 + k) % 20
                assert cache.get(paths[i], lambda i=i: i) == i
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) <= 10
