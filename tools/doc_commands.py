"""Run every command README.md, the documentation and the notebooks give, as a newcomer would.

    python3 tools/doc_commands.py [--logs DIR] [--page PAGE ...] [--list]

Each page is run in a fresh copy of this checkout (what a fresh clone of it holds: the files
git tracks and the untracked ones it does not ignore) and a fresh virtual environment, with
nothing of this process's environment that a newcomer would not have (no active venv,
PYTHONPATH, GPUHOST_*, NUMBA_* or FAKECUDA_* variables), in the order the page gives its
commands: README.md first, then the site's pages in the order of its tables of contents,
then the notebooks. The commands of one page run one after another in its clone, so that
`. .venv/bin/activate` or `cd` in one block holds for the next (exported variables and the
current folder carry over; shell variables and functions do not).

What is run:
- README.md: every fenced code block, in order. Blocks without a language (or bash, sh,
  shell, console) are shell commands; Python blocks are programs, run with python3 in the
  clone's root, except where gpuhost imports there and finds no usable GPU
  (`gpuhost.is_available()` is False): they are then listed as needing one
  (tests/test_doc_commands.py runs them on the GPU machine).
- docs/**/*.md: the shell blocks (Python blocks there are explanations, run by the tests of
  what they show, not here).
- examples/*.ipynb: the `pip install` commands the markdown cells give in inline code, and
  the `%pip` / `!` lines of code cells.

A fenced block right after `<!-- doc-commands: skip (REASON) -->` (blank lines between are
allowed) is not run; the reason is printed. A block identical to an earlier one, which runs
in its own page's fresh clone and environment (README's test command, the docs build), is
not run again; the report names the block whose outcome stands for it. A block whose test
command is the whole suite again (`python3 -m pytest` with options only, after a first such
block: README's test command, then docs/development's) runs, but with PYTEST_ADDOPTS naming
the test files of tools/wheel_subset.py's subset (each C file of csrc/ run by one of them),
so that the page's install and command are shown to work without the suite's second whole
run; the report says so and names the block that ran the whole suite.

pip's own cache (~/.cache/pip) is shared, so a package is downloaded once per run; --jobs N
runs N pages at a time. Exits 1 if any command failed, after running every page; --logs DIR
keeps each block's output as DIR/<page>-<block>.log. Needs git (to list the checkout's files) and network access to the
package index.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHELL_LANGUAGES = ("", "bash", "sh", "shell", "console")
SKIP = re.compile(r"^\s*<!--\s*doc-commands:\s*skip\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([^\s`]*)[^\n`]*$")
# variables a newcomer's shell would not have
FOREIGN_ENV = re.compile(r"^(GPUHOST_|NUMBA_|FAKECUDA_|PYTHON|PIP_REQUIRE_VIRTUALENV$|"
                         r"VIRTUAL_ENV|CONDA_|__PYVENV)")
PIP_INLINE = re.compile(r"`((?:python3? -m )?pip install [^`]+)`")
# the whole test suite: pytest with options only (-n auto, -q, -x ...), no test file named
WHOLE_SUITE = re.compile(r"(?:^|&&|;)\s*python3? -m pytest((?:\s+-[-\w]+(?:[ =](?:auto|\d+))?)*)"
                         r"\s*$", re.M)


class Block:
    """One command block of a page."""

    def __init__(self, page, number, kind, text, line, skip=None):
        self.page, self.number, self.kind, self.text = page, number, kind, text
        self.line, self.skip = line, skip

    @property
    def name(self):
        return "%s block %d (line %d)" % (self.page, self.number, self.line)

    def __repr__(self):
        return "<Block %s %s%s>" % (self.name, self.kind,
                                    " skip: %s" % self.skip if self.skip else "")


class PageError(ValueError):
    """A page's commands cannot be read: an unclosed fence, a skip marker with no reason."""


def _closes(line, mark):
    """Whether `line` closes a fence opened with `mark` (``` or ~~~, three or more)."""
    fence = line.strip()
    return len(fence) >= len(mark) and fence == mark[0] * len(fence)


