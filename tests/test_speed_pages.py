"""Every speed figure README.md and the documentation show comes from one measurement,
benchmarks/speed.json, through tools/speed_pages.py: the pages match the file, nothing
else quotes a figure, and the tool refuses a file it cannot show, saying why."""
import copy
import glob
import json
import os
import random
import re
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import speed_pages as sp  # noqa: E402

DATA = sp.load(os.path.join(ROOT, sp.DATA))


def _table_rows(text):
    """The body rows of the Markdown tables in `text`, as lists of cells."""
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| operation |")]


def _block(page, name):
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    return text.split("<!-- speed:%s -->" % name)[1].split("<!-- /speed:%s -->" % name)[0]


def test_the_pages_and_the_chart_are_what_the_data_file_gives():
    assert sp.stale(ROOT) == []


@pytest.mark.parametrize("page", ["README.md", os.path.join("docs", "index.md")])
def test_the_headline_tables_hold_the_headline_rows_with_their_figures(page):
    block = _block(page, "headline")
    assert DATA["machine"] in block and DATA["date"] in block
    rows = [r for r in DATA["rows"] if r.get("headline")]
    shown = _table_rows(block)
    assert [cells[0] for cells in shown] == [r["headline"] for r in rows]
    header = [h.strip() for h in block.split("| operation |")[1].split("\n")[0].split("|")
              if h.strip()]
    for row, cells in zip(rows, shown):
        for lib, cell in zip(header, cells[1:]):
            value = row["figures"].get(lib)
            assert cell == (sp.fmt(value) if value is not None else "-"), (row, lib)
            if value is not None:  # three significant digits of the file's figure
                assert abs(float(cell.replace(",", "")) - value) <= 0.005 * value


def test_the_performance_page_shows_every_row_once_in_its_group():
    block = _block(os.path.join("docs", "performance.md"), "tables")
    assert "Measured on %s, %s, with `%s`" % (DATA["machine"], DATA["date"],
                                              DATA["command"]) in block
    shown = _table_rows(block)
    assert len(shown) == len(DATA["rows"])
    groups = re.findall(r"^### (.+)$", block, re.M)
    assert groups == list(dict.fromkeys(r["group"] for r in DATA["rows"]))
    for row, cells in zip(DATA["rows"], shown):
        assert cells[0] == (row.get("label") or row["operation"].strip())
        assert sp.fmt(row["figures"]["gpuhost"]) in cells[1:]
        if row.get("vs_raw_c"):
            vs = row["vs_raw_c"]
            assert ("%.2f×" % vs[0] if DATA["runs"] == 1 else "%.2f× (%.2f-%.2f)" % tuple(vs)) \
                in cells
        if row.get("met_runs"):
            met, runs = row["met_runs"]
            assert cells[-1] == ("met" if met == runs else "**not met**") + " (%d/%d)" % (
                met, runs)


def test_the_reproduce_command_is_the_one_the_measurement_ran():
    text = open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8").read()
    reproduce = text.split("## Reproducing it")[1]
    commands = re.findall(r"^python3 benchmarks/all\.py[^\n]*", reproduce, re.M)
    assert commands == [DATA["command"] + " --json bench.json"]


def test_one_run_shows_each_ratio_without_a_spread_and_several_runs_with_one():
    one = copy.deepcopy(DATA)
    one["runs"] = 1
    row = next(r for r in one["rows"] if r.get("vs_raw_c"))
    row["vs_raw_c"] = [1.5, 1.25, 1.75]
    cells = [c for c in _table_rows(sp.tables_block(one)) if c[0] == (row.get("label")
                                                                      or row["operation"])][0]
    assert "1.50×" in cells and not any(c.startswith("1.50× (") for c in cells)
    one["runs"] = 3
    cells = [c for c in _table_rows(sp.tables_block(one)) if c[0] == (row.get("label")
                                                                      or row["operation"])][0]
    assert "1.50× (1.25-1.75)" in cells


@pytest.mark.parametrize("chart, label", [
    (sp.CHART, r'text-anchor="end" fill="#222">([^<]+)</text>'),
    (sp.CHART_NARROW, r'<text x="16" y="[\d.]+" fill="#222">([^<]+)</text>'),
])
def test_the_chart_has_a_line_per_charted_row_and_names_the_machine(chart, label):
    svg = open(os.path.join(ROOT, chart), encoding="utf-8").read()
    charted = [r for r in DATA["rows"] if r.get("chart")]
    labels = re.findall(label, svg)
    assert labels == [sp._escape(r.get("label") or r["operation"].strip()) for r in charted]
    assert "<title id=\"t\">Speed relative to raw C, %s, %s</title>" % (
        sp._escape(DATA["machine"]), DATA["date"]) in svg
    # one mark per library figure of each charted row (raw C is the axis, not a mark)
    marks = len(re.findall(r"<(circle|rect x=\"[\d.]+\" y=\"[\d.]+\" width=\"9\"|path) ", svg))
    assert marks == sum(len(r["figures"]) - 1 for r in charted) + len(
        [lib for lib in sp.LIBRARIES[1:] if any(lib in r["figures"] for r in charted)])


