"""tools/docs_check.py's link check (no browser needed): every link of every page of a
built site, the source pages under _modules/ included, leads to a file and an anchor."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import docs_check as dc  # noqa: E402

PAGES = {
    "index.html": '<a href="guide/pools.html#gpuhost.memory.MemoryPool">pool</a>'
                  '<a href="https://example.org/x.html#nowhere">out</a><a href="#top">top</a>'
                  '<a href="_static/style.css">css</a><a href="guide/">guide</a>'
                  '<p id="top"></p>',
    "guide/index.html": "<p>guide</p>",
    "guide/pools.html": '<dt id="gpuhost.memory.MemoryPool"></dt><a name="old"></a>'
                        '<a href="../index.html#top">home</a><a href="#old">old</a>',
    "_modules/gpuhost/memory.html":
        '<div class="viewcode-block" id="MemoryPool"><a class="viewcode-back" '
        'href="../../guide/pools.html#gpuhost.compat.cupy.MemoryPool">[docs]</a></div>'
        '<a href="../../guide/pools.html#gpuhost.memory.MemoryPool">[docs]</a>'
        '<a href="../../guide/gone.html">gone</a><a href="missing.css">css</a>',
    "_static/style.css": "",
}


def make_site(tmp_path, pages):
    for rel, body in pages.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body if rel.endswith(".css") else "<html><body>%s</body></html>" % body)
    return str(tmp_path)


def test_links_to_missing_anchors_and_files_are_found_on_source_pages_too(tmp_path):
    assert dc.broken_links(make_site(tmp_path, PAGES)) == [
        "_modules/gpuhost/memory.html: ../../guide/pools.html#gpuhost.compat.cupy.MemoryPool "
        "(no such anchor)",
        "_modules/gpuhost/memory.html: ../../guide/gone.html (no such file)",
        "_modules/gpuhost/memory.html: missing.css (no such file)",
    ]


def test_a_site_whose_links_all_lead_somewhere_has_none_broken(tmp_path):
    good = {k: v for k, v in PAGES.items() if not k.startswith("_modules")}
    assert dc.broken_links(make_site(tmp_path, good)) == []


def test_the_built_site_if_there_is_one_has_no_broken_link():
    site = os.path.join(ROOT, "docs", "_build", "html")
    if not os.path.exists(os.path.join(site, "index.html")):
        import pytest

        pytest.skip("the site is not built here (python3 -m sphinx -W -b html docs %s)" % site)
    assert dc.broken_links(site) == []
