"""Write every speed figure that README.md and the documentation show from one measurement.

    python3 tools/speed_pages.py                  # rewrite the pages from benchmarks/speed.json
    python3 tools/speed_pages.py --check          # exit 1 naming each page that differs
    python3 tools/speed_pages.py --import RUN.json  # a new measurement: all.py's --json output

benchmarks/speed.json holds one run of `benchmarks/all.py` on one machine, named in it: its
rows (operation, group, unit, each library's figure, the ratio to raw C with its spread
over the runs, the goal and in how many runs it was met) and how each row is shown:
``"headline": "label"`` puts it in the short table of README.md and docs/index.md,
``"chart": true`` in the chart, ``"label"`` renames it in the performance page's tables.
From it this script writes, between ``<!-- speed:NAME -->`` and ``<!-- /speed:NAME -->``
markers, README.md's and docs/index.md's headline tables (speed:headline) and
docs/performance.md's tables by group (speed:tables), and the chart,
docs/_static/speed.svg and, for a phone's width, speed-narrow.svg (written here, byte for
byte the same on every machine, so a test can compare them). tests/test_speed_pages.py fails when a page differs from the file.

To add a row measured in the same run, add it to "rows" (one line each; a row's figures
are per call in its unit, "µs", "ms" or "GB/s") and run this script. A new run replaces
the measurement: ``--import`` takes all.py's JSON (``all.py --repeat N --json RUN.json``
on the GPU machine), with the machine, date and rows it holds, and keeps the headline,
chart and label settings of the operations it already had.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join("benchmarks", "speed.json")
CHART = os.path.join("docs", "_static", "speed.svg")
CHART_NARROW = os.path.join("docs", "_static", "speed-narrow.svg")  # a phone's
# page -> the blocks it holds
PAGES = {"README.md": ["headline"], os.path.join("docs", "index.md"): ["headline"],
         os.path.join("docs", "performance.md"): ["tables"]}
LIBRARIES = ["raw C", "gpuhost", "cuda.core", "CuPy", "numba-cuda", "numba-cuda-mlir", "PyTorch"]
PEERS = ["cuda.core", "CuPy", "numba-cuda", "numba-cuda-mlir", "PyTorch"]
UNITS = ("µs", "ms", "GB/s")
# The chart's colours (Okabe and Ito's, told apart by colour-blind readers) and marks.
STYLE = {"gpuhost": ("#0072B2", "circle"), "cuda.core": ("#009E73", "square"),
         "CuPy": ("#E69F00", "diamond"), "numba-cuda": ("#D55E00", "triangle"),
         "numba-cuda-mlir": ("#56B4E9", "triangle"), "PyTorch": ("#CC79A7", "cross")}
TOP_KEYS = ("about", "machine", "date", "command", "runs", "libraries", "rows")
ROW_KEYS = ("operation", "group", "unit", "figures", "vs_raw_c", "goal", "met_runs",
            "label", "headline", "chart")


class SpeedDataError(ValueError):
    """benchmarks/speed.json (or an imported run) is not what this script can show."""


# ---- the data file ---------------------------------------------------------------------

def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value > 0


def check(data):
    """Raise SpeedDataError naming the first thing wrong in `data`; return `data`."""
    if not isinstance(data, dict):
        raise SpeedDataError("the speed data must be a JSON object, not %s"
                             % type(data).__name__)
    for key in TOP_KEYS:
        if key not in data:
            raise SpeedDataError("the speed data has no %r" % key)
    for key in ("machine", "date", "command"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise SpeedDataError("%r must be a non-empty string" % key)
    if not isinstance(data["runs"], int) or isinstance(data["runs"], bool) or data["runs"] < 1:
        raise SpeedDataError("'runs' must be a whole number of at least 1, not %r"
                             % (data["runs"],))
    if data["libraries"] != LIBRARIES:
        raise SpeedDataError("'libraries' must be %s, in that order" % json.dumps(LIBRARIES))
    if not isinstance(data["rows"], list) or not data["rows"]:
        raise SpeedDataError("'rows' must be a non-empty list")
    seen, headlines = set(), set()
    for i, row in enumerate(data["rows"]):
        where = "row %d" % (i + 1)
        if not isinstance(row, dict):
            raise SpeedDataError("%s is not an object" % where)
        op = row.get("operation")
        if not isinstance(op, str) or not op.strip():
            raise SpeedDataError("%s has no 'operation'" % where)
        where = "row %d (%r)" % (i + 1, op)
        unknown = sorted(set(row) - set(ROW_KEYS))
        if unknown:
            raise SpeedDataError("%s: unknown keys %s (known: %s)"
                                 % (where, ", ".join(unknown), ", ".join(ROW_KEYS)))
        if op in seen:
            raise SpeedDataError("%s: the operation is there twice" % where)
        seen.add(op)
        if not isinstance(row.get("group"), str) or not row["group"].strip():
            raise SpeedDataError("%s has no 'group'" % where)
        if row.get("unit") not in UNITS:
            raise SpeedDataError("%s: 'unit' must be one of %s, not %r"
                                 % (where, ", ".join(UNITS), row.get("unit")))
        figures = row.get("figures")
        if not isinstance(figures, dict) or "gpuhost" not in figures:
            raise SpeedDataError("%s: 'figures' must hold at least gpuhost's" % where)
        for lib, value in figures.items():
            if lib not in LIBRARIES:
                raise SpeedDataError("%s: %r is not one of the libraries (%s)"
                                     % (where, lib, ", ".join(LIBRARIES)))
            if not _number(value):
                raise SpeedDataError("%s: %s's figure must be a positive number, not %r"
                                     % (where, lib, value))
        vs = row.get("vs_raw_c")
        if vs is not None:
            if not (isinstance(vs, list) and len(vs) == 3 and all(map(_number, vs))
                    and vs[1] <= vs[0] <= vs[2]):
                raise SpeedDataError("%s: 'vs_raw_c' must be [median, lowest, highest], "
                                     "positive numbers, not %r" % (where, vs))
            if "raw C" not in figures:
                raise SpeedDataError("%s: 'vs_raw_c' without a raw C figure" % where)
        met = row.get("met_runs")
        if met is not None:
            if not (isinstance(met, list) and len(met) == 2
                    and all(isinstance(n, int) and not isinstance(n, bool) for n in met)
                    and 0 <= met[0] <= met[1] == data["runs"]):
                raise SpeedDataError("%s: 'met_runs' must be [runs met, %d], not %r"
                                     % (where, data["runs"], met))
            if not row.get("goal"):
                raise SpeedDataError("%s: 'met_runs' without a 'goal'" % where)
        for key in ("goal", "label", "headline"):
            if key in row and row[key] is not None and not (
                    isinstance(row[key], str) and row[key].strip() and "|" not in row[key]):
                raise SpeedDataError("%s: %r must be text without '|', not %r"
                                     % (where, key, row[key]))
        if row.get("headline"):
            if row["headline"] in headlines:
                raise SpeedDataError("%s: the headline %r is there twice"
                                     % (where, row["headline"]))
            headlines.add(row["headline"])
        if "chart" in row and not isinstance(row["chart"], bool):
            raise SpeedDataError("%s: 'chart' must be true or false" % where)
        if row.get("chart") and ("raw C" not in figures or len(figures) < 2):
            raise SpeedDataError("%s: a charted row needs raw C's figure and another" % where)
    if not headlines:
        raise SpeedDataError("no row has a 'headline': README's table would be empty")
    return data


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise SpeedDataError("%s is not JSON: %s" % (path, e)) from None
    return check(data)


def dumps(data):
    """The file's text: one line per row, so that a row is added by adding a line."""
    out = ["{"]
    for key in TOP_KEYS[:-1]:
        out.append("  %s: %s," % (json.dumps(key), json.dumps(data[key], ensure_ascii=False)))
    out.append('  "rows": [')
    rows = [json.dumps({k: row[k] for k in ROW_KEYS if k in row}, ensure_ascii=False)
            for row in data["rows"]]
    out.append(",\n".join("    " + r for r in rows))
    out.append("  ]")
    out.append("}")
    return "\n".join(out) + "\n"


