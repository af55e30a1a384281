"""Every row of ANCHORS.md in one run: gpuhost next to raw C, cuda.core, CuPy, numba-cuda
and PyTorch, with ratios to raw C and to the best peer, as a table, JSON and a PNG chart.

Each area (launch, jit launch, other libraries' arrays as arguments, graphs, streams and
events, transfers, allocation, compile, cold start, import time) runs in its own process,
interleaving the libraries repetition by repetition as _harness.interleaved does (cold
start: fresh processes, sample by sample); this script collects them.  With --repeat N the
whole table is measured N times: each figure is the median of the N runs, each ratio to raw
C is given as its median with its spread (lowest-highest), and a row is met only if it met
its goal in every run.  On the GPU machine:
    python3 benchmarks/all.py --repeat 5 --json out.json --png out.png
"""
import statistics
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
AREAS = ["launch", "jit_launch", "foreign_launch", "graphs", "streams_events", "transfers",
         "pools", "compile", "coldstart"]
LIBS = ["raw C", "gpuhost", "cuda.core", "CuPy", "numba-cuda", "numba-cuda-mlir", "PyTorch"]
PEERS = ["cuda.core", "CuPy", "numba-cuda", "numba-cuda-mlir", "PyTorch"]


FAILED = []  # the areas whose script failed: the run then exits 1, after what it has


def higher_is_better(op):
    return "GB/s" in op


def run_area(name, out_dir):
    """{operation: record} from benchmarks/<name>.py, or {} (said why) if it failed."""
    script = os.path.join(HERE, name + ".py")
    if not os.path.exists(script):
        return {}
    path = os.path.join(out_dir, name + ".json")
    proc = subprocess.run([sys.executable, script, "--json", path], capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0 or not os.path.exists(path):
        print("%s failed (exit %d):\n%s" % (name, proc.returncode, proc.stderr[-3000:]))
        FAILED.append(name)
        return {}
    with open(path) as f:
        return json.load(f)


GPU_PROBE = "import gpuhost; print(gpuhost.cuda_error() or '')"


def no_gpu_reason():
    """Why the area scripts cannot measure here (gpuhost does not import, or finds no
    usable GPU), asked as they would ask it; None where they can."""
    proc = subprocess.run([sys.executable, "-c", GPU_PROBE], capture_output=True, text=True,
                          cwd=HERE)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return "gpuhost does not import with %s (%s)" % (sys.executable, last)
    return proc.stdout.strip() or None


def import_row(out_dir):
    """import_time.py's result as a row: ms beyond numpy, goal <= 25 ms."""
    path = os.path.join(out_dir, "import_time.json")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "import_time.py"), "--json", path],
                          capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0 or not os.path.exists(path):
        print("import_time failed:\n%s" % proc.stderr[-2000:])
        FAILED.append("import_time")
        return {}
    with open(path) as f:
        data = json.load(f)
    names = {"gpuhost": "gpuhost", "cupy": "CuPy", "numba-cuda": "numba-cuda",
             "cuda.core": "cuda.core"}
    figures = {}
    for module, lib in names.items():
        entry = data.get(module)
        if isinstance(entry, dict) and "beyond_numpy_ms" in entry:
            figures[lib] = entry["beyond_numpy_ms"]
    ours = figures.get("gpuhost")
    return {"import, ms beyond numpy": dict(figures, goal="<= 25 ms",
                                            met=None if ours is None else ours <= 25)}


def best_peer(op, record):
    values = [record[p] for p in PEERS if isinstance(record.get(p), (int, float))]
    if not values:
        return None
    return max(values) if higher_is_better(op) else min(values)


def ratio(op, ours, other):
    """How many times better than `other` gpuhost is (>1: better), for either kind of row."""
    if not ours or not other:
        return None
    return ours / other if higher_is_better(op) else other / ours


def combine(runs):
    """One table from N runs' tables: per library the median figure; per row the ratio to
    raw C of each run (median and spread), and met only if met in every run."""
    rows = {}
    for run in runs:
        for op in run:
            rows.setdefault(op, None)
    for op in rows:
        recs = [run[op] for run in runs if op in run]
        rec = {"goal": recs[0].get("goal", "-")}
        for lib in LIBS:
            values = [r[lib] for r in recs if isinstance(r.get(lib), (int, float))]
            if values:
                rec[lib] = statistics.median(values)
        ratios = [ratio(op, r.get("gpuhost"), r.get("raw C")) for r in recs]
        ratios = [x for x in ratios if x]
        if ratios:
            rec["vs_raw_runs"] = ratios
        mets = [r.get("met") for r in recs]
        rec["met_runs"] = "%d/%d" % (sum(m is True for m in mets), len(mets))
        rec["met"] = (None if all(m is None for m in mets)
                      else all(m is True for m in mets))
        rows[op] = rec
    return rows


