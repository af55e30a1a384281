"""Execute the example notebooks in place, or check that their stored outputs are current.

    python3 tools/run_notebooks.py [NOTEBOOK ...]           # execute (GPU machine), store outputs
    python3 tools/run_notebooks.py --check [NOTEBOOK ...]   # CI: fail if any output is stale
    python3 tools/run_notebooks.py --fake [NOTEBOOK ...]    # CI without a GPU: cells must run

The notebooks (examples/*.ipynb by default) are rendered in the documentation with the
outputs stored in them; Sphinx never executes them. Executing one runs it top to bottom
with nbclient in a kernel of this Python (the checkout's gpuhost first on the path), stores
the outputs, and records in each code cell's metadata the SHA-256 of the source that made
them (``metadata.gpuhost.source_sha256``). ``--check`` fails when a code cell has no
outputs recorded that way or its source changed since: run this script again on a GPU.

``--fake`` is for machines without a GPU: it executes the notebooks that need no kernel
against the fake driver (tests/fakecuda, built into a temporary directory; its fake NCCL
too), each a temporary copy run in a temporary directory, and fails if a cell raises. The
stored notebooks are never written. A notebook whose top-level metadata has
``"gpuhost": {"needs_kernels": true}`` (one that launches kernels) is skipped.

Needs nbclient, nbformat and ipykernel. A cell that raises stops the run, and the notebook
is not written.
"""
import argparse
import glob
import hashlib
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "gpuhost"


def source_hash(cell):
    return hashlib.sha256(cell.source.encode()).hexdigest()


def execute(path, timeout):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + env_path if env_path else "")
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": ROOT}})
    client.execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata.setdefault(KEY, {})["source_sha256"] = source_hash(cell)
    nbformat.write(nb, path)
    print("%s: executed, %d code cells" % (os.path.relpath(path, ROOT),
                                          sum(c.cell_type == "code" for c in nb.cells)))


def needs_kernels(nb):
    """Whether the notebook's metadata marks it as launching kernels (no fake run)."""
    return bool(nb.metadata.get(KEY, {}).get("needs_kernels", False))


def use_fake_driver(build_dir):
    """Build tests/fakecuda into build_dir and point this process's environment (which the
    kernels inherit) at it: the fake driver, its NCCL, two fake devices."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "fakecuda"))
    try:
        import build as fakecuda_build
    finally:
        sys.path.pop(0)
    os.environ["GPUHOST_CUDA_DRIVER"] = fakecuda_build.build(build_dir)
    os.environ["GPUHOST_NCCL"] = fakecuda_build.nccl_path(build_dir)
    os.environ.setdefault("FAKECUDA_DEVICES", "2")
    os.environ["GPUHOST_TEST_DRIVER"] = "fake"


def execute_fake(path, timeout, work_dir):
    """Run a temporary copy of one notebook in work_dir; True if every cell ran."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    name = os.path.relpath(os.path.abspath(path), ROOT)
    nb = nbformat.read(path, as_version=4)
    if needs_kernels(nb):
        print("%s: skipped (metadata.%s.needs_kernels)" % (name, KEY))
        return True
    run_dir = tempfile.mkdtemp(prefix="nb-", dir=work_dir)
    copy = os.path.join(run_dir, os.path.basename(path))
    shutil.copyfile(path, copy)
    nb = nbformat.read(copy, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": run_dir}})
    try:
        client.execute()
    except CellExecutionError as e:
        print("%s: FAILED on the fake driver\n%s" % (name, e))
        return False
    print("%s: ran on the fake driver, %d code cells" % (
        name, sum(c.cell_type == "code" for c in nb.cells)))
    return True


def run_fake(paths, timeout):
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + env_path if env_path else "")
    with tempfile.TemporaryDirectory(prefix="gpuhost-notebooks-") as work_dir:
        os.environ["GPUHOST_CACHE_DIR"] = os.path.join(work_dir, "cache")
        use_fake_driver(os.path.join(work_dir, "fakecuda"))
        failed = sum(not execute_fake(path, timeout, work_dir) for path in paths)
    return 1 if failed else 0


def stale_cells(path):
    """The problems of one notebook's stored outputs, one line each (none: current)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        stored = cell.metadata.get(KEY, {}).get("source_sha256")
        first = cell.source.strip().splitlines()[0][:50] if cell.source.strip() else ""
        if stored is None or cell.execution_count is None:
            problems.append("cell %d (%s): never executed by tools/run_notebooks.py" % (i, first))
        elif stored != source_hash(cell):
            problems.append("cell %d (%s): source changed since its outputs were stored"
                            % (i, first))
        elif any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            problems.append("cell %d (%s): its stored output is an error" % (i, first))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*")
    parser.add_argument("--check", action="store_true",
                        help="only check that the stored outputs match the sources")
    parser.add_argument("--fake", action="store_true",
                        help="execute temporary copies of the notebooks that need no kernel "
                        "on the fake driver (no GPU); fail if a cell raises")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(glob.glob(os.path.join(ROOT, "examples", "*.ipynb")))
    if not paths:
        parser.error("no notebooks found")
    if args.check and args.fake:
        parser.error("--check and --fake are exclusive")
    if args.fake:
        return run_fake(paths, args.timeout)
    if not args.check:
        for path in paths:
            execute(path, args.timeout)
        return 0
    failed = 0
    for path in paths:
        problems = stale_cells(path)
        name = os.path.relpath(os.path.abspath(path), ROOT)
        print("%s: %s" % (name, "outputs current" if not problems else "STALE"))
        for line in problems:
            print("  " + line)
        failed += bool(problems)
    if failed:
        print("run python3 tools/run_notebooks.py on a GPU machine and commit the notebooks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