def markdown_blocks(page, text, python=True):
    """The command blocks of a Markdown page, in order: ("shell" | "python", text)."""
    blocks, lines = [], text.splitlines()
    i, pending_skip = 0, None
    while i < len(lines):
        line = lines[i]
        marker = SKIP.search(line)
        if marker:
            reason = marker.group(1).strip()
            if not (reason.startswith("(") and reason.endswith(")") and reason[1:-1].strip()):
                raise PageError("%s line %d: a skip marker must give its reason in "
                                "parentheses: <!-- doc-commands: skip (why) -->"
                                % (page, i + 1))
            pending_skip = (reason[1:-1].strip(), i + 1)
            i += 1
            continue
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and pending_skip:
                raise PageError("%s line %d: the skip marker is not followed by a code block"
                                % (page, pending_skip[1]))
            i += 1
            continue
        mark, language = fence.group(1), fence.group(2).lower()
        end = i + 1
        while end < len(lines) and not _closes(lines[end], mark):
            end += 1
        if end >= len(lines):
            raise PageError("%s line %d: a code block is never closed" % (page, i + 1))
        body = "\n".join(lines[i + 1:end]) + "\n"
        kind = ("shell" if language in SHELL_LANGUAGES
                else "python" if language in ("python", "py") and python else None)
        if kind:
            blocks.append(Block(page, len(blocks) + 1, kind, body, i + 1,
                                pending_skip[0] if pending_skip else None))
        elif pending_skip:
            raise PageError("%s line %d: the skip marker is not followed by a shell or Python "
                            "block" % (page, pending_skip[1]))
        pending_skip = None
        i = end + 1
    if pending_skip:
        raise PageError("%s line %d: the skip marker is not followed by a code block"
                        % (page, pending_skip[1]))
    return blocks


def notebook_blocks(page, text):
    """The install commands a notebook gives: inline `pip install` in its markdown cells,
    `%pip` and `!` lines in its code cells."""
    blocks = []
    for number, cell in enumerate(json.loads(text)["cells"], 1):
        source = "".join(cell.get("source", []))
        commands = []
        if cell.get("cell_type") == "markdown":
            commands = [m.group(1) for m in PIP_INLINE.finditer(source)]
        elif cell.get("cell_type") == "code":
            for line in source.splitlines():
                if line.startswith("%pip "):
                    commands.append("python3 -m pip " + line[5:])
                elif line.startswith("!"):
                    commands.append(line[1:])
        for command in commands:
            if command.startswith("pip "):
                command = "python3 -m " + command
            blocks.append(Block(page, len(blocks) + 1, "shell", command + "\n", number))
    return blocks


def site_pages(root=ROOT):
    """docs/'s Markdown pages in the site's reading order (its tables of contents, depth
    first), then any page no table of contents names."""
    docs = os.path.join(root, "docs")
    order, seen = [], set()

    def visit(rel):
        if rel in seen:
            return
        seen.add(rel)
        path = os.path.join(docs, rel + ".md")
        if not os.path.exists(path):
            return
        order.append(rel + ".md")
        text = open(path, encoding="utf-8").read()
        for toc in re.finditer(r"```\{toctree\}\n(.*?)```", text, re.S):
            for entry in toc.group(1).splitlines():
                entry = entry.strip()
                if entry and not entry.startswith(":"):
                    visit(os.path.normpath(os.path.join(os.path.dirname(rel), entry)))

    visit("index")
    rest = []
    for folder, dirs, files in os.walk(docs):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), docs)
            if name.endswith(".md") and rel not in order:
                rest.append(rel)
    return [os.path.join("docs", p) for p in order + rest]


def pages(root=ROOT):
    """[(page, [Block])] of README, the site and the notebooks, in the order they run."""
    out = [("README.md", markdown_blocks(
        "README.md", open(os.path.join(root, "README.md"), encoding="utf-8").read()))]
    for page in site_pages(root):
        text = open(os.path.join(root, page), encoding="utf-8").read()
        out.append((page, markdown_blocks(page, text, python=False)))
    examples = os.path.join(root, "examples")
    for name in sorted(os.listdir(examples)):
        if name.endswith(".ipynb"):
            page = os.path.join("examples", name)
            text = open(os.path.join(root, page), encoding="utf-8").read()
            out.append((page, notebook_blocks(page, text)))
    return [(page, blocks) for page, blocks in out if blocks]


# ---- running -------------------------------------------------------------------------------

