"""Check the built documentation site in headless Chromium, as a reader's browser sees it.

    python3 tools/docs_check.py SITE [--screenshots DIR] [--chromium PATH]

SITE is Sphinx's HTML output (python -m sphinx -W -b html docs SITE). The site is served
over HTTP on 127.0.0.1 and every page is opened through the Chrome DevTools protocol at each
width of --widths: 1280 px (a laptop) and 390 px (a phone, emulated as one) by default. A
page fails if it logs a console error or an uncaught exception, if a resource it loads
fails, if it is wider than the viewport (a horizontal scrollbar on the page itself: tables
may scroll inside their own boxes), if a code block, table, image or chart sticks out of
the viewport on either side, if a code block hides part of its lines behind a sideways
scroll or a table cell's text, or a sidebar's entry, runs past its edge (cut off), if a
table column is squeezed
to a few characters, or if its text column is narrower than TEXT_MIN of the viewport's width
(squeezed by sidebars). Every link of every page, the source pages under _modules/
included, must lead to a file of the site, and to an anchor its page has. The search page
must find
`to_device`. With --screenshots, full-page PNGs of the index, the quick start, the numba
and jit guides, the performance page and an API page (and any --shot PAGE) are written to
DIR at each width, as PAGE-WIDTH.png.

Needs Chromium (Debian's `chromium`) and the websocket-client package. Exits 1 on any
failure, listing each.
"""
import argparse
import base64
import functools
import html.parser
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import posixpath
import urllib.parse
import urllib.request

WIDTH, HEIGHT = 1280, 900
WIDTHS = (1280, 390)
HEIGHTS = {390: 844}  # a phone's viewport height; other widths: HEIGHT
# The text column's least width, as a share of the viewport's: at 1280 px the two sidebars
# (narrowed by docs/_static/gpuhost.css) leave the article about 60% of it, room for code
# lines of 88 characters (the theme's own widths left 49%); a phone's gives it nearly all.
TEXT_MIN = {1280: 0.55, 390: 0.85}
DEFAULT_SHOTS = ["index.html", "quickstart.html", "guide/numba.html", "guide/jit.html",
                 "performance.html", "reference/memory.html"]
# Code blocks, tables, images and charts that stick out of the viewport, or code that hides
# part of its lines behind a sideways scroll; and the text column's width.
LAYOUT_PROBE = r"""(() => {
  const vw = document.documentElement.clientWidth, out = [];
  for (const el of document.querySelectorAll('.bd-article pre, .bd-article table, '
                                             + '.bd-article img, .bd-article svg')) {
    if (el.closest('pre') && el.tagName !== 'PRE') continue;
    // what a scrolled box holds is not cut off: the box is what must fit
    let box = el;
    for (let p = el.parentElement; p && !p.classList.contains('bd-article'); p = p.parentElement) {
      const ox = getComputedStyle(p).overflowX;
      if (ox === 'auto' || ox === 'scroll') { box = p; break; }
    }
    const r = box.getBoundingClientRect();
    if (r.width === 0) continue;
    const what = 'cut off: ' + el.tagName.toLowerCase() + ': '
                 + (el.textContent || el.getAttribute('alt') || '').trim().slice(0, 50);
    if (r.left < -1 || r.right > vw + 1)
      out.push(what + ' (its box spans ' + Math.round(r.left) + '..' + Math.round(r.right)
               + ' px)');
    else if (el.tagName === 'PRE' && el.scrollWidth > el.clientWidth + 4)
      out.push(what + ' (' + (el.scrollWidth - el.clientWidth) + ' px of its lines hidden, '
               + 'behind a sideways scroll)');
  }
  for (const cell of document.querySelectorAll('.bd-article td, .bd-article th')) {
    const text = cell.textContent.trim();
    if (cell.scrollWidth > cell.clientWidth + 2)
      out.push('cut off: a table cell: ' + text.slice(0, 50) + ' (its text runs '
               + (cell.scrollWidth - cell.clientWidth) + ' px past the cell)');
    else if (cell.clientWidth < 48 && text.split(/\s+/).some(word => word.length >= 8))
      out.push('squeezed: a table cell: ' + text.slice(0, 50) + ' (' + cell.clientWidth
               + ' px wide)');
  }
  for (const bar of document.querySelectorAll('.bd-sidebar-primary, .bd-sidebar-secondary')) {
    const box = bar.getBoundingClientRect();
    if (box.width > 0 && getComputedStyle(bar).visibility !== 'hidden'
        && bar.scrollWidth > bar.clientWidth + 1)
      out.push('cut off: the ' + (bar.classList.contains('bd-sidebar-primary') ? 'left' : 'right')
               + ' sidebar: ' + (bar.scrollWidth - bar.clientWidth) + ' px of its entries run '
               + 'past its edge');
  }
  const article = document.querySelector('.bd-article');
  return {cut: out, text: article ? article.getBoundingClientRect().width : vw, vw: vw};
})()"""


