"""End to end: the browse site of the example forest plus a hostile leaf, in headless Chromium.

Chromium is driven two ways, both without extra Python packages:

- ``--dump-dom`` (the DOM after the page's scripts ran) for the query-string prefill
  of the search box;
- the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (JSON messages on
  file descriptors 3 and 4) to load pages, type into the search box, click a graph
  node, read the DOM with ``Runtime.evaluate`` and take screenshots.

Skipped only when no ``chromium`` binary is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from memory_forest import operations
from memory_forest.browse import browse
from memory_forest.safety import makedirs_private, write_private

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium binary on PATH (Debian: apt-get install -y chromium); .ci/run installs it",
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--mute-audio", "--window-size=1280,1400"]
TIMEOUT = 60.0

OBSIDIAN_LEAF = "04 stm/kitchen/fermentation/hot-sauce.md"
# As an Obsidian user writes a note: a callout, an embed, tags, a sibling link, no Up: line.
OBSIDIAN = """# Hot sauce

> [!warning] Gloves
> Wear habanero gloves when cutting.

![[04 stm/kitchen/fermentation/kimchi-batch-7]]

Batch notes #fermentation #hot-sauce, next to [[kimchi-batch-7]].
"""
HOSTILE_LEAF = "04 stm/kitchen/fermentation/hostile-notes.md"
HOSTILE = """---
id: "stm-hostile"
title: "Hostile <script>document.title='pwned'</script>"
status: "active"
---
# Hostile notes

Up: [[03 mtm/kitchen/fermentation|Fermentation]]

<script>document.title='pwned';document.body.appendChild(document.createElement('p')).id='pwned'</script>

<img src=x onerror="document.body.appendChild(document.createElement('p')).id='pwned'">

<iframe srcdoc="<script>parent.document.title='pwned'</script>"></iframe>