SPEED = re.compile(r"\d[\d,.]*(?:\s|-)*(?:µs|GB/s|ms\b)")


def _prose_lines(path):
    """(line number, text) of `path`'s lines outside code blocks and the speed blocks."""
    inside_code, inside_speed = False, False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.lstrip().startswith(("```", "~~~")):
            inside_code = not inside_code
            continue
        if line.startswith("<!-- speed:"):
            inside_speed = True
        elif line.startswith("<!-- /speed:"):
            inside_speed = False
        elif not inside_code and not inside_speed:
            yield number, line


def test_no_page_quotes_a_speed_figure_of_its_own():
    # CHANGELOG.md: the site includes it
    pages = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "CHANGELOG.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    found = ["%s:%d: %s" % (os.path.relpath(p, ROOT), n, line.strip())
             for p in pages for n, line in _prose_lines(p) if SPEED.search(line)]
    assert found == []


def test_a_speed_figure_in_prose_would_be_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("A launch took 3.65 µs here.\n```\nx = 1  # 5 ms\n```\n"
                    "<!-- speed:headline -->\n| 1.5 µs |\n<!-- /speed:headline -->\n"
                    "Copies ran at 40-52 GB/s, imports 27 ms.\n")
    hits = [n for n, line in _prose_lines(str(page)) if SPEED.search(line)]
    assert hits == [1, 8]


def test_figures_are_shown_with_three_significant_digits_never_in_exponent_form():
    assert [sp.fmt(v) for v in (13100.0, 35700, 1234.5, 0.103, 25.0, 3.94, 0.7926, 999.6)] \
        == ["13,100", "35,700", "1,230", "0.103", "25", "3.94", "0.793", "1,000"]


def test_vs_best_peer_is_the_fastest_peer_over_gpuhost_either_way():
    rng = random.Random()
    ours, peers = rng.uniform(1, 10), [rng.uniform(1, 10) for _ in range(3)]
    row = {"unit": "µs", "figures": dict(zip(["gpuhost", "CuPy", "numba-cuda", "PyTorch"],
                                              [ours] + peers))}
    assert sp.vs_best_peer(row) == min(peers) / ours
    row["unit"] = "GB/s"
    assert sp.vs_best_peer(row) == ours / max(peers)
    assert sp.vs_best_peer({"unit": "µs", "figures": {"gpuhost": ours, "raw C": 1.0}}) is None


# ---- the data file's checks -----------------------------------------------------------------

def _data():
    return copy.deepcopy(DATA)


def _broken(change):
    data = _data()
    change(data)
    with pytest.raises(sp.SpeedDataError) as info:
        sp.check(data)
    return str(info.value)