def fresh_copy(root, dest):
    """The files a fresh clone of `root` would hold (tracked, and untracked but not ignored),
    copied into `dest`."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=root, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = os.path.join(root, name)
        if not os.path.lexists(src):
            continue  # deleted in the work tree
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), target)
        else:
            shutil.copy2(src, target)


def newcomer_env(python):
    """This process's environment as a newcomer's shell would have it, with `python` first
    on PATH as python3 (the venv the page starts in is made from it)."""
    env = {k: v for k, v in os.environ.items() if not FOREIGN_ENV.match(k)}
    active = os.environ.get("VIRTUAL_ENV")
    parts = [p for p in env.get("PATH", "").split(os.pathsep)
             if p and not (active and os.path.abspath(p).startswith(os.path.abspath(active)))]
    env["PATH"] = os.pathsep.join(parts)
    return env


def run_shell(block, cwd, env, log):
    """Run a shell block with `env` in `cwd`; return (status, env after, cwd after)."""
    state = tempfile.mkdtemp(prefix="doc_commands.")
    try:
        script = ("set -eo pipefail\n" + block.text
                  + "\nexport -p > %s/env\npwd > %s/pwd\n" % (state, state))
        with open(log, "w") as out:
            status = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdout=out,
                                    stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL).returncode
        if status != 0:
            return status, env, cwd
        dump = subprocess.run(["bash", "-c", "set -a; source %s/env; env -0" % state],
                              cwd=cwd, capture_output=True, env={}).stdout.decode()
        after = dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)
        for key in ("PWD", "OLDPWD", "SHLVL", "_"):
            after.pop(key, None)
        with open(os.path.join(state, "pwd")) as f:
            return 0, after, f.read().strip()
    finally:
        shutil.rmtree(state, ignore_errors=True)


def gpu_missing(cwd, env):
    """Whether the page's environment has gpuhost and no usable GPU (where gpuhost does not
    import, a Python block runs, and fails as it would for a reader)."""
    probe = subprocess.run(["python3", "-c", "import gpuhost; print(gpuhost.is_available())"],
                           cwd=cwd, env=env, capture_output=True, text=True)
    return probe.returncode == 0 and probe.stdout.strip() == "False"


def repeats(found):
    """{block: the earlier block, in run order, that it repeats word for word}: such a block
    is not run again (the test command, the docs build)."""
    first, out = {}, {}
    for _, blocks in found:
        for block in blocks:
            if not block.skip:
                out.update({block: first[block.text]} if block.text in first else {})
                first.setdefault(block.text, block)
    return out


def suite_repeats(found, repeated=()):
    """{block: the earlier block, in run order, that ran the whole suite}: such a block runs
    on the subset (tools/wheel_subset.py) in place of the whole suite again."""
    first, out = None, {}
    for _, blocks in found:
        for block in blocks:
            if block.skip or block in repeated or block.kind != "shell" \
                    or not WHOLE_SUITE.search(block.text):
                continue
            if first is None:
                first = block
            else:
                out[block] = first
    return out


def subset():
    """The test files of tools/wheel_subset.py's subset, relative to the checkout's root."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import wheel_subset
    return wheel_subset.SUBSET