# ---- the tables --------------------------------------------------------------------------

def higher_is_better(row):
    return row["unit"] == "GB/s"


def fmt(value):
    """Three significant digits, never in exponent form (13,100 rather than 1.31e+04)."""
    rounded = float("%.3g" % value)
    if rounded >= 1000:
        return "{:,.0f}".format(rounded)
    return "%.3g" % rounded


def vs_best_peer(row):
    ours = row["figures"]["gpuhost"]
    peers = [row["figures"][p] for p in PEERS if p in row["figures"]]
    if not peers:
        return None
    best = max(peers) if higher_is_better(row) else min(peers)
    return ours / best if higher_is_better(row) else best / ours


def _table(header, lines):
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(cells) + " |" for cells in lines])


def _runs(runs):
    """How the figures were reduced: one run's, or the medians of several."""
    return "one run" if runs == 1 else "medians of %d runs" % runs


def headline_block(data):
    rows = [r for r in data["rows"] if r.get("headline")]
    libs = [lib for lib in LIBRARIES if any(lib in r["figures"] for r in rows)]
    lines = [[r["headline"]] + [fmt(r["figures"][lib]) if lib in r["figures"] else "-"
                                for lib in libs] for r in rows]
    return "\n".join([
        "Measured on %s, %s (`%s`; %s). Microseconds per call unless the row "
        "says otherwise; \"raw C\" is the same operation written in C against the driver, in "
        "the same run." % (data["machine"], data["date"], data["command"], _runs(data["runs"])),
        "", _table(["operation"] + libs, lines)])