def _row(data, op="launch, async, 1 arg"):
    return next(r for r in data["rows"] if r["operation"] == op)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("machine"), "the speed data has no 'machine'"),
    (lambda d: d.update(date=" "), "'date' must be a non-empty string"),
    (lambda d: d.update(runs=0), "'runs' must be a whole number of at least 1, not 0"),
    (lambda d: d.update(runs=True), "'runs' must be a whole number of at least 1, not True"),
    (lambda d: d.update(libraries=["gpuhost"]), "'libraries' must be [\"raw C\", \"gpuhost\", "
     "\"cuda.core\", \"CuPy\", \"numba-cuda\", \"numba-cuda-mlir\", \"PyTorch\"], in that order"),
    (lambda d: d.update(rows=[]), "'rows' must be a non-empty list"),
    (lambda d: d["rows"].__setitem__(0, 5), "row 1 is not an object"),
    (lambda d: d["rows"][0].pop("operation"), "row 1 has no 'operation'"),
    (lambda d: d["rows"][0].update(colour="red"), "row 1 ('launch, async, 1 arg'): unknown keys "
     "colour (known: operation, group, unit, figures, vs_raw_c, goal, met_runs, label, "
     "headline, chart)"),
    (lambda d: d["rows"].append(dict(d["rows"][0], headline="another")),
     "('launch, async, 1 arg'): the operation is there twice"),
    (lambda d: d["rows"][0].pop("group"), "row 1 ('launch, async, 1 arg') has no 'group'"),
    (lambda d: d["rows"][0].update(unit="s"), "row 1 ('launch, async, 1 arg'): 'unit' must be "
     "one of µs, ms, GB/s, not 's'"),
    (lambda d: d["rows"][0]["figures"].pop("gpuhost"), "row 1 ('launch, async, 1 arg'): "
     "'figures' must hold at least gpuhost's"),
    (lambda d: d["rows"][0]["figures"].update(JAX=1.0), "row 1 ('launch, async, 1 arg'): 'JAX' "
     "is not one of the libraries (raw C, gpuhost, cuda.core, CuPy, numba-cuda, "
     "numba-cuda-mlir, PyTorch)"),
    (lambda d: d["rows"][0]["figures"].update(CuPy=-2), "row 1 ('launch, async, 1 arg'): "
     "CuPy's figure must be a positive number, not -2"),
    (lambda d: d["rows"][0]["figures"].update(CuPy="5"), "CuPy's figure must be a positive "
     "number, not '5'"),
    (lambda d: d["rows"][0].update(vs_raw_c=[0.9, 1.0, 1.1]), "'vs_raw_c' must be [median, "
     "lowest, highest], positive numbers, not [0.9, 1.0, 1.1]"),
    (lambda d: d["rows"][0]["figures"].pop("raw C"), "row 1 ('launch, async, 1 arg'): "
     "'vs_raw_c' without a raw C figure"),
    (lambda d: d["rows"][0].update(met_runs=[3, 2]), "'met_runs' must be [runs met, %d], "
     "not [3, 2]" % DATA["runs"]),
    (lambda d: d["rows"][0].update(met_runs=[1, 5]), "'met_runs' must be [runs met, %d], "
     "not [1, 5]" % DATA["runs"]),
    (lambda d: d["rows"][0].pop("goal"), "row 1 ('launch, async, 1 arg'): 'met_runs' without a "
     "'goal'"),
    (lambda d: d["rows"][0].update(label="a | b"), "'label' must be text without '|', not "
     "'a | b'"),
    (lambda d: d["rows"][1].update(headline="kernel launch, 1 argument"), "row 2 ('launch + "
     "sync, 1 arg'): the headline 'kernel launch, 1 argument' is there twice"),
    (lambda d: d["rows"][0].update(chart="yes"), "'chart' must be true or false"),
    (lambda d: [r.pop("headline", None) for r in d["rows"]], "no row has a 'headline': "
     "README's table would be empty"),
])
def test_a_data_file_that_cannot_be_shown_is_refused_saying_why(change, message):
    assert message in _broken(change)


def test_a_charted_row_needs_raw_c():
    data = _data()
    row = _row(data, "cache hit, memory")
    row["chart"] = True
    number = 1 + [r["operation"] for r in data["rows"]].index("cache hit, memory")
    with pytest.raises(sp.SpeedDataError, match=r"row %d \('cache hit, memory'\): a charted row "
                       "needs raw C's figure and another" % number):
        sp.check(data)


def test_a_file_that_is_not_json_or_not_an_object_is_refused(tmp_path):
    bad = tmp_path / "speed.json"
    bad.write_text("{\"rows\": [")
    with pytest.raises(sp.SpeedDataError, match="speed.json is not JSON: Expecting value"):
        sp.load(str(bad))
    with pytest.raises(sp.SpeedDataError, match="the speed data must be a JSON object, not list"):
        sp.check([])


def test_a_page_without_its_markers_is_refused():
    with pytest.raises(sp.SpeedDataError, match=r"README.md must hold <!-- speed:headline --> "
                       r"and then <!-- /speed:headline -->, once each"):
        sp.replace_block("no markers", "headline", "x", "README.md")
    with pytest.raises(sp.SpeedDataError, match="once each"):
        sp.replace_block("<!-- /speed:x --> <!-- speed:x -->", "x", "y")


def test_the_file_written_is_read_back_the_same_one_row_a_line():
    text = sp.dumps(DATA)
    assert json.loads(text) == DATA
    lines = text.splitlines()
    assert sum(line.startswith('    {"operation": ') for line in lines) == len(DATA["rows"])
    assert text == open(os.path.join(ROOT, sp.DATA), encoding="utf-8").read()


# ---- a new measurement, and the command line --------------------------------------------------

