"""Two builds of gpuhost side by side: the same areas of all.py measured for a baseline tree
and for this one, alternately (A, B, A, B, ...), so that both see the same machine state.
Each row shows gpuhost's best figure of the rounds in each build (the least time, the most
throughput: what the code can do, with the machine's disturbances left out), the slowdown
this / baseline (above 1: slower), and both builds' ratio to raw C, each run's ratio to
the raw C measured in that same run, best of the rounds.

    python3 benchmarks/compare.py BASELINE_TREE [--rounds 2] [--areas launch,...] [--json F]

BASELINE_TREE is a checkout (e.g. `git archive <rev> | tar -x -C .final`) already built in
place (python3 setup.py build_ext --inplace). Run on the GPU machine.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from all import higher_is_better  # noqa: E402


def run_all(tree, areas, out):
    """all.py of `tree`, run in `tree` (so it imports that build): its rows."""
    cmd = [sys.executable, os.path.join(tree, "benchmarks", "all.py"), "--json", out]
    if areas:
        cmd += ["--areas", areas]
    env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(out):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit("all.py failed in %s" % tree)
    with open(out) as f:
        return json.load(f)["rows"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--areas")
    parser.add_argument("--json")
    args = parser.parse_args()
    trees = {"baseline": os.path.abspath(args.baseline), "this": os.path.dirname(HERE)}
    runs = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, tree in trees.items():
                print("round %d: %s" % (r + 1, name), flush=True)
                runs[name].append(run_all(tree, args.areas, os.path.join(tmp, "%s%d.json" % (name, r))))
    ops = [op for op in runs["this"][0] if op in runs["baseline"][0]]
    table = []
    print("\n%-44s %12s %12s %10s %14s %10s" % ("row", "baseline", "this", "slowdown",
                                                "vs raw C b/t", "verdict"))
    for op in ops:
        fig = {n: [run[op]["gpuhost"] for run in runs[n] if isinstance(run[op].get("gpuhost"),
                                                                          (int, float))]
               for n in trees}
        raw = {n: [run[op]["raw C"] for run in runs[n] if isinstance(run[op].get("raw C"),
                                                                        (int, float))]
               for n in trees}
        if not fig["this"] or not fig["baseline"]:
            continue
        best = max if higher_is_better(op) else min
        b, t = best(fig["baseline"]), best(fig["this"])
        slower = (t / b) if not higher_is_better(op) else (b / t)
        vs_raw = "-"
        if len(raw["this"]) == len(fig["this"]) and len(raw["baseline"]) == len(fig["baseline"]):
            f = (lambda o, r: r / o) if higher_is_better(op) else (lambda o, r: o / r)
            vs_raw = "%.2f/%.2f" % tuple(min(f(o, r) for o, r in zip(fig[n], raw[n]))
                                         for n in ("baseline", "this"))
        verdict = "slower" if slower > 1.05 else ("faster" if slower < 0.95 else "same")
        table.append({"row": op, "baseline": b, "this": t, "this_over_baseline": slower,
                      "vs_raw": vs_raw, "verdict": verdict})
        print("%-44s %12.4g %12.4g %10.3f %14s %10s" % (op[:44], b, t, slower, vs_raw, verdict))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": args.rounds, "rows": table, "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