class Page:
    """One browser tab, driven over the DevTools protocol."""

    def __init__(self, ws_url):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events = []
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(method)
        self.resize(WIDTH)

    def resize(self, width, height=None):
        """A viewport `width` px wide: a phone's (touch, mobile layout) below 800 px."""
        self.width = width
        self.height = height or HEIGHTS.get(width, HEIGHT)
        mobile = width < 800
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=self.height,
                  deviceScaleFactor=1, mobile=mobile)
        self.call("Emulation.setTouchEmulationEnabled", enabled=mobile)

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, msg in enumerate(self.events):
                if msg.get("method") == method:
                    del self.events[i]
                    return msg
            self.ws.settimeout(max(0.1, deadline - time.time()))
            try:
                self.events.append(json.loads(self.ws.recv()))
            except Exception:
                break
            finally:
                self.ws.settimeout(60)
        raise TimeoutError("no %s within %d s" % (method, timeout))

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def open(self, url, settle=0.6):
        """Load `url`; return the console errors and failed loads it produced."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        time.sleep(settle)
        self.call("Runtime.evaluate", expression="1")  # drain what arrived meanwhile
        return [e for e in map(console_error, self.events) if e]

    def screenshot(self, path, limit=16000):
        """The whole page (up to `limit` px tall) as a PNG at `path`."""
        width, height = self.width, self.height
        full = min(int(self.evaluate("document.documentElement.scrollHeight")), limit)
        self.call("Page.captureScreenshot", format="png")  # settle the layout first
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": width, "height": full,
                               "scale": 1})["data"]
        self.resize(width, height)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


def console_error(msg):
    method, params = msg.get("method"), msg.get("params", {})
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        return "console.%s: %s" % (params["type"], " ".join(
            str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
    if method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        return "uncaught: %s" % details.get("exception", {}).get("description",
                                                                 details.get("text", ""))
    if method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        entry = params["entry"]
        return "%s: %s %s" % (entry.get("source"), entry.get("text"), entry.get("url", ""))
    return None


def serve(root):
    handler = functools.partial(_QuietHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def start_chromium(binary, profile):
    proc = subprocess.Popen(
        [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-dev-shm-usage", "--remote-debugging-port=0", "--user-data-dir=" + profile,
         "--window-size=%d,%d" % (WIDTH, HEIGHT), "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.time() + 60
    while not os.path.exists(port_file) or not open(port_file).read().strip():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError("%s did not start (exit status %s)" % (binary, proc.poll()))
        time.sleep(0.2)
    port = int(open(port_file).read().split()[0])
    targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
    page = next(t for t in targets if t.get("type") == "page")
    return proc, page["webSocketDebuggerUrl"]


def pages_of(site):
    for folder, dirs, files in os.walk(site):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_static", "_sources", "_images")))
        for name in sorted(files):
            if name.endswith(".html"):
                yield os.path.relpath(os.path.join(folder, name), site)


class _Anchors(html.parser.HTMLParser):
    """A page's anchors (ids, and <a name>) and the links of its <a href>s."""

    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def broken_links(site):
    """Every link of every page of the site (the source pages under _modules/ included)
    that leads to no file of the site, or to a page without its #anchor: "PAGE: HREF"."""
    pages = {}
    for folder, dirs, files in os.walk(site):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                parser = _Anchors()
                with open(path, encoding="utf-8") as f:
                    parser.feed(f.read())
                pages[os.path.relpath(path, site).replace(os.sep, "/")] = parser
    broken = []
    for rel, page in sorted(pages.items()):
        for href in page.links:
            url = urllib.parse.urlsplit(href)
            if url.scheme or url.netloc or href.startswith("//"):
                continue  # another site's: not this check's
            target = rel
            if url.path:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(rel),
                                                           urllib.parse.unquote(url.path)))
                if target.endswith("/") or os.path.isdir(os.path.join(site, target)):
                    target = posixpath.join(target, "index.html")
            if target not in pages:
                if not os.path.isfile(os.path.join(site, target)):
                    broken.append("%s: %s (no such file)" % (rel, href))
                continue
            fragment = urllib.parse.unquote(url.fragment)
            if fragment and fragment not in pages[target].ids:
                broken.append("%s: %s (no such anchor)" % (rel, href))
    return broken