def vs_raw_text(op, rec, fmt="%.2fx"):
    """The ratio to raw C: one run's, or the median of several with its spread."""
    runs = rec.get("vs_raw_runs")
    if runs and len(runs) > 1:
        return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(runs), min(runs),
                                                       max(runs))
    raw = ratio(op, rec.get("gpuhost"), rec.get("raw C"))
    return fmt % raw if raw else "-"


def met_text(rec, yes="met", no="NOT met"):
    text = {True: yes, False: no, None: "-"}[rec.get("met")]
    if rec.get("met") is not None and "met_runs" in rec and not rec["met_runs"].endswith("/1"):
        text += " (%s)" % rec["met_runs"]
    return text


def print_table(rows):
    head = "%-30s" % "operation" + "".join("%11s" % l for l in LIBS)
    print("\n" + head + "  %-22s %9s  %-24s %s" % ("vs raw", "vs peer", "goal", "met"))
    for op, rec in rows.items():
        cells = "".join("%11s" % ("%.3f" % rec[l] if isinstance(rec.get(l), (int, float))
                                  else "-") for l in LIBS)
        peer = ratio(op, rec.get("gpuhost"), best_peer(op, rec))
        print("%-30s%s  %-22s %9s  %-24s %s" % (op, cells, vs_raw_text(op, rec),
                                                 "%.2fx" % peer if peer else "-",
                                                 rec.get("goal", "-"), met_text(rec)))
    print("\n(vs raw / vs peer: how many times faster gpuhost is than raw C / the best peer;"
          " below 1 is slower)")


def markdown(rows, machine, when, repeat=1):
    lines = ["Measured %s on %s (`python3 benchmarks/all.py --repeat %d`; figures are "
             "medians of the runs, vs raw C the median ratio (lowest-highest), met only if "
             "met in every run):" % (when, machine, repeat), "",
             "| operation | " + " | ".join(LIBS) + " | vs raw C | vs best peer | goal | met |",
             "|---" * (len(LIBS) + 5) + "|"]
    for op, rec in rows.items():
        cells = ["%.3g" % rec[l] if isinstance(rec.get(l), (int, float)) else "-" for l in LIBS]
        peer = ratio(op, rec.get("gpuhost"), best_peer(op, rec))
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            op, " | ".join(cells), vs_raw_text(op, rec, "%.2f×"),
            "%.2f×" % peer if peer else "-", rec.get("goal", "-"),
            met_text(rec, "met", "**not met**")))
    return "\n".join(lines)


def chart(rows, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [op for op, rec in rows.items() if isinstance(rec.get("raw C"), (int, float))]
    libs = [l for l in LIBS[1:] if any(isinstance(rows[o].get(l), (int, float)) for o in ops)]
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(ops) * len(libs) / 2 + 2))
    height = 0.8 / max(1, len(libs))
    for k, lib in enumerate(libs):
        speed = [ratio(op, rows[op].get(lib), rows[op]["raw C"]) or 0 for op in ops]
        ax.barh([i + k * height for i in range(len(ops))], speed, height, label=lib)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(ops))])
    ax.set_yticklabels(ops)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("speed relative to raw C (right of 1: faster)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def machine_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().splitlines()
        return out[0] + " (driver)" if out else "unknown GPU"
    except OSError:
        return "no GPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--png")
    parser.add_argument("--markdown", help="write the table as Markdown (for README)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure the whole table this many times (default 1)")
    parser.add_argument("--areas", help="comma-separated areas to run (default: all of %s)"
                        % ", ".join(AREAS))
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    areas = AREAS if not args.areas else args.areas.split(",")
    unknown = sorted(set(areas) - set(AREAS))
    if unknown:
        parser.error("unknown areas: %s" % ", ".join(unknown))
    reason = no_gpu_reason()
    if reason is not None:
        sys.exit("benchmarks/all.py measures on a GPU, and there is none it can use here: %s.\n"
                 "Run it on a machine with an NVIDIA GPU and gpuhost installed "
                 "(python3 -m pip install .); python3 -m gpuhost says what gpuhost finds."
                 % reason.rstrip("."))
    runs = []
    for i in range(args.repeat):
        if args.repeat > 1:
            print("\n===== run %d of %d" % (i + 1, args.repeat))
        run = {}
        with tempfile.TemporaryDirectory() as out_dir:
            for area in areas:
                run.update(run_area(area, out_dir))
            if not args.areas:
                run.update(import_row(out_dir))
        runs.append(run)
    rows = combine(runs)
    if args.repeat > 1:
        print("\n===== %d runs combined" % args.repeat)
    print_table(rows)
    when, machine = datetime.date.today().isoformat(), machine_name()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": when, "machine": machine, "repeat": args.repeat, "rows": rows,
                       "runs": runs}, f, indent=2)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(rows, machine, when, args.repeat) + "\n")
    if args.png:
        try:
            chart(rows, args.png, "gpuhost and peers, %s, %s" % (machine, when))
        except ImportError as e:
            print("no chart: %s" % e)
    if FAILED:
        print("\nfailed, so missing from the table: %s" % ", ".join(FAILED))
        sys.exit(1)


if __name__ == "__main__":
    main()