def run_page(page, blocks, python, logs, repeated, emit, root=ROOT, with_pip=True,
             on_subset=None):
    """Run one page's blocks in a fresh copy and venv, calling emit(text) with what it does
    and emit(None, (block, outcome, seconds)) as each block is done; after a failure the
    page's later blocks are not run. The blocks of `on_subset` ({block: the block that ran the
    whole suite}) run with PYTEST_ADDOPTS naming the subset's test files."""
    on_subset = on_subset or {}
    work = tempfile.mkdtemp(prefix="doc_commands.")
    try:
        clone = os.path.join(work, "clone")
        os.makedirs(clone)
        fresh_copy(root, clone)
        env = newcomer_env(python)
        venv = os.path.join(work, "venv")
        subprocess.run([python, "-m", "venv", venv] + ([] if with_pip else ["--without-pip"]),
                       check=True, env=env)
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env["PATH"]
        cwd = clone
        for block in blocks:
            started = time.time()
            log = os.path.join(logs, "%s-%d.log" % (page.replace(os.sep, "_"), block.number))
            if block.skip:
                emit(None, (block, "skipped: %s" % block.skip, 0.0))
                continue
            if block in repeated:
                emit(None, (block, "not run again: the same block as %s, whose outcome is "
                                   "reported there" % repeated[block].name, 0.0))
                continue
            emit("  %s:\n%s" % (block.name, "".join("    " + line + "\n"
                                                     for line in block.text.splitlines())))
            if block.kind == "python":  # a program, run from the clone's root
                if gpu_missing(clone, env):
                    emit(None, (block, "needs a GPU: not run here (no usable device); "
                                       "tests/test_doc_commands.py runs it on a GPU", 0.0))
                    continue
                program = os.path.join(work, "block-%d.py" % block.number)
                with open(program, "w") as f:
                    f.write(block.text)
                with open(log, "w") as out:
                    status = subprocess.run(["python3", program], cwd=clone, env=env,
                                            stdout=out, stderr=subprocess.STDOUT).returncode
            elif block in on_subset:
                tests = subset()
                emit("    (its test command on the subset, PYTEST_ADDOPTS=%s)\n"
                     % " ".join(tests))
                status, env, cwd = run_shell(block, cwd, dict(env, PYTEST_ADDOPTS=" ".join(
                    tests)), log)
                env.pop("PYTEST_ADDOPTS", None)  # for this block alone
            else:
                status, env, cwd = run_shell(block, cwd, env, log)
            seconds = time.time() - started
            if status == 0 and block in on_subset:
                emit(None, (block, "passed on the subset of tools/wheel_subset.py (%d test "
                                   "files, each C file of csrc/ run): the same test command "
                                   "as %s, where the whole suite runs"
                            % (len(subset()), on_subset[block].name), seconds))
            elif status == 0:
                emit(None, (block, "passed", seconds))
            else:
                with open(log) as f:
                    tail = f.read()[-4000:]
                emit(None, (block, "FAILED with status %d; its output ends:\n%s"
                            % (status, tail), seconds))
                return  # what follows on the page depends on it
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the Python the fresh environments are made from (default: this "
                        "one's base)")
    parser.add_argument("--logs", help="keep each block's output in this folder")
    parser.add_argument("--page", action="append", default=[],
                        help="run only this page (a path from the checkout's root); repeatable")
    parser.add_argument("--list", action="store_true",
                        help="list the blocks that would run, and run nothing")
    parser.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=1,
                        help="run this many pages at a time (default 1); each page's report "
                        "is then printed when it ends")
    parser.add_argument("--without-pip", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    try:
        found = everything = pages(args.root)
    except (PageError, OSError, ValueError) as e:
        print("doc_commands: %s" % e, file=sys.stderr)
        return 2
    if args.page:
        unknown = sorted(set(args.page) - {p for p, _ in found})
        if unknown:
            parser.error("no commands on %s (pages with commands: %s)"
                         % (", ".join(unknown), ", ".join(p for p, _ in found)))
        found = [(p, b) for p, b in found if p in args.page]
    if args.list:
        for page, blocks in found:
            for block in blocks:
                print("%s [%s]%s\n%s" % (block.name, block.kind,
                                         " skip: " + block.skip if block.skip else "",
                                         block.text))
        return 0
    logs = args.logs or tempfile.mkdtemp(prefix="doc_commands-logs.")
    os.makedirs(logs, exist_ok=True)
    repeated, failed, total = repeats(found), [], time.time()
    # the first whole-suite block of all the pages, even where --page leaves its page out
    on_subset = suite_repeats(everything, repeats(everything))
    lock = threading.Lock()

    def one(page, blocks):
        """Run a page; with one job its report is printed as it goes, else when it ends."""
        started, lines = time.time(), []

        def emit(text, result=None):
            if result:
                block, outcome, seconds = result
                text = "  %s: %s%s\n" % (block.name, outcome,
                                         " (%.0f s)" % seconds if seconds else "")
                if outcome.startswith("FAILED"):
                    with lock:
                        failed.append(block.name)
            if args.jobs == 1:
                print(text, end="", flush=True)
            else:
                lines.append(text)

        emit("== %s: %d blocks, in a fresh copy and venv\n" % (page, len(blocks)))
        run_page(page, blocks, args.python, logs, repeated, emit, args.root,
                 not args.without_pip, on_subset)
        emit("== %s: %.0f s\n" % (page, time.time() - started))
        if lines:
            with lock:
                print("".join(lines), end="", flush=True)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for future in [pool.submit(one, page, blocks) for page, blocks in found]:
            future.result()
    print("\n%d pages, %.0f s%s" % (len(found), time.time() - total,
                                     "; logs in %s" % logs if args.logs else ""))
    if not args.logs:
        shutil.rmtree(logs, ignore_errors=True)
    for name in sorted(failed):
        print("FAILED", name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