def _all_py_run(rng):
    """A run as benchmarks/all.py --json writes it, with fresh random figures."""
    def rec(goal=True):
        raw, ours = rng.uniform(1, 10), rng.uniform(1, 10)
        ratios = sorted(raw / ours * rng.uniform(0.9, 1.1) for _ in range(3))
        out = {"raw C": raw, "gpuhost": ours, "CuPy": rng.uniform(1, 20),
               "vs_raw_runs": ratios}
        if goal:
            met = rng.randint(0, 3)
            out.update(goal="<= 1.10 x raw C", met_runs="%d/3" % met, met=met == 3)
        else:
            out.update(goal="-", met_runs="0/3", met=None)
        return out

    return {"date": "2027-01-%02d" % rng.randint(1, 28), "machine": "NVIDIA H200 (driver)",
            "repeat": 3, "runs": [],
            "rows": {"launch, async, 1 arg": rec(), "jit launch, 8 arrays": rec(),
                     "htod 4MiB pinned (GB/s)": rec(goal=False),
                     "import, ms beyond numpy": {"gpuhost": rng.uniform(10, 40), "CuPy": 200.0,
                                                 "goal": "<= 30 ms", "met_runs": "3/3",
                                                 "met": True},
                     "no gpuhost figure": {"raw C": 1.0, "goal": "-"}}}


def test_a_new_run_replaces_the_measurement_and_keeps_how_rows_are_shown():
    rng = random.Random()
    run = _all_py_run(rng)
    data = sp.imported(run, DATA)
    assert (data["machine"], data["date"], data["runs"]) == (run["machine"], run["date"], 3)
    assert data["command"] == "python3 benchmarks/all.py --repeat 3"
    ops = [r["operation"] for r in data["rows"]]
    assert ops == ["launch, async, 1 arg", "jit launch, 8 arrays", "htod 4MiB pinned (GB/s)",
                   "import, ms beyond numpy"]
    launch, jit, htod, imp = data["rows"]
    old = _row(_data())
    assert launch["headline"] == old["headline"] and launch["chart"] is True
    assert launch["group"] == old["group"]
    rec = run["rows"]["launch, async, 1 arg"]
    assert launch["figures"] == {"raw C": rec["raw C"], "gpuhost": rec["gpuhost"],
                                 "CuPy": rec["CuPy"]}
    runs = rec["vs_raw_runs"]
    assert launch["vs_raw_c"] == [round(runs[1], 2), round(runs[0], 2), round(runs[2], 2)]
    assert launch["met_runs"] == [int(rec["met_runs"][0]), 3]
    assert jit["group"] == "Kernel launches and CUDA graphs" and "headline" not in jit
    assert htod["unit"] == "GB/s" and "goal" not in htod and "met_runs" not in htod
    assert imp["unit"] == "ms" and imp["group"] == "Compiling and importing"
    assert "vs_raw_c" not in imp


def test_a_run_that_is_not_all_py_output_is_refused():
    with pytest.raises(sp.SpeedDataError, match="the run has no 'machine': is it "
                       "benchmarks/all.py's --json output?"):
        sp.imported({"date": "x", "rows": {}}, DATA)
    with pytest.raises(sp.SpeedDataError, match="the run's 'rows' must be all.py's object of "
                       "operations"):
        sp.imported({"date": "x", "machine": "y", "rows": []}, DATA)


def _tree(tmp_path):
    """A copy of the files speed_pages.py reads and writes."""
    for rel in [sp.DATA, sp.CHART, sp.CHART_NARROW] + list(sp.PAGES):
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(ROOT, rel), str(target))
    return tmp_path


def test_the_command_line_checks_writes_and_imports(tmp_path, capsys):
    root = _tree(tmp_path)
    assert sp.main(["--check", "--root", str(root)]) == 0
    readme = root / "README.md"
    readme.write_text(readme.read_text().replace("| event record |", "| event record, fast |"))
    assert sp.main(["--check", "--root", str(root)]) == 1
    assert "README.md differs from %s: run python3 tools/speed_pages.py" % sp.DATA \
        in capsys.readouterr().out
    assert sp.main(["--root", str(root)]) == 0
    assert capsys.readouterr().out == "wrote README.md\n"
    assert sp.main(["--check", "--root", str(root)]) == 0
    run = _all_py_run(random.Random())
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    assert sp.main(["--import", str(path), "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "%s: 4 rows measured %s on NVIDIA H200 (driver)" % (sp.DATA, run["date"]) in out
    assert "wrote docs/performance.md" in out and "wrote %s" % sp.CHART in out
    assert "NVIDIA H200 (driver)" in (root / "docs" / "performance.md").read_text()
    assert sp.main(["--check", "--root", str(root)]) == 0


def test_the_command_line_says_what_is_wrong_with_the_file(tmp_path, capsys):
    root = _tree(tmp_path)
    (root / sp.DATA).write_text("[]")
    assert sp.main(["--root", str(root)]) == 2
    assert capsys.readouterr().err == ("speed_pages: the speed data must be a JSON object, "
                                       "not list\n")
