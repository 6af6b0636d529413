"""What the wheels for Windows, macOS and musl need of the code, checked here where it can be: ranged
reads without `os.pread`, the exclusive create on a filesystem without hard links, file:// URIs
with a drive letter, the C fallbacks MSVC compiles instead of gcc's builtins, and the crash tests
the Windows run skips.  What only Windows can show (its rename semantics, text-mode I/O) is not
claimed here."""
from __future__ import annotations

import errno
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mergetree.errors import ObjectExistsError, StorageError
from mergetree.storage import parse_location, resolve
from mergetree.storage.local import link_exclusive, read_at
from mergetree.storage.location import file_uri_path

CORE = Path(__file__).resolve().parent.parent / "_core"


def test_ranged_reads_without_pread_equal_those_with_it(tmp_path):
    data = random.Random(3).randbytes(100_000)
    path = tmp_path / "f"
    path.write_bytes(data)
    rng = random.Random(4)
    ranges = [(rng.randrange(len(data)), rng.randrange(1, 20_000)) for _ in range(200)] + [(len(data) - 5, 50)]
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        for offset, length in ranges:
            expected = data[offset:offset + length]  # short only at the end of the file
            assert read_at(fd, length, offset, pread=False) == expected
            if hasattr(os, "pread"):
                assert read_at(fd, length, offset, pread=True) == expected
    finally:
        os.close(fd)


def test_stored_bytes_come_back_unchanged_whatever_newlines_they_hold(tmp_path):
    store = resolve(str(tmp_path))
    data = b"a\nb\r\nc\rd\x1a\x00" * 1000  # \x1a: end of file to a Windows text-mode read
    store.write("w/one", data)
    store.create("c/one", data)
    with store.open_output("o/one") as out:
        out.write(data)
    for name in ("w/one", "c/one", "o/one"):
        assert store.read(name) == data
        assert store.size(name) == len(data)
        assert store.read_ranges(name, [(1, 3), (len(data) - 4, 4)]) == [data[1:4], data[-4:]]


def test_the_exclusive_create_still_refuses_an_existing_name(tmp_path):
    source, target = tmp_path / "s", tmp_path / "t"
    source.write_bytes(b"new")
    target.write_bytes(b"old")
    with pytest.raises(FileExistsError):
        link_exclusive(str(source), str(target))
    assert target.read_bytes() == b"old"


def _no_hard_links(*args, **kwargs):
    raise OSError(errno.EPERM, "Operation not permitted")  # what Linux's vfat answers to link()


def test_without_hard_links_a_posix_create_is_refused_clearly_and_writes_nothing(tmp_path, monkeypatch):
    store = resolve(str(tmp_path))
    monkeypatch.setattr(os, "link", _no_hard_links)
    with pytest.raises(StorageError, match="no hard links") as raised:
        store.create("snapshot/snapshot-1", b"{}")
    assert not isinstance(raised.value, ObjectExistsError)
    assert "permission denied" not in str(raised.value)
    assert list(tmp_path.rglob("*")) == [tmp_path / "snapshot"]  # the directory only, no temporary file


def test_without_hard_links_windows_renames(tmp_path, monkeypatch):
    # only the fallback's path is checked here: that Windows' rename refuses an existing name
    # is its documented semantics, not something this machine can show
    source, target = tmp_path / "s", tmp_path / "t"
    source.write_bytes(b"whole")
    monkeypatch.setattr(os, "link", _no_hard_links)
    link_exclusive(str(source), str(target), windows=True)
    assert target.read_bytes() == b"whole"
    assert not source.exists()


@pytest.mark.parametrize(("uri_path", "windows", "expected"), [
    ("/C:/data/t", True, "C:/data/t"),
    ("/c:", True, "c:/"),
    ("/data/t", True, "/data/t"),
    ("/C:/data/t", False, "/C:/data/t"),  # on POSIX a directory named "C:" is a directory
    ("", False, "/"),
])
def test_a_file_uri_names_the_drive_on_windows_only(uri_path, windows, expected):
    assert file_uri_path(uri_path, windows=windows) == expected


def test_a_file_uri_resolves_to_the_local_path(tmp_path):
    assert parse_location(f"file://{tmp_path}/t").root == os.path.join(str(tmp_path), "t")


def _c_block(pxd: str, function: str) -> str:
    """The verbatim C of the `cdef extern from *` block of a .pxd that defines `function`."""
    blocks = re.findall(r'cdef extern from \*:\n\s*"""\n(.*?)"""', (CORE / pxd).read_text(), re.DOTALL)
    return next(b for b in blocks if function in b)


DRIVER = r"""
int main(void) {
    uint64_t x = 0x0123456789ABCDEFull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;  /* xorshift: any 64-bit pattern */
        uint8_t b[8]; memcpy(b, &x, 8);
        mt_node p = {x >> (i % 64), x & 7, (uint64_t)(i % 3)}, q = {x >> ((i + 1) % 64), (x >> 3) & 7, 1};
        printf("%llu %d %d %lld\n", (unsigned long long)mt_load_be64(b), mt_node_less(&p, &q),
               mt_node_less(&q, &p), (long long)mt_levels((int32_t)(x >> 33) >> (i % 31)));
    }
    printf("%lld %lld\n", (long long)mt_levels(0), (long long)mt_levels(-5));
    return 0;
}
"""


@pytest.mark.skipif(not CORE.is_dir(), reason="the core's sources are not beside the tests (an installed wheel)")
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_c_fallbacks_for_compilers_without_gccs_builtins_compute_the_same(tmp_path):
    # the MSVC branches themselves need MSVC; the plain-C branch beside them is what any other
    # compiler takes, and this machine can build it by hiding gcc's identity macros
    source = tmp_path / "fallbacks.c"
    # the system headers first, as gcc: glibc's need its macros; the blocks' own includes are then no-ops
    prelude = ("#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\n"
               "#ifdef HIDE_GCC\n#undef __GNUC__\n#undef __clang__\n#undef __SIZEOF_INT128__\n#endif\n")
    source.write_text(prelude + _c_block("mergetree_comparators.pxd", "mt_load_be64")
                      + _c_block("mergetree_loser_tree.pxd", "mt_levels") + DRIVER)
    outputs = []
    for hide in ([], ["-DHIDE_GCC"]):
        exe = tmp_path / f"run{len(outputs)}"
        subprocess.run(["cc", "-O2", "-std=c99", "-w", *hide, str(source), "-o", str(exe)], check=True)
        outputs.append(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout)
    builtins, fallbacks = outputs
    assert builtins.count("\n") == 20001
    assert builtins.splitlines()[-1] == "0 0"
    assert fallbacks == builtins


def test_the_crash_tests_windows_skips_are_found():
    import test_streaming_write as streaming
    import test_table_crash
    from conftest import uses_posix_process_calls

    assert uses_posix_process_calls(test_table_crash.test_sigkill_at_random_points_loses_nothing)  # via a helper
    assert uses_posix_process_calls(streaming.test_peak_memory_stays_bounded_by_the_write_buffer)  # a child script
    assert uses_posix_process_calls(streaming.test_sigkill_mid_streaming_write_keeps_exactly_the_committed_data)
    assert not uses_posix_process_calls(test_the_exclusive_create_still_refuses_an_existing_name)
    assert not uses_posix_process_calls(test_ranged_reads_without_pread_equal_those_with_it)