def _met(row):
    if row.get("met_runs") is None:
        return "-"
    met, runs = row["met_runs"]
    return ("met" if met == runs else "**not met**") + " (%d/%d)" % (met, runs)


def _vs_text(vs, runs):
    """A row's "vs raw C": the median, and its lowest-highest spread where there were
    several runs (one run has none to show)."""
    return "%.2f×" % vs[0] if runs == 1 else "%.2f× (%.2f-%.2f)" % tuple(vs)


def tables_block(data):
    if data["runs"] == 1:
        reduced = "each figure is that run's; \"vs raw C\" is the ratio of the two"
    else:
        reduced = ("each figure is the median of the %d runs; \"vs raw C\" is the median of "
                   "the runs' ratios (lowest-highest)" % data["runs"])
    out = ["Measured on %s, %s, with `%s`: %s and \"vs best peer\" "
           "the ratio to the fastest other library, both as how many times faster gpuhost "
           "is (above 1: faster); a goal counts as met only if it was met in every run."
           % (data["machine"], data["date"], data["command"], reduced)]
    groups = []
    for row in data["rows"]:
        if row["group"] not in groups:
            groups.append(row["group"])
    for group in groups:
        rows = [r for r in data["rows"] if r["group"] == group]
        libs = [lib for lib in LIBRARIES if any(lib in r["figures"] for r in rows)]
        units = sorted({r["unit"] for r in rows}, key=UNITS.index)
        lines = []
        for r in rows:
            peer = vs_best_peer(r)
            vs = r.get("vs_raw_c")
            lines.append([r.get("label") or r["operation"].strip()]
                         + [fmt(r["figures"][lib]) if lib in r["figures"] else "-"
                            for lib in libs]
                         + [_vs_text(vs, data["runs"]) if vs else "-",
                            "%.2f×" % peer if peer else "-", r.get("goal") or "-", _met(r)])
        out += ["", "### %s" % group, "",
                "In %s." % " or ".join({"µs": "µs per call", "ms": "ms", "GB/s": "GB/s"}[u]
                                        for u in units),
                "", _table(["operation"] + libs + ["vs raw C", "vs best peer", "goal", "met"],
                           lines)]
    return "\n".join(out)


BLOCKS = {"headline": headline_block, "tables": tables_block}


def replace_block(text, name, content, page="the page"):
    """`text` with what lies between the speed:`name` markers replaced by `content`."""
    start, end = "<!-- speed:%s -->" % name, "<!-- /speed:%s -->" % name
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise SpeedDataError("%s must hold %s and then %s, once each" % (page, start, end))
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return head + start + "\n" + content + "\n" + end + tail


# ---- the chart -------------------------------------------------------------------------

def _mark(shape, x, y, color):
    if shape == "circle":
        return '<circle cx="%.1f" cy="%.1f" r="5.5" fill="%s"/>' % (x, y, color)
    if shape == "square":
        return '<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s"/>' % (x - 4.5, y - 4.5,
                                                                              color)
    if shape == "diamond":
        return '<path d="M%.1f %.1fl5.5 5.5-5.5 5.5-5.5-5.5z" fill="%s"/>' % (x, y - 5.5, color)
    if shape == "triangle":
        return '<path d="M%.1f %.1fl5.5 9.5h-11z" fill="%s"/>' % (x, y - 5.5, color)
    return ('<path d="M%.1f %.1fl9 9m0-9l-9 9" stroke="%s" stroke-width="2.5"/>'
            % (x - 4.5, y - 4.5, color))


