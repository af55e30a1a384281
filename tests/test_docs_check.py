"""tools/docs_check.py's layout checks, on pages made for them, in headless Chromium (CI
installs Debian's chromium for its documentation step; without one this file is skipped)."""
import os
import shutil
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import docs_check as dc  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytest.importorskip("websocket", reason="docs_check.py drives Chromium through websocket-client")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium to check pages in")

PAGE = """<!doctype html><html><head><meta name="viewport" content="width=device-width">
<link rel="icon" href="data:,">
<style>body {{ margin: 0; font: 16px sans-serif; }} .bd-article {{ width: {article}; }}
pre {{ overflow-x: auto; }} td {{ border: 1px solid; }}</style></head>
<body><div class="bd-article">{body}</div></body></html>"""

PAGES = {
    "good.html": ("100%", "<p>Text.</p><pre>short = 1</pre><table><tr><td>to_device</td>"
                          "<td>copies</td></tr></table>"),
    "hidden.html": ("100%", "<pre>" + "x = 1  # " + "y" * 400 + "</pre>"),
    "wide.html": ("100%", "<div style='width: 3000px'>wide</div>"),
    "runs_past.html": ("100%", "<table style='table-layout: fixed; width: 200px'><tr>"
                               "<td style='white-space: nowrap'>" + "z" * 80 + "</td></tr>"
                               "</table>"),
    "squeezed.html": ("100%", "<table style='width: 100%'><tr><td style='width: 1%; "
                              "overflow-wrap: anywhere'>pinned_array_like</td><td>" + "w " * 400
                              + "</td></tr></table>"),
    "narrow.html": ("40%", "<p>Text squeezed between sidebars.</p>"),
}


@pytest.fixture(scope="module")
def page():
    site = tempfile.mkdtemp(prefix="docs_check_test.")
    for name, (article, body) in PAGES.items():
        with open(os.path.join(site, name), "w") as f:
            f.write(PAGE.format(article=article, body=body))
    server, base = dc.serve(site)
    profile = tempfile.mkdtemp(prefix="docs_check_test.profile.")
    proc, ws_url = dc.start_chromium(CHROMIUM, profile)
    try:
        tab = dc.Page(ws_url)
        tab.base = base
        yield tab
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(site, ignore_errors=True)


def _problems(page, name, width):
    page.resize(width)
    assert page.open(page.base + name) == []
    return dc.layout_problems(page)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_page_that_reads_well_passes(page, width):
    assert _problems(page, "good.html", width) == []


@pytest.mark.parametrize("width", [1280, 390])
def test_code_hidden_behind_a_sideways_scroll_is_cut_off(page, width):
    [problem] = _problems(page, "hidden.html", width)
    assert problem.startswith("cut off: pre: x = 1  # yyyy")
    assert problem.endswith("px of its lines hidden, behind a sideways scroll)")


def test_a_page_wider_than_the_window_fails(page):
    problems = _problems(page, "wide.html", 390)
    assert problems[0].startswith("the page is ")
    assert problems[0].endswith(" px wide, more than the 390 px viewport")


def test_text_running_past_its_cell_and_a_squeezed_column_fail(page):
    [problem] = _problems(page, "runs_past.html", 1280)
    assert problem.startswith("cut off: a table cell: zzzz") and "px past the cell)" in problem
    problems = _problems(page, "squeezed.html", 1280)
    assert problems and problems[0].startswith("squeezed: a table cell: pinned_array_like (")


def test_a_squeezed_text_column_fails(page):
    [problem] = _problems(page, "narrow.html", 1280)
    assert problem == "the text column is 512 px wide, less than 704 px"


def test_widths_must_be_numbers_of_at_least_200(tmp_path, capsys):
    (tmp_path / "index.html").write_text("<html></html>")
    for bad, message in (("1280,phone", "--widths takes numbers separated by commas, not "
                                        "'1280,phone'"),
                         ("1280,100", "--widths: each width must be at least 200 px")):
        with pytest.raises(SystemExit):
            dc.main([str(tmp_path), "--widths", bad, "--chromium", CHROMIUM])
        assert message in capsys.readouterr().err
