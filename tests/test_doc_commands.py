"""tools/doc_commands.py, which runs every command of README, the docs and the notebooks in a
fresh copy of the checkout and a fresh venv (CI runs it on the real pages): how it reads the
pages, how it runs a page, what it refuses; the pages' commands in an order that can work;
and README's programs on a GPU."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import REAL_GPU

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import doc_commands as dc  # noqa: E402


def _blocks(text, python=True):
    return [(b.kind, b.text, b.skip) for b in dc.markdown_blocks("page.md", text, python)]


def test_shell_and_python_blocks_are_read_in_order_and_the_rest_left_alone():
    text = textwrap.dedent("""\
        Some prose with `python3 -m pip install x` inline (not a block).

        ```
        echo one
        ```

        ```bash
        echo two \\
            continued
        ```

        ```python
        print(3)
        ```

        ```text
        not a command
        ```

        ````{container} box
        ```{image} chart.svg
        ```
        ````

        ```console
        echo four
        ```
        """)
    assert _blocks(text) == [("shell", "echo one\n", None),
                             ("shell", "echo two \\\n    continued\n", None),
                             ("python", "print(3)\n", None),
                             ("shell", "echo four\n", None)]
    assert [k for k, _, _ in _blocks(text, python=False)] == ["shell", "shell", "shell"]


def test_a_skip_marker_keeps_its_block_with_the_reason():
    text = ("<!-- doc-commands: skip (needs two GPUs) -->\n\n```\nrun-me\n```\n"
            "Mentioning `<!-- doc-commands: skip (x) -->` in prose is no marker.\n"
            "```\nand-me\n```\n")
    assert _blocks(text) == [("shell", "run-me\n", "needs two GPUs"),
                             ("shell", "and-me\n", None)]


@pytest.mark.parametrize("text, message", [
    ("<!-- doc-commands: skip -->\n```\nx\n```\n",
     "page.md line 1: a skip marker must give its reason in parentheses: "
     "<!-- doc-commands: skip (why) -->"),
    ("<!-- doc-commands: skip ( ) -->\n```\nx\n```\n", "must give its reason in parentheses"),
    ("<!-- doc-commands: skip (why) -->\nprose\n```\nx\n```\n",
     "page.md line 1: the skip marker is not followed by a code block"),
    ("<!-- doc-commands: skip (why) -->\n", "page.md line 1: the skip marker is not followed "
     "by a code block"),
    ("<!-- doc-commands: skip (why) -->\n```text\nx\n```\n", "page.md line 1: the skip marker "
     "is not followed by a shell or Python block"),
    ("text\n```\necho never closed\n", "page.md line 2: a code block is never closed"),
])
def test_a_page_that_cannot_be_read_is_refused_saying_where(text, message):
    with pytest.raises(dc.PageError) as info:
        dc.markdown_blocks("page.md", text)
    assert message in str(info.value)


def test_a_notebooks_install_commands_are_its_inline_pip_and_its_shell_lines():
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["Needs `pip install 'x[y]'` and ",
                                             "`python3 -m pip install .`; not `pip list`."]},
        {"cell_type": "code", "source": ["%pip install z\n", "!echo hi\n", "print(1)\n"]},
    ]}
    blocks = dc.notebook_blocks("nb.ipynb", json.dumps(nb))
    assert [(b.text, b.line) for b in blocks] == [
        ("python3 -m pip install 'x[y]'\n", 1), ("python3 -m pip install .\n", 1),
        ("python3 -m pip install z\n", 2), ("echo hi\n", 2)]


def test_every_page_of_the_site_is_read_in_its_reading_order():
    order = dc.site_pages(ROOT)
    on_disk = set()
    for folder, dirs, files in os.walk(os.path.join(ROOT, "docs")):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        on_disk.update(os.path.relpath(os.path.join(folder, f), ROOT) for f in files
                       if f.endswith(".md"))
    assert sorted(order) == sorted(on_disk)
    assert order[:3] == ["docs/index.md", "docs/install.md", "docs/quickstart.md"]
    assert order.index("docs/guide/numba.md") < order.index("docs/guide/jit.md") \
        < order.index("docs/performance.md") < order.index("docs/development/index.md")
    found = dc.pages(ROOT)
    assert found[0][0] == "README.md" and found[-1][0].endswith(".ipynb")


INSTALLS = ("pip install .", "pip install '.[", "pip install dist/gpuhost_cuda")
USES = ("python3 -m gpuhost", "python3 -m pytest", "python3 -m sphinx", "python3 examples/",
        "python3 setup.py", "python3 benchmarks/", "bash tools/sanitizer_suite.sh")


def test_each_page_installs_what_its_commands_use_before_they_use_it():
    for page, blocks in dc.pages(ROOT):
        installed = False
        for block in blocks:
            for line in block.text.splitlines():
                for part in line.split("&&"):
                    if any(i in part for i in INSTALLS) or "setup.py build_ext" in part:
                        installed = True
                    elif any(u in part for u in USES) and not block.skip:
                        assert installed, "%s uses gpuhost before installing it: %s" % (
                            block.name, part.strip())


def test_no_command_installs_gpuhost_cuda_from_the_index_before_it_is_published():
    # gpuhost-cuda 0.1.0 is not on the package index: a reader copying such a command
    # fails at its first step. Once it is published, this test goes.
    for page, blocks in dc.pages(ROOT):
        for block in blocks:
            assert "install gpuhost-cuda" not in block.text, block.name
            assert "install 'gpuhost-cuda[" not in block.text, block.name


def test_readme_installs_the_jit_extra_its_first_program_needs():
    blocks = dict(dc.pages(ROOT))["README.md"]
    program = next(b for b in blocks if b.kind == "python" and "@cuda.jit" in b.text)
    before = "".join(b.text for b in blocks[:program.number - 1])
    extras = re.findall(r"pip install '\.\[([\w,]+)\]'", before)
    assert extras and "jit" in extras[0].split(",")


def test_readme_builds_gpuhost_once_for_its_program_and_its_tests():
    blocks = dict(dc.pages(ROOT))["README.md"]
    installs = [b for b in blocks if b.kind != "python" and "pip install '." in b.text
                and "[docs]" not in b.text]
    assert len(installs) == 1, [b.name for b in installs]
    assert set(re.findall(r"pip install '\.\[([\w,]+)\]'", installs[0].text)[0].split(",")) \
        >= {"jit", "test"}


# ---- a page run end to end, on a repository made for it ---------------------------------------

@pytest.fixture(scope="module")
def venv_works(tmp_path_factory):
    """The runner makes a venv per page: CI's Python 3.14, unpacked from Debian's packages
    into a folder, may have no venv module to make one with."""
    where = tmp_path_factory.mktemp("venv_probe")
    proc = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "v")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("this Python cannot make a venv: %s" % proc.stderr.strip()[-200:])


def _repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "examples").mkdir()
    (repo / "gpuhost").mkdir()
    # a stand-in gpuhost, imported from the copy's root, with no usable GPU
    (repo / "gpuhost" / "__init__.py").write_text("def is_available():\n    return False\n")
    (repo / "README.md").write_text(textwrap.dedent("""\
        # A project

        ```
        export GREETING=hello && mkdir sub && cd sub
        test -z "${GPUHOST_SECRET:-}" && test -z "${PYTHONPATH:-}"
        ```

        ```
        test "$GREETING" = hello && test "$(basename "$PWD")" = sub
        python3 -c "import sys; print(sys.prefix)" > prefix.txt
        test "$(cat prefix.txt)" = "$VIRTUAL_ENV" && test -e ../README.md
        ```

        ```python
        raise SystemExit("needs a GPU, never run here")
        ```

        <!-- doc-commands: skip (a reason) -->
        ```
        false
        ```
        """))
    (repo / "docs" / "index.md").write_text(textwrap.dedent("""\
        # Index

        ```{toctree}
        other
        ```

        ```
        test ! -e sub
        ```
        """))
    (repo / "docs" / "other.md").write_text(textwrap.dedent("""\
        # Other

        ```
        test ! -e sub
        ```

        ```
        echo "$GREETING" ; false
        ```

        ```
        echo never run
        ```
        """))
    (repo / "ignored.txt").write_text("x")
    (repo / ".gitignore").write_text("ignored.txt\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "README.md", "docs", ".gitignore"],
                   check=True)
    return repo


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_carries_state_between_blocks_and_reports_each_outcome(tmp_path, capsys,
                                                                     monkeypatch, jobs,
                                                                     venv_works):
    repo = _repo(tmp_path)
    monkeypatch.setenv("GPUHOST_SECRET", "not for newcomers")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    logs = tmp_path / "logs"
    status = dc.main(["--root", str(repo), "--logs", str(logs), "--without-pip",
                      "--jobs", jobs])
    out = capsys.readouterr().out
    assert status == 1, out
    outcomes = dict(re.findall(r"^  (\S+ block \d+ \(line \d+\)): (.*)$", out, re.M))
    assert outcomes.pop("README.md block 1 (line 3)").startswith("passed"), out
    assert outcomes.pop("README.md block 2 (line 8)").startswith("passed"), out
    assert outcomes.pop("docs/index.md block 1 (line 7)").startswith("passed"), out
    assert outcomes == {
        "README.md block 3 (line 14)": "needs a GPU: not run here (no usable device); "
                                       "tests/test_doc_commands.py runs it on a GPU",
        "README.md block 4 (line 19)": "skipped: a reason",
        "docs/other.md block 1 (line 3)": "not run again: the same block as docs/index.md "
                                          "block 1 (line 7), whose outcome is reported there",
        "docs/other.md block 2 (line 7)": "FAILED with status 1; its output ends:",
    }  # after a failure the page stops: docs/other.md's block 3 is not run
    assert (logs / "docs_other.md-2.log").read_text() == "\n"  # a fresh environment: no GREETING
    assert out.splitlines()[-1] == "FAILED docs/other.md block 2 (line 7)"
    assert sorted(os.listdir(logs)) == ["README.md-1.log", "README.md-2.log",
                                        "docs_index.md-1.log", "docs_other.md-2.log"]
    for page in ("README.md", "docs/index.md", "docs/other.md"):  # each page's report whole
        report = re.findall(r"^== %s: .*$" % re.escape(page), out, re.M)
        assert len(report) == 2 and report[1].endswith(" s")


def test_jobs_must_be_at_least_one(tmp_path, capsys):
    with pytest.raises(SystemExit):
        dc.main(["--root", str(_repo(tmp_path)), "--jobs", "0"])
    assert "--jobs must be at least 1" in capsys.readouterr().err


def test_untracked_files_are_copied_and_ignored_ones_are_not(tmp_path):
    repo = _repo(tmp_path)
    (repo / "new.md").write_text("untracked, not ignored")
    dest = tmp_path / "copy"
    dest.mkdir()
    dc.fresh_copy(str(repo), str(dest))
    assert (dest / "new.md").exists() and (dest / "README.md").exists()
    assert not (dest / "ignored.txt").exists()


def test_a_page_asked_for_that_has_no_commands_is_refused(tmp_path, capsys):
    repo = _repo(tmp_path)
    with pytest.raises(SystemExit) as info:
        dc.main(["--root", str(repo), "--page", "docs/nothing.md"])
    assert info.value.code == 2
    assert ("no commands on docs/nothing.md (pages with commands: README.md, docs/index.md, "
            "docs/other.md)") in capsys.readouterr().err


def test_listing_runs_nothing(tmp_path, capsys):
    repo = _repo(tmp_path)
    assert dc.main(["--root", str(repo), "--list"]) == 0
    out = capsys.readouterr().out
    assert "README.md block 4 (line 19) [shell] skip: a reason\nfalse\n" in out
    assert not (repo / "sub").exists()


# ---- README's programs, where they can run ----------------------------------------------------

@pytest.mark.gpu
def test_readme_programs_run_on_the_gpu(tmp_path):
    """What tools/doc_commands.py cannot run without a GPU: README's Python blocks, run as a
    reader would, from the checkout's root (the jit extra installed)."""
    pytest.importorskip("numba.cuda", reason="README's first program needs the jit extra")
    blocks = [b for b in dict(dc.pages(ROOT))["README.md"] if b.kind == "python"]
    assert blocks
    for block in blocks:
        program = tmp_path / ("block-%d.py" % block.number)
        program.write_text(block.text)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(  # the checkout as installed
            [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        proc = subprocess.run([sys.executable, str(program)], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, env=env)
        assert proc.returncode == 0, "%s\n%s%s" % (block.name, proc.stdout, proc.stderr)
    assert REAL_GPU


# ---- the extras the pages tell readers to install ---------------------------------------------

def _extras():
    """pyproject.toml's optional dependencies: {extra: [distribution names]} (read without
    tomllib, which CPython 3.10 lacks)."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    section = text.split("[project.optional-dependencies]")[1].split("\n[")[0]
    out = {}
    for name, body in re.findall(r"^(\w+) = \[(.*?)\]", section, re.M | re.S):
        out[name] = [re.split(r"[<>=!~\[ ]", req, maxsplit=1)[0].lower()
                     for req in re.findall(r'"([^"]+)"', body)]
    return out


def test_the_docs_extra_installs_what_the_site_is_built_with():
    conf = open(os.path.join(ROOT, "docs", "conf.py"), encoding="utf-8").read()
    modules = re.findall(r'^\s+"([\w.]+)",$', conf.split("extensions = [")[1].split("]")[0],
                         re.M)
    modules.append(re.search(r'^html_theme = "(\w+)"', conf, re.M).group(1))
    needed = {m.split(".")[0].replace("_", "-") for m in modules}
    # autodoc imports gpuhost.pytest_plugin, which imports pytest
    assert sorted(needed | {"pytest"}) == sorted(_extras()["docs"])


def test_the_install_page_says_what_each_extra_brings():
    page = open(os.path.join(ROOT, "docs", "install.md"), encoding="utf-8").read()
    rows = {m.group(1): m.group(2).lower() for m in
            re.finditer(r"^\| `(\w+)` \| (.*?) \|", page, re.M)}
    extras = _extras()
    assert sorted(rows) == sorted(extras)
    for extra, requirements in extras.items():
        for requirement in requirements:
            assert requirement.replace("_", "-") in rows[extra].replace("_", "-"), (extra,
                                                                                   requirement)


def test_the_whole_suite_again_runs_on_the_wheel_subset_and_says_so(tmp_path, capsys,
                                                                    venv_works):
    # README's test command runs the whole suite; a later page's same command (options
    # aside) runs with PYTEST_ADDOPTS naming the subset, for that block alone
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "examples").mkdir()
    (repo / "pytest").mkdir()  # a stand-in pytest, run from the copy's root, that says how
    (repo / "pytest" / "__main__.py").write_text(
        "import os, sys\nwith open(os.path.join(os.environ['OUT'], 'runs'), 'a') as f:\n"
        "    f.write(repr((sys.argv[1:], os.environ.get('PYTEST_ADDOPTS'))) + '\\n')\n")
    (repo / "README.md").write_text("```\nexport OUT=%s\npython3 -m pytest -n auto\n```\n"
                                    % tmp_path)
    (repo / "docs" / "index.md").write_text(
        "```\nexport OUT=%s\ntrue && python3 -m pytest\n```\n\n"
        "```\ntest -z \"${PYTEST_ADDOPTS:-}\"\npython3 -m pytest tests/test_one.py\n```\n"
        % tmp_path)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    found = dc.pages(str(repo))
    assert {b.name: first.name for b, first in dc.suite_repeats(found).items()} == {
        "docs/index.md block 1 (line 1)": "README.md block 1 (line 1)"}
    assert dc.main(["--root", str(repo), "--without-pip"]) == 0
    out = capsys.readouterr().out
    subset = " ".join(dc.subset())
    assert ("  docs/index.md block 1 (line 1): passed on the subset of tools/wheel_subset.py "
            "(%d test files, each C file of csrc/ run): the same test command as README.md "
            "block 1 (line 1), where the whole suite runs" % len(dc.subset())) in out
    assert "docs/index.md block 2 (line 6): passed" in out
    runs = (tmp_path / "runs").read_text().splitlines()
    assert runs == [repr((["-n", "auto"], None)), repr(([], subset)),
                    repr((["tests/test_one.py"], None))]