def _speed(row, lib):
    """How many times faster than raw C `lib` is on `row` (above 1: faster)."""
    value, raw = row["figures"].get(lib), row["figures"]["raw C"]
    if value is None:
        return None
    return value / raw if higher_is_better(row) else raw / value


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def chart_svg(data, narrow=False):
    """A dot plot: per charted row, each library's speed relative to raw C, on a log scale.
    The wide chart names each row to the left of its marks; the narrow one, for a phone's
    width, above them."""
    rows = [r for r in data["rows"] if r.get("chart")]
    libs = [lib for lib in LIBRARIES[1:] if any(lib in r["figures"] for r in rows)]
    speeds = [s for r in rows for lib in libs for s in [_speed(r, lib)] if s]
    lo = 10.0 ** math.floor(math.log10(min(speeds + [1.0])))
    hi = 10.0 ** math.ceil(math.log10(max(speeds + [1.0])))
    if narrow:
        width, left, right, pitch, top = 380, 24, 22, 38, 112
    else:
        width, left, right, pitch, top = 760, 270, 24, 24, 78
    plot = width - left - right
    height = top + pitch * len(rows) + 44
    span = math.log10(hi) - math.log10(lo)

    def x(value):
        return left + plot * (math.log10(value) - math.log10(lo)) / span

    title = "Speed relative to raw C, %s, %s" % (data["machine"], data["date"])
    out = ['<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" '
           'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13" '
           'role="img" aria-labelledby="t">' % (width, height, width, height),
           '<title id="t">%s</title>' % _escape(title),
           '<rect width="100%" height="100%" fill="#ffffff"/>']
    # the legend, on top, so that it is read before the marks
    out.append('<text x="12" y="24.5" fill="#222" font-weight="bold">times as fast as raw C'
               '</text>')
    lx, ly = (12, 48) if narrow else (left, 20)
    for lib in libs:
        step = 16 + 7.3 * len(lib) + 20
        if lx + step > width:
            lx, ly = 12, ly + 20
        color, shape = STYLE[lib]
        out.append(_mark(shape, lx + 6, ly, color))
        out.append('<text x="%.1f" y="%.1f" fill="#222">%s</text>'
                   % (lx + 16, ly + 4.5, _escape(lib)))
        lx += step
    # stripes, gridlines and ticks
    for i in range(len(rows)):
        if i % 2 == 0:
            out.append('<rect x="0" y="%d" width="%d" height="%d" fill="#f3f5f8"/>'
                       % (top + i * pitch, width, pitch))
    decade = lo
    ticks = []
    while decade <= hi * 1.0001:
        for k in (1, 3):
            if decade * k <= hi * 1.0001:
                ticks.append(decade * k)
        decade *= 10
    bottom = top + pitch * len(rows)
    for t in ticks:
        gx = x(t)
        strong = abs(t - 1.0) < 1e-9
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%s"/>'
                   % (gx, top - 4, gx, bottom + 4, "#333" if strong else "#c8ccd2",
                      "1.5" if strong else "1"))
        label = ("%g×" % t)
        for y in (top - 10, bottom + 20):
            out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#444" '
                       'font-size="12">%s</text>' % (gx, y, label))
    out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#444" font-size="12">'
               '&#8592; slower than raw C &#183; faster &#8594;</text>'
               % (x(1.0), bottom + 38))
    for i, row in enumerate(rows):
        name = row.get("label") or row["operation"].strip()
        if narrow:  # the name on the row's first line, its marks below
            cy = top + i * pitch + pitch - 11
            out.append('<text x="%d" y="%.1f" fill="#222">%s</text>'
                       % (left - 8, top + i * pitch + 14, _escape(name)))
        else:
            cy = top + i * pitch + pitch / 2
            out.append('<text x="%d" y="%.1f" text-anchor="end" fill="#222">%s</text>'
                       % (left - 10, cy + 4.5, _escape(name)))
        for lib in reversed(libs):  # gpuhost drawn last, on top
            speed = _speed(row, lib)
            if speed:
                color, shape = STYLE[lib]
                out.append(_mark(shape, x(speed), cy, color))
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- the pages ---------------------------------------------------------------------------

def rendered(data, root=ROOT):
    """{path relative to root: the text it should have}."""
    out = {}
    for page, blocks in PAGES.items():
        with open(os.path.join(root, page), encoding="utf-8") as f:
            text = f.read()
        for name in blocks:
            text = replace_block(text, name, BLOCKS[name](data), page)
        out[page] = text
    out[CHART] = chart_svg(data)
    out[CHART_NARROW] = chart_svg(data, narrow=True)
    return out


