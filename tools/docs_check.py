"""Check the built documentation site in headless Chromium, as a reader's browser sees it.

    python3 tools/docs_check.py SITE [--screenshots DIR] [--chromium PATH]

SITE is Sphinx's HTML output (python -m sphinx -W -b html docs SITE). The site is served
over HTTP on 127.0.0.1 and every page is opened in a 1280 x 900 viewport through the
Chrome DevTools protocol. A page fails if it logs a console error or an uncaught exception,
if a resource it loads fails, or if it is wider than the viewport (a horizontal scrollbar
on the page itself: tables and code blocks scroll inside their own boxes). The search page
must find `to_device`. With --screenshots, full-page PNGs of the index, a guide page and an
API page (and any --shot PAGE) are written to DIR.

Needs Chromium (Debian's `chromium`) and the websocket-client package. Exits 1 on any
failure, listing each.
"""
import argparse
import base64
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

WIDTH, HEIGHT = 1280, 900
DEFAULT_SHOTS = ["index.html", "guide/kernels.html", "reference/memory.html"]


class Page:
    """One browser tab, driven over the DevTools protocol."""

    def __init__(self, ws_url):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events = []
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(method)
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                  deviceScaleFactor=1, mobile=False)

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

    def screenshot(self, path):
        height = min(int(self.evaluate("document.documentElement.scrollHeight")), 6000)
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=height,
                  deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                  deviceScaleFactor=1, mobile=False)
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site")
    parser.add_argument("--chromium", default=shutil.which("chromium")
                        or shutil.which("chromium-browser") or shutil.which("google-chrome"))
    parser.add_argument("--screenshots", metavar="DIR")
    parser.add_argument("--shot", action="append", default=[], metavar="PAGE",
                        help="also screenshot this page (a path in the site, e.g. install.html)")
    args = parser.parse_args(argv)
    if not args.chromium:
        parser.error("no chromium found (apt-get install chromium, or --chromium PATH)")
    if not os.path.exists(os.path.join(args.site, "index.html")):
        parser.error("%s has no index.html: build the site first" % args.site)
    server, base = serve(args.site)
    profile = tempfile.mkdtemp(prefix="docs_check.")
    proc, ws_url = start_chromium(args.chromium, profile)
    failures = []
    try:
        page = Page(ws_url)
        pages = list(pages_of(args.site))
        for rel in pages:
            errors = page.open(base + rel)
            width = page.evaluate("document.documentElement.scrollWidth")
            if width is None or width > WIDTH:
                errors.append("the page is %s px wide, more than the %d px viewport"
                              % (width, WIDTH))
            failures += ["%s: %s" % (rel, e) for e in errors]
        print("%d pages opened, %d problems" % (len(pages), len(failures)))
        failures += check_search(page, base)
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            for rel in DEFAULT_SHOTS + args.shot:
                page.open(base + rel, settle=1.0)
                path = os.path.join(args.screenshots, rel.replace("/", "_")[:-5] + ".png")
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