[click me](javascript:document.body.appendChild(document.createElement('p')).id='pwned')
"""


# --- the site ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("chromium")
    root = base / "forest"
    operations.init(root, example=True)
    makedirs_private(root, HOSTILE_LEAF.rsplit("/", 1)[0])
    write_private(root / HOSTILE_LEAF, HOSTILE.encode("utf-8"))
    out = base / "site"
    assert browse(root, out)["ok"]
    return out


def url(site: Path, rel: str, query: str = "") -> str:
    return "file://" + quote(str(site / rel)) + query


# --- a minimal DevTools Protocol client over --remote-debugging-pipe -------------------------


class Chrome:
    def __init__(self, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: its fd 3 reads our commands, fd 4 carries replies
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def close(self) -> None:
        try:
            self.send("Browser.close", browser=True, timeout=10)
        except Exception:  # noqa: BLE001 - best effort; the process is killed below anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, *, browser: bool = False, timeout: float = TIMEOUT,
             **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session and not browser:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        while True:
            event = self._read(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def open_tab(self) -> None:
        target = self.send("Target.createTarget", browser=True, url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", browser=True, targetId=target,
                                 flatten=True)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Log.enable")

    def goto(self, address: str) -> None:
        self.events.clear()
        self.send("Page.navigate", url=address)
        self.wait_event("Page.loadEventFired")
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + TIMEOUT
        while self.js("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError("page did not finish loading")
            time.sleep(0.05)

    def js(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        texts = []
        for event in self.events:
            if event.get("method") == "Log.entryAdded":
                entry = event["params"]["entry"]
                if entry.get("level") == "error":
                    texts.append(entry.get("text", ""))
            elif event.get("method") == "Runtime.exceptionThrown":
                texts.append(json.dumps(event["params"])[:300])
        return texts


@pytest.fixture(scope="module")
def chrome(tmp_path_factory: pytest.TempPathFactory):
    browser = Chrome(tmp_path_factory.mktemp("chromium-profile"))
    try:
        browser.open_tab()
        yield browser
    finally:
        browser.close()


# --- PNG check without Pillow ----------------------------------------------------------------


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG into rows of raw pixel bytes."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, idat, header = 8, [], None
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset:offset + 4])
        kind = data[offset + 4:offset + 8]
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        offset += 12 + length
    assert header is not None
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + previous[i]) & 0xFF
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, bpp, rows


def assert_not_blank(path: Path) -> None:
    assert path.stat().st_size > 5_000, "screenshot is suspiciously small"
    width, bpp, rows = png_pixels(path)
    colours: dict[bytes, int] = {}
    for row in rows[::4]:  # every fourth row is plenty to tell a page from a blank
        for x in range(0, width * bpp, bpp * 2):
            pixel = row[x:x + 3]
            colours[pixel] = colours.get(pixel, 0) + 1
    total = sum(colours.values())
    background = max(colours.values())
    assert len(colours) > 16, "screenshot has almost no distinct colours"
    assert total - background > total * 0.01, "screenshot is nearly one colour"


# --- the checks ------------------------------------------------------------------------------


def test_index_lists_layers_and_search_box_filters(site: Path, chrome: Chrome,
                                                   tmp_path: Path) -> None:
    chrome.goto(url(site, "index.html"))
    layers = chrome.js("Array.from(document.querySelectorAll('table.layers tbody tr'))"
                       ".map(r => [r.cells[0].textContent, r.cells[3].textContent])")
    assert layers == [["00 life_archive", "1"], ["01 xltm", "1"], ["02 ltm", "2"],
                      ["03 mtm", "2"], ["04 stm", "5"], ["05 daily", "1"], ["06 istm", "1"]]
    visible = "Array.from(document.querySelectorAll('#docs tbody tr')).filter(r => !r.hidden)" \
              ".map(r => r.cells[0].textContent)"
    assert len(chrome.js(visible)) == 13
    chrome.js("document.getElementById('filter').focus()")
    chrome.send("Input.insertText", text="kimchi")
    assert chrome.js(visible) == ["Kimchi batch 7"]
    assert chrome.js("document.getElementById('filter-count').textContent") == "1 of 13 shown"
    chrome.js("(() => { const f = document.getElementById('filter'); f.select(); })()")
    chrome.send("Input.insertText", text="04 stm/greenhouse")
    assert sorted(chrome.js(visible)) == ["Drip retrofit, November 2026", "Tomato leaf spots"]
    chrome.js("(() => { const f = document.getElementById('filter'); f.select(); })()")
    chrome.send("Input.insertText", text="no such document anywhere")
    assert chrome.js(visible) == []
    chrome.goto(url(site, "index.html"))
    assert_not_blank(chrome.screenshot(tmp_path / "index.png"))
    assert not chrome.console_errors()


def test_search_prefilled_from_query_string_in_dump_dom(site: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000",
         "--dump-dom", url(site, "index.html", "?q=kimchi")],
        capture_output=True, text=True, timeout=TIMEOUT, check=True)
    rows = _rows(result.stdout)
    shown = [key for key, hidden in rows if not hidden]
    assert len(rows) == 13 and len(shown) == 1 and "kimchi batch 7" in shown[0]
    assert "1 of 13 shown" in result.stdout


def _rows(dom: str) -> list[tuple[str, bool]]:
    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[tuple[str, bool]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            data = dict(attrs)
            if tag == "tr" and "data-key" in data:
                self.rows.append((data["data-key"] or "", "hidden" in data))

    parser = Rows()
    parser.feed(dom)
    return parser.rows


def test_leaf_page_shows_trail_and_backlinks(site: Path, chrome: Chrome) -> None:
    chrome.goto(url(site, "doc/04 stm/kitchen/fermentation/kimchi-batch-7.html"))
    trail = chrome.js("Array.from(document.querySelectorAll('nav.trail li'))"
                      ".map(li => li.textContent.trim())")
    assert trail == ["XLTM Forest root map", "LTM Kitchen", "MTM Fermentation",
                     "STM Kimchi batch 7"]
    backlinks = chrome.js("Array.from(document.querySelectorAll('section.backlinks a'))"
                          ".map(a => a.textContent)")
    assert backlinks == ["Fermentation"]
    chrome.js("document.querySelector('nav.trail a').click()")
    chrome.wait_event("Page.loadEventFired")
    chrome.wait_ready()
    assert chrome.js("location.pathname").endswith("/doc/01%20xltm/XLTM.html")
    assert chrome.js("document.querySelector('h1').textContent") == "Forest root map"


def test_an_obsidian_note_shows_its_callout_embed_and_tags(tmp_path: Path,
                                                           chrome: Chrome) -> None:
    root, site = tmp_path / "forest", tmp_path / "site"
    operations.init(root, example=True)
    (root / OBSIDIAN_LEAF).write_text(OBSIDIAN, encoding="utf-8")  # by hand, the user's mode
    assert browse(root, site)["ok"]
    chrome.goto(url(site, "doc/04 stm/kitchen/fermentation/hot-sauce.html"))
    callout = chrome.js("(() => { const box = document.querySelector('article .callout');"
                        " const style = getComputedStyle(box);"
                        " return [box.className, box.querySelector('.callout-title').textContent,"
                        " style.borderLeftWidth, style.borderLeftStyle]; })()")
    assert callout == ["callout callout-warning", "Gloves", "4px", "solid"]
    embed = chrome.js("(() => { const a = document.querySelector('article a.embed');"
                      " return [a.textContent, decodeURIComponent(a.pathname)]; })()")
    assert embed[1].endswith("/doc/04 stm/kitchen/fermentation/kimchi-batch-7.html"), embed
    # An embed is a link: nothing of the other file is inlined, nothing is fetched.
    assert chrome.js("document.querySelectorAll('article img, article iframe').length") == 0
    tags = chrome.js("Array.from(document.querySelectorAll('article .tag'))"
                     ".map(t => t.textContent)")
    assert [tag.lstrip("#") for tag in tags] == ["fermentation", "hot-sauce"]


def test_graph_has_one_node_per_document_and_a_click_opens_it(site: Path, chrome: Chrome,
                                                              tmp_path: Path) -> None:
    chrome.goto(url(site, "graph.html"))
    count = chrome.js("document.querySelectorAll('#graph circle.node').length")
    assert count == 12  # 11 example documents + the hostile leaf; ISTM is not a document
    titles = chrome.js("Array.from(document.querySelectorAll('#graph circle.node title'))"
                       ".map(t => t.textContent)")
    assert len(set(titles)) == 12
    assert chrome.js("document.querySelector('#graph path.edge.own').getAttribute('d').length") > 0
    assert_not_blank(chrome.screenshot(tmp_path / "graph.png"))
    box = chrome.js("""(() => {
        const link = Array.from(document.querySelectorAll('#graph a'))
          .find(a => a.querySelector('title').textContent.startsWith('Kimchi batch 7'));
        const r = link.querySelector('circle').getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2, r.width];
    })()""")
    x, y, width = box
    assert width > 2
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        chrome.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                    clickCount=1 if kind != "mouseMoved" else 0)
    chrome.wait_event("Page.loadEventFired")
    chrome.wait_ready()
    assert chrome.js("location.pathname").endswith("/kimchi-batch-7.html")
    assert not chrome.console_errors()


def test_no_script_from_memory_content_ran(site: Path, chrome: Chrome, tmp_path: Path) -> None:
    for rel in ("doc/04 stm/kitchen/fermentation/hostile-notes.html", "index.html", "graph.html",
                "doc/03 mtm/kitchen/fermentation.html", "layer-04-stm.html"):
        chrome.goto(url(site, rel))
        assert chrome.js("document.getElementById('pwned') === null"), rel
        title = chrome.js("document.title")
        assert title != "pwned" and title.endswith(" · Memory Forest"), rel  # a script sets "pwned"
        assert chrome.js("document.querySelectorAll('iframe, img, object, embed').length") == 0
        assert chrome.js("Array.from(document.scripts).every(s => s.type === 'application/json'"
                         " || s.src.endsWith('/assets/browse.js'))"), rel
    chrome.goto(url(site, "doc/04 stm/kitchen/fermentation/hostile-notes.html"))
    assert chrome.js("document.title").startswith("Hostile <script>")  # shown as text
    assert "document.title='pwned'" in chrome.js("document.querySelector('h1').textContent")
    hrefs = chrome.js("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    assert not any(h.lower().startswith(("javascript:", "data:", "vbscript:")) for h in hrefs)
    assert_not_blank(chrome.screenshot(tmp_path / "hostile.png"))
