"""tools/wheel_subset.py, the part of the suite CI runs from each Python's wheel: every C file
of csrc/ is named with the test file of the subset that runs it (CI's `--check` measures each
entry with gcov), and the subset is what the tool lists."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import wheel_subset as ws  # noqa: E402


def test_every_c_file_of_csrc_has_its_test_file_in_the_subset():
    assert ws.problems(ROOT) == []
    assert set(ws.COVERS) == set(ws.c_files(ROOT))
    assert all(ws.COVERS[c] in ws.SUBSET + [ws.COMPILED, ws.IMPORT] for c in ws.COVERS)


def test_a_new_c_file_or_a_removed_test_file_is_named(tmp_path):
    (tmp_path / "csrc" / "core").mkdir(parents=True)
    (tmp_path / "csrc" / "core" / "new_thing.c").write_text("int x;\n")
    (tmp_path / "tests").mkdir()
    found = ws.problems(str(tmp_path))
    assert ("csrc/core/new_thing.c: no test file of the subset is named for it in "
            "tools/wheel_subset.py's COVERS") in found
    assert "tests/test_errors.py: in the subset, but there is no such test file" in found
    assert "csrc/module.c: named in COVERS, but not a C file of csrc/" in found


def test_the_subset_is_the_named_test_files_once_each_and_listed_as_paths():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "wheel_subset.py"),
                          "--list"], capture_output=True, text=True, check=True).stdout
    assert out.split() == sorted(set(ws.COVERS.values()) - {ws.COMPILED, ws.IMPORT})
    assert all(os.path.isfile(os.path.join(ROOT, t)) for t in out.split())


def test_the_compile_time_only_files_are_those_with_nothing_but_declarations():
    # a C file said to have no code to run defines no function: it has no brace at all
    compiled = [c for c, t in ws.COVERS.items() if t == ws.COMPILED]
    assert compiled == ["csrc/launch/nvrtc_abi_check.c", "csrc/nccl/nccl_abi_check.c"]
    for c in compiled:
        assert "{" not in open(os.path.join(ROOT, c), encoding="utf-8").read(), c