def check_search(page, base, word="to_device"):
    page.open(base + "search.html?q=" + word)
    deadline = time.time() + 20
    links = []
    while time.time() < deadline:
        links = page.evaluate("Array.from(document.querySelectorAll('#search-results li a'))"
                              ".map(a => a.textContent)") or []
        if links:
            break
        time.sleep(0.3)
    if not any(word in link for link in links):
        return ["search for %r found %s" % (word, links[:5] or "nothing")]
    print("search %r: %d results, first %r" % (word, len(links), links[0]))
    return []


def layout_problems(page):
    """What reads badly on the page open in `page`, at its viewport's width."""
    problems = []
    width = page.evaluate("document.documentElement.scrollWidth")
    if width is None or width > page.width:
        problems.append("the page is %s px wide, more than the %d px viewport"
                        % (width, page.width))
    probe = page.evaluate(LAYOUT_PROBE) or {"cut": [], "text": page.width}
    problems += probe["cut"]
    least = TEXT_MIN.get(page.width, 0.5) * page.width
    if probe["text"] < least:
        problems.append("the text column is %d px wide, less than %d px"
                        % (probe["text"], least))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site")
    parser.add_argument("--chromium", default=shutil.which("chromium")
                        or shutil.which("chromium-browser") or shutil.which("google-chrome"))
    parser.add_argument("--screenshots", metavar="DIR")
    parser.add_argument("--shot", action="append", default=[], metavar="PAGE",
                        help="also screenshot this page (a path in the site, e.g. install.html)")
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)),
                        help="viewport widths to check and screenshot at, in px "
                        "(default %(default)s)")
    args = parser.parse_args(argv)
    if not args.chromium:
        parser.error("no chromium found (apt-get install chromium, or --chromium PATH)")
    if not os.path.exists(os.path.join(args.site, "index.html")):
        parser.error("%s has no index.html: build the site first" % args.site)
    try:
        widths = [int(w) for w in args.widths.split(",")]
    except ValueError:
        parser.error("--widths takes numbers separated by commas, not %r" % args.widths)
    if any(w < 200 for w in widths):
        parser.error("--widths: each width must be at least 200 px")
    failures = ["link %s" % b for b in broken_links(args.site)]
    print("links of every page checked (the source pages' too): %d broken" % len(failures))
    server, base = serve(args.site)
    profile = tempfile.mkdtemp(prefix="docs_check.")
    proc, ws_url = start_chromium(args.chromium, profile)
    try:
        page = Page(ws_url)
        pages = list(pages_of(args.site))
        for width in widths:
            page.resize(width)
            for rel in pages:
                errors = page.open(base + rel)
                errors += layout_problems(page)
                failures += ["%s at %d px: %s" % (rel, width, e) for e in errors]
        print("%d pages opened at %s px, %d problems"
              % (len(pages), " and ".join(map(str, widths)), len(failures)))
        page.resize(widths[0])
        failures += check_search(page, base)
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            for width in widths:
                page.resize(width)
                for rel in DEFAULT_SHOTS + args.shot:
                    page.open(base + rel, settle=1.0)
                    path = os.path.join(args.screenshots, "%s-%d.png"
                                        % (rel.replace("/", "_")[:-5], width))
                    page.screenshot(path)
                    print("screenshot:", path)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    for line in failures:
        print("FAILED", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
