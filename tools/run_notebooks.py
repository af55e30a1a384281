"""Execute the example notebooks in place, or check that their stored outputs are current.

    python3 tools/run_notebooks.py [NOTEBOOK ...]           # execute (GPU machine), store outputs
    python3 tools/run_notebooks.py --check [NOTEBOOK ...]   # CI: fail if any output is stale

The notebooks (examples/*.ipynb by default) are rendered in the documentation with the
outputs stored in them; Sphinx never executes them. Executing one runs it top to bottom
with nbclient in a kernel of this Python (the checkout's gpuhost first on the path), stores
the outputs, and records in each code cell's metadata the SHA-256 of the source that made
them (``metadata.gpuhost.source_sha256``). ``--check`` fails when a code cell has no
outputs recorded that way or its source changed since: run this script again on a GPU.

Needs nbclient, nbformat and ipykernel. A cell that raises stops the run, and the notebook
is not written.
"""
import argparse
import glob
import hashlib
import os
import sys

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
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(glob.glob(os.path.join(ROOT, "examples", "*.ipynb")))
    if not paths:
        parser.error("no notebooks found")
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