def stale(root=ROOT):
    """The pages (relative paths) whose text differs from what the data file gives."""
    data = load(os.path.join(root, DATA))
    out = []
    for path, text in rendered(data, root).items():
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            out.append(path)
    return out


def write(root=ROOT):
    data = load(os.path.join(root, DATA))
    changed = []
    for path, text in rendered(data, root).items():
        full = os.path.join(root, path)
        try:
            with open(full, encoding="utf-8") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if not same:
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
            changed.append(path)
    return changed


# ---- a new measurement -----------------------------------------------------------------

def _group_of(op):
    if op.startswith(("jit, ", "NVRTC, ", "d[")):
        return "Other libraries' arrays, many scalars, assignment"
    if op.startswith(("launch", "jit", "@jit", "graph", "capture")):
        return "Kernel launches and CUDA graphs"
    if op.startswith(("event", "stream")):
        return "Streams and events"
    if op.startswith(("to_device", "copy_to_host", "htod", "dtoh")):
        return "Copies"
    if "alloc" in op or "driver mode" in op:
        return "Allocation"
    return "Compiling and importing"


def imported(run, old):
    """The speed data of `run` (benchmarks/all.py's --json output), keeping the group,
    label, headline and chart settings `old` gave each operation it already had."""
    for key in ("date", "machine", "rows"):
        if key not in run:
            raise SpeedDataError("the run has no %r: is it benchmarks/all.py's --json output?"
                                 % key)
    if not isinstance(run["rows"], dict) or not run["rows"]:
        raise SpeedDataError("the run's 'rows' must be all.py's object of operations")
    before = {r["operation"]: r for r in (old or {}).get("rows", [])}
    repeat = run.get("repeat", 1)
    rows = []
    for op, rec in run["rows"].items():
        prev = before.get(op, {})
        figures = {lib: rec[lib] for lib in LIBRARIES if _number(rec.get(lib))}
        if "gpuhost" not in figures:
            continue  # a row gpuhost has no figure for says nothing about it
        unit = "GB/s" if "GB/s" in op else ("ms" if re.search(r"\bms\b", op) else "µs")
        row = {"operation": op, "group": prev.get("group") or _group_of(op.strip()),
               "unit": unit, "figures": figures}
        runs = [r for r in rec.get("vs_raw_runs") or [] if _number(r)]
        if runs and "raw C" in figures:
            row["vs_raw_c"] = [round(statistics.median(runs), 2), round(min(runs), 2),
                               round(max(runs), 2)]
        goal = rec.get("goal")
        if goal and goal != "-":
            row["goal"] = goal
            met = re.fullmatch(r"(\d+)/(\d+)", str(rec.get("met_runs", "")))
            if met and rec.get("met") is not None:
                row["met_runs"] = [int(met.group(1)), int(met.group(2))]
        for key in ("label", "headline", "chart"):
            if key in prev:
                row[key] = prev[key]
        if row.get("chart") and "raw C" not in figures:
            del row["chart"]
        rows.append(row)
    data = {"about": (old or {}).get("about", "The one measurement every speed figure of "
                                      "README.md and the documentation comes from."),
            "machine": run["machine"], "date": run["date"],
            "command": "python3 benchmarks/all.py --repeat %d" % repeat, "runs": repeat,
            "libraries": LIBRARIES, "rows": rows}
    order = list(dict.fromkeys(r["group"] for r in rows))  # a group's rows together
    rows.sort(key=lambda r: order.index(r["group"]))
    return check(data)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 naming each page that differs")
    parser.add_argument("--import", dest="run", metavar="RUN.json",
                        help="replace the measurement by this benchmarks/all.py --json output")
    parser.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.run:
            with open(args.run, encoding="utf-8") as f:
                run = json.load(f)
            path = os.path.join(args.root, DATA)
            old = load(path) if os.path.exists(path) else None
            data = imported(run, old)
            with open(path, "w", encoding="utf-8") as f:
                f.write(dumps(data))
            print("%s: %d rows measured %s on %s" % (DATA, len(data["rows"]), data["date"],
                                                     data["machine"]))
        if args.check:
            pages = stale(args.root)
            for page in pages:
                print("%s differs from %s: run python3 tools/speed_pages.py" % (page, DATA))
            return 1 if pages else 0
        for page in write(args.root):
            print("wrote", page)
        return 0
    except (SpeedDataError, OSError, json.JSONDecodeError) as e:
        print("speed_pages: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
