"""browse: rendering, link resolution, escaping of hostile memory, output directory rules."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import run_cli

from memory_forest import operations
from memory_forest.browse import browse
from memory_forest.browse.safehtml import render_markdown, safe_href, section_id
from memory_forest.errors import ForestError
from memory_forest.safety import makedirs_private, write_private

HOSTILE_LEAF = "04 stm/kitchen/fermentation/hostile-notes.md"
HOSTILE = """---
id: "stm-hostile"
title: "</title><script>document.title='pwned'</script>"
status: "active"
tags:
  - "<img src=x onerror=alert(1)>"
note: {"k": "</script><script>alert(1)</script>"}
---
# Hostile notes <script>document.title='pwned'</script>

Up: [[03 mtm/kitchen/fermentation|<b onmouseover=alert(1)>Fermentation</b>]]

<script>document.title='pwned';document.body.appendChild(document.createElement('p')).id='pwned'</script>

<img src=x onerror="document.body.appendChild(document.createElement('p')).id='pwned'">

<iframe src="javascript:alert(1)"></iframe> <svg onload=alert(1)></svg>

Inline <span onclick=alert(1)>raw</span> and <a href="javascript:alert(1)">raw link</a>.

[x](javascript:alert(1)) [y](JaVaScRiPt:alert(1)) [z](data:text/html;base64,PHNjcmlwdD4=)
[w](vbscript:msgbox(1)) [t](&#106;avascript:alert(1)) [n](java%0Ascript:alert(1))
[f](file:///etc/passwd) [u](../../../../etc/passwd) [p](//evil.example/x)
![img](javascript:alert(1)) <javascript:alert(1)> [ok](https://example.org/a?b=1&c=2)

[[javascript:alert(1)]] [[03 mtm/kitchen/fermentation|"><script>alert(1)</script>]]

`[[03 mtm/kitchen/fermentation]]` stays code.
"""


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def forest(tmp_path: Path) -> Path:
    root = tmp_path / "forest"
    operations.init(root, example=True)
    return root


def plant(root: Path, rel: str, text: str) -> None:
    makedirs_private(root, rel.rsplit("/", 1)[0])
    write_private(root / rel, text.encode("utf-8"))


def page(out: Path, rel: str) -> str:
    return (out / rel).read_text(encoding="utf-8")


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    found = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            st = os.lstat(path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            found[str(path.relative_to(root))] = (digest, st.st_mtime_ns, stat.S_IMODE(st.st_mode))
    return found


class Tags(HTMLParser):
    """Every start tag with its attributes, plus the text of JSON islands."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.islands: list[str] = []
        self._island = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = dict(attrs)
        self.tags.append((tag, data))
        self._island = tag == "script" and data.get("type") == "application/json"

    def handle_endtag(self, tag: str) -> None:
        self._island = False

    def handle_data(self, data: str) -> None:
        if self._island:
            self.islands.append(data)


def parse(html: str) -> Tags:
    parser = Tags()
    parser.feed(html)
    return parser


def assert_inert(html: str) -> Tags:
    """No markup from memory can run: only our own external script, no handlers, no schemes."""
    parsed = parse(html)
    for tag, attrs in parsed.tags:
        assert tag not in ("iframe", "img", "object", "embed", "frame", "base", "form"), tag
        assert tag != "svg" or attrs.get("id") == "graph", attrs  # only the empty graph canvas
        if tag == "script":
            src = attrs.get("src") or ""
            ours = attrs.get("type") == "application/json" or src.endswith("assets/browse.js")
            assert ours, attrs
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in ("style", "srcdoc", "formaction"), (tag, name)
            if name in ("href", "src", "action"):
                compact = "".join((value or "").split()).lower()
                assert not compact.startswith(("javascript:", "data:", "vbscript:", "file:", "//"))
                assert ":" not in compact.split("/")[0] or compact.startswith(
                    ("http:", "https:", "mailto:")), value
    metas = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv")]
    assert metas and "script-src 'self'" in (metas[0].get("content") or "")
    return parsed


# --- the site for the example forest ---------------------------------------------------------


def test_example_site_has_every_page_and_private_modes(forest: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    outcome = browse(forest, out)
    assert outcome["ok"] and outcome["operation"] == "browse"
    assert outcome["documents"] == 11 and outcome["issues"] == {"errors": 0, "warnings": 0}
    assert outcome["out"] == "site" and outcome["entry"] == "index.html"
    expected = {"index.html", "graph.html", "issues.html", "assets/browse.js", "assets/browse.css",
                "doc/04 stm/kitchen/fermentation/kimchi-batch-7.html",
                "doc/06 istm/2026-11-28.html", "doc/05 daily/2026-11-28.html",
                "doc/01 xltm/XLTM.html", "layer-04-stm.html", "layer-06-istm.html"}
    written = set()
    for folder, _dirs, names in os.walk(out):
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700, folder
        for name in names:
            path = Path(folder) / name
            assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600, path
            written.add(str(path.relative_to(out)))
    assert expected <= written
    assert outcome["files"] == len(written)
    assert not any(name.endswith(".tmp") for name in written)


def test_index_lists_layers_counts_root_map_and_documents(forest: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    browse(forest, out)
    html = page(out, "index.html")
    parsed = assert_inert(html)
    for dirname in ("00 life_archive", "01 xltm", "02 ltm", "03 mtm", "04 stm", "05 daily",
                    "06 istm"):
        assert f">{dirname}</a>" in html
    assert '<td class="num">4</td>' in html  # four STM leaves
    rows = [a for t, a in parsed.tags if t == "tr" and "data-key" in a]
    assert len(rows) == 12
    assert any("kimchi batch 7" in (a["data-key"] or "") for a in rows)
    assert 'class="rootmap"' in html and ">Greenhouse</a>" in html and "2 leaves" in html
    assert 'id="filter"' in html and html.count("<script") == 1  # the external script only


def test_leaf_page_shows_trail_properties_body_and_backlinks(forest: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    browse(forest, out)
    html = page(out, "doc/04 stm/kitchen/fermentation/kimchi-batch-7.html")
    assert_inert(html)
    trail = html[html.index('<nav class="trail"'):html.index("</nav>", html.index('class="trail"'))]
    order = [trail.index(name) for name in ("Forest root map", ">Kitchen<", ">Fermentation<",
                                            "Kimchi batch 7")]
    assert order == sorted(order)
    assert 'href="../../../01%20xltm/XLTM.html"' in trail
    assert 'href="../../../03%20mtm/kitchen/fermentation.html"' in trail
    assert "<th>sources</th>" in html and "<th>tags</th>" in html
    # the sources entry links to the event row of the ISTM page
    assert 'href="../../../06%20istm/2026-11-28.html#e-evt-20261128-0003"' in html
    backlinks = html[html.index('class="backlinks"'):]
    assert "Fermentation" in backlinks
    assert "배추김치" in html  # UTF-8 text survives
    istm = page(out, "doc/06 istm/2026-11-28.html")
    assert 'id="e-evt-20261128-0003"' in istm and "Cited by" in istm and "Kimchi batch 7" in istm


def test_every_page_has_backlinks_section_and_mtm_lists_its_leaves(
        forest: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    browse(forest, out)
    for path in (out / "doc").rglob("*.html"):
        assert 'class="backlinks"' in path.read_text(encoding="utf-8"), path
    mtm = page(out, "doc/03 mtm/kitchen/fermentation.html")
    back = mtm[mtm.index('class="backlinks"'):]
    assert "Kimchi batch 7" in back and "Za&#x27;atar blend" in back and ">Kitchen<" in back
    assert "Owns (2)" in mtm


def test_daily_and_istm_views(forest: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    plant(forest, "06 istm/events.jsonl",
          '{"event_id":"e1","observed_at":"2026-11-29T00:00:00Z","captured_at":"x","source":'
          '"<script>s</script>","kind":"k","payload":{"html":"<img src=x onerror=alert(1)>"}}\n'
          "not json <script>alert(1)</script>\n")
    browse(forest, out)
    daily = page(out, "layer-05-daily.html")
    assert "Daily 2026-11-28" in daily
    istm = page(out, "doc/06 istm/events.html")
    assert_inert(istm)
    assert "&lt;img src=x onerror=alert(1)&gt;" in istm
    assert 'class="bad"' in istm and "not json &lt;script&gt;" in istm
    table = page(out, "doc/06 istm/2026-11-28.html")
    for column in ("event_id", "observed_at", "source", "kind", "payload"):
        assert f"<th>{column}</th>" in table
    assert table.count("<tr id=") == 3


def test_graph_data_has_one_node_per_markdown_document(forest: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    browse(forest, out)
    parsed = assert_inert(page(out, "graph.html"))
    data = json.loads(parsed.islands[0])
    paths = [node[4] for node in data["nodes"]]
    assert len(paths) == len(set(paths)) == 11
    assert not any(path.startswith("06 istm") for path in paths)
    index = {path: number for number, path in enumerate(paths)}
    leaf, branch = "04 stm/kitchen/fermentation/kimchi-batch-7.md", "03 mtm/kitchen/fermentation.md"
    assert [index[leaf], index[branch]] in data["own"]
    archive = "00 life_archive/2025-first-greenhouse-season.md"
    assert [index[archive], index["01 xltm/XLTM.md"]] in data["link"]
    for node in data["nodes"]:
        assert (out / node[5].replace("%20", " ")).is_file()


def test_browse_changes_no_canonical_byte(forest: Path, tmp_path: Path) -> None:
    before = snapshot(forest)
    browse(forest, tmp_path / "site")
    assert snapshot(forest) == before


# --- hostile memory --------------------------------------------------------------------------


def test_hostile_body_produces_no_executable_markup(forest: Path, tmp_path: Path) -> None:
    plant(forest, HOSTILE_LEAF, HOSTILE)
    out = tmp_path / "site"
    browse(forest, out)
    html = page(out, "doc/" + HOSTILE_LEAF[:-3] + ".html")
    parsed = assert_inert(html)
    assert "<script>" not in html and "</script><script>" not in html
    assert "&lt;script&gt;document.title=" in html  # shown as text
    hrefs = [a.get("href") for t, a in parsed.tags if t == "a"]
    assert "https://example.org/a?b=1&c=2" in hrefs
    assert "[x](javascript:alert(1))" in html  # refused links stay literal text
    assert 'class="wikilink broken"' in html  # [[javascript:...]] resolves to nothing
    assert "<code>[[03 mtm/kitchen/fermentation]]</code>" in html
    assert "&lt;b onmouseover=alert(1)&gt;Fermentation&lt;/b&gt;" in html
    for rel in ("index.html", "graph.html", "layer-04-stm.html",
                "doc/03 mtm/kitchen/fermentation.html"):
        other = assert_inert(page(out, rel))
        for island in other.islands:
            assert "<" not in island and ">" not in island and "&" not in island
            json.loads(island)
    title_data = json.loads(parse(page(out, "graph.html")).islands[0])
    assert any(node[3].startswith("</title><script>") for node in title_data["nodes"])


def test_markdown_links_keep_only_safe_schemes() -> None:
    assert safe_href("https://example.org") and safe_href("mailto:a@b.c") and safe_href("#x")
    for url in ("javascript:alert(1)", " JAVASCRIPT:x", "java\tscript:x", "data:text/html,x",
                "vbscript:x", "file:///etc/passwd", "../x", "x.html", "//evil/x",
                "\x01javascript:x"):
        assert not safe_href(url), url
    html = render_markdown(
        "[a](javascript:alert(1)) [b](https://ok.example) ![i](https://t.example/p.png)",
        lambda target, heading: None)
    assert 'href="https://ok.example"' in html and 'rel="noopener noreferrer nofollow"' in html
    assert "javascript" not in html.split("[a]")[0] and "<img" not in html


def test_wikilinks_resolve_relative_and_stay_text_in_code() -> None:
    seen = []

    def resolve(target: str, heading: str | None) -> str | None:
        seen.append((target, heading))
        if target == "03 mtm/t/b":
            return "../b.html" + (f"#{section_id(heading)}" if heading else "")
        return None

    body = ("See [[03 mtm/t/b#Leaves|the branch]] and [[03 mtm/t/b]].\n\n"
            "`[[03 mtm/t/b]]` \\[\\[03 mtm/t/b]] [x [[03 mtm/t/b]]](https://a.example)\n\n"
            "```\n[[03 mtm/t/b]]\n```\n\n    [[03 mtm/t/b]]\n\n[[missing/x|gone]]\n\n## Leaves\n")
    html = render_markdown(body, resolve)
    assert '<a href="../b.html#s-Leaves" class="wikilink">the branch</a>' in html
    assert '<a href="../b.html" class="wikilink">03 mtm/t/b</a>' in html
    assert "<code>[[03 mtm/t/b]]</code>" in html
    assert "<pre><code>[[03 mtm/t/b]]\n</code></pre>" in html
    assert html.count('class="wikilink"') == 2  # not in code, escapes or inside another link
    assert '<span class="wikilink broken" title="unresolved: missing/x">gone</span>' in html
    assert '<h2 id="s-Leaves">Leaves</h2>' in html
    assert ("missing/x", None) in seen


def test_obsidian_callouts_embeds_and_tags_render_safely() -> None:
    def resolve(target: str, heading: str | None) -> str | None:
        return "../b.html" if target == "03 mtm/t/b" else None

    body = ("> [!Warning]- Hot **peppers** <script>x</script>\n> Wear #gloves.\n\n"
            "> [!tip]\n\n> a plain quote [!note]\n\n"
            "![[03 mtm/t/b]] ![[https://evil.example/p.png]] ![[photo.png]]\n\n"
            "#fermentation #kitchen/jars, not #1, C#, `#code` or [a #link](https://a.example)\n")
    html = render_markdown(body, resolve)
    assert '<div class="callout callout-warning">\n<div class="callout-title">Hot ' \
           "<strong>peppers</strong> &lt;script&gt;x&lt;/script&gt;</div>" \
           '<p>Wear <span class="tag">#gloves</span>.</p>\n</div>' in html
    assert '<div class="callout callout-tip">\n<div class="callout-title">Tip</div></div>' in html
    assert "<blockquote>\n<p>a plain quote [!note]</p>" in html
    # An embed is a link to the page: no file is inlined, no request leaves the page.
    assert ('<a href="../b.html" class="wikilink embed" title="embedded: 03 mtm/t/b">'
            "03 mtm/t/b</a>") in html
    assert '<span class="wikilink broken" title="unresolved: https://evil.example/p.png">' in html
    assert '<span class="wikilink broken" title="unresolved: photo.png">' in html
    assert "<img" not in html and "<iframe" not in html and "<script" not in html
    assert '<span class="tag">#fermentation</span> <span class="tag">#kitchen/jars</span>' in html
    assert html.count('class="tag"') == 3  # not "#1", "C#", code or a link's text
    assert "<code>#code</code>" in html and ">a #link</a>" in html


def test_frontmatter_table_escapes_keys_and_values(forest: Path, tmp_path: Path) -> None:
    plant(forest, "04 stm/kitchen/fermentation/odd-props.md",
          '---\n"<k>": "<v>"\nnumbers: [1, 2]\nwhen: 2026-11-28\nnested: {a: "<b>"}\n'
          "empty: []\n---\nUp: [[03 mtm/kitchen/fermentation]]\n")
    out = tmp_path / "site"
    browse(forest, out)
    html = page(out, "doc/04 stm/kitchen/fermentation/odd-props.html")
    assert_inert(html)
    assert "<th>&lt;k&gt;</th><td>&lt;v&gt;</td>" in html
    assert "<td>2026-11-28</td>" in html
    assert "&lt;b&gt;" in html and "(empty list)" in html


def test_broken_and_unusual_files_still_get_pages(forest: Path, tmp_path: Path) -> None:
    plant(forest, "04 stm/kitchen/fermentation/bad-yaml.md", "---\ntitle: [unclosed\n---\nbody\n")
    plant(forest, "04 stm/kitchen/fermentation/latin1.md", "placeholder")
    (forest / "04 stm/kitchen/fermentation/latin1.md").write_bytes(b"caf\xe9 <script>")
    plant(forest, "04 stm/orphan-tree/lost-branch/leaf.md", "# Leaf without parents\n")
    out = tmp_path / "site"
    outcome = browse(forest, out)
    assert outcome["ok"] and outcome["issues"]["errors"] > 0
    assert "not well-formed YAML" in page(out, "doc/04 stm/kitchen/fermentation/bad-yaml.html")
    assert "not valid UTF-8" in page(out, "doc/04 stm/kitchen/fermentation/latin1.html")
    orphan = page(out, "doc/04 stm/orphan-tree/lost-branch/leaf.html")
    assert 'title="missing parent">02 ltm/orphan-tree_LTM.md' in orphan
    issues = page(out, "issues.html")
    assert "parent_missing" in issues and "not_utf8" in issues


# --- the output directory --------------------------------------------------------------------


def refused(root: Path, out: Path) -> str:
    with pytest.raises(ForestError) as caught:
        browse(root, out)
    return caught.value.code


def test_out_inside_the_forest_is_refused(forest: Path, tmp_path: Path) -> None:
    before = snapshot(forest)
    assert refused(forest, forest / "site") == "browse_out_inside_forest"
    assert refused(forest, forest) == "browse_out_inside_forest"
    assert refused(forest, forest / "04 stm" / "site") == "browse_out_inside_forest"
    link = tmp_path / "alias"
    link.symlink_to(forest)
    assert refused(forest, link / "site") == "browse_out_inside_forest"
    assert snapshot(forest) == before


def test_out_must_be_new_or_empty_real_directory(forest: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    assert refused(forest, full) == "browse_out_not_empty"
    assert (full / "keep.txt").read_text() == "mine"
    target = tmp_path / "empty-target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    assert refused(forest, link) == "browse_out_symlink"
    assert list(target.iterdir()) == []
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert refused(forest, afile) == "browse_out_not_directory"
    assert refused(forest, tmp_path / "no" / "such" / "site") == "browse_out_parent_missing"
    assert not (tmp_path / "no").exists()


def test_empty_existing_directory_is_used_and_made_private(forest: Path, tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir(mode=0o755)
    os.chmod(out, 0o755)
    assert browse(forest, out)["ok"]
    assert stat.S_IMODE(os.lstat(out).st_mode) == 0o700
    assert (out / "index.html").is_file()


def test_missing_root_fails_before_touching_out(tmp_path: Path) -> None:
    with pytest.raises(ForestError) as caught:
        browse(tmp_path / "nope", tmp_path / "site")
    assert caught.value.code == "root_missing"
    assert not (tmp_path / "site").exists()


def test_failed_generation_leaves_no_partial_site(forest: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_forest.browse import pages

    def boom(*args: object) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(pages, "graph_page", boom)
    out = tmp_path / "site"
    with pytest.raises(RuntimeError):
        browse(forest, out)
    assert not out.exists()
    empty = tmp_path / "given"
    empty.mkdir()
    with pytest.raises(RuntimeError):
        browse(forest, empty)
    assert empty.is_dir() and list(empty.iterdir()) == []


def test_failed_regeneration_leaves_the_old_site(forest: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_forest.browse import pages

    out = tmp_path / "site"
    browse(forest, out)
    before = snapshot(out)

    def boom(*args: object) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(pages, "graph_page", boom)
    with pytest.raises(RuntimeError):
        browse(forest, out)
    assert snapshot(out) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["forest", "site"]


# --- a killed build ---------------------------------------------------------------------------


def big_forest(parent: Path) -> Path:
    """About 500 documents: long enough to build that a kill lands mid-build."""
    from forestkit import skeleton

    body = "Notes on the batch, the brine and the jars. " * 12 + "\n"
    trees = {f"t{i}": {f"b{j}": {f"leaf-{k}": body for k in range(60)} for j in range(4)}
             for i in range(2)}
    return skeleton(parent, trees)


def kill_mid_build(root: Path, out: Path) -> None:
    """Start a real ``browse``; SIGKILL it once its build folder holds pages."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "memory_forest", "browse", str(root),
                             "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None:
            if any((build / "doc").is_dir() for build in build_folders(out)):
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.002)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "browse ended before it could be killed"


def build_folders(out: Path) -> list[Path]:
    return [path for path in out.parent.iterdir() if path.name.startswith(f".{out.name}.")]


def test_a_killed_first_build_leaves_nothing_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    root = big_forest(tmp_path)
    out = tmp_path / "site"
    kill_mid_build(root, out)
    assert not out.exists()  # never a partial site at the output path
    [left] = build_folders(out)  # the killed run's build folder, beside it and hidden
    assert browse(root, out)["ok"]
    assert (out / "index.html").is_file() and build_folders(out) == []


def test_a_killed_regeneration_leaves_the_old_site(tmp_path: Path) -> None:
    root = big_forest(tmp_path)
    out = tmp_path / "site"
    browse(root, out)
    before = snapshot(out)
    kill_mid_build(root, out)
    assert snapshot(out) == before
    assert browse(root, out)["regenerated"] is True
    assert build_folders(out) == []


def test_a_build_folder_of_a_live_run_is_left_alone(forest: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "site"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        running = tmp_path / ".site.abcd1234.new"
        running.mkdir()
        (running / ".memory-forest-building").write_text(f"{live.pid}\n")
        unclaimed = tmp_path / ".site.young123.new"  # no pid yet, and just made
        unclaimed.mkdir()
        dead = tmp_path / ".site.dead1234.new"
        dead.mkdir()
        (dead / ".memory-forest-building").write_text("garbage\n")
        os.utime(dead, ns=(0, 0))  # unreadable pid and long past the grace period
        other = tmp_path / ".site.notours.tmp"
        other.mkdir()
        assert browse(forest, out)["ok"]
        assert sorted(p.name for p in build_folders(out)) == sorted(
            [running.name, unclaimed.name, other.name])  # only the dead run's folder went
    finally:
        live.kill()
        live.wait()
    assert browse(forest, out)["ok"]
    assert sorted(p.name for p in build_folders(out)) == sorted([unclaimed.name, other.name])


def test_an_output_that_appears_during_the_build_is_not_replaced(forest: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    from memory_forest.browse import pages

    out = tmp_path / "site"
    real = pages.graph_page

    def someone_writes_there(*args: object) -> str:
        write_private_file(out / "theirs.txt", b"mine")
        return real(*args)

    monkeypatch.setattr(pages, "graph_page", someone_writes_there)
    assert refused(forest, out) == "browse_out_not_empty"
    assert [p.name for p in out.iterdir()] == ["theirs.txt"]
    assert build_folders(out) == []


# --- regenerating into the same folder -------------------------------------------------------


def test_browse_twice_into_the_same_folder_regenerates_the_site(forest: Path,
                                                                tmp_path: Path) -> None:
    from conftest import run_cli

    plant(forest, "04 stm/kitchen/fermentation/gone-soon.md",
          '---\nid: "stm-gone"\ntitle: "Gone soon"\nstatus: "active"\n---\n# Gone soon\n\n'
          "Up: [[03 mtm/kitchen/fermentation]]\n")
    out = tmp_path / "site"
    first = browse(forest, out)
    assert first["regenerated"] is False
    gone = out / "doc/04 stm/kitchen/fermentation/gone-soon.html"
    assert gone.is_file()
    marker = out / ".memory-forest-site"
    assert stat.S_IMODE(os.lstat(marker).st_mode) == 0o600
    config = json.loads((forest / ".memory-forest/forest.json").read_text())
    assert json.loads(marker.read_text()) | {"version": None} == {
        "tool": "memory-forest", "forest_id": config["forest_id"], "version": None}
    (forest / "04 stm/kitchen/fermentation/gone-soon.md").unlink()

    second = run_cli("browse", forest, "--out", out)
    assert second.code == 0, second.stderr
    assert "(replacing the site browse wrote there before)" in second.stdout
    assert not gone.exists()  # the new site replaced the old one; nothing stale is left
    assert (out / "index.html").is_file() and marker.is_file()
    assert stat.S_IMODE(os.lstat(out).st_mode) == 0o700
    assert sorted(path.name for path in tmp_path.iterdir()) == ["forest", "site"]
    again = run_cli("--json", "browse", forest, "--out", out).json()
    assert again["regenerated"] is True and again["files"] == first["files"] - 1


def test_a_folder_without_a_valid_marker_is_never_replaced(forest: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    browse(forest, site)
    fakes = {"garbage": b"not json\n", "other-tool": b'{"tool":"other"}\n',
             "huge": b'{"tool":"memory-forest","pad":"' + b"x" * 5000 + b'"}'}
    for name, content in fakes.items():
        folder = tmp_path / name
        write_private_file(folder / "notes.txt", b"mine")
        write_private_file(folder / ".memory-forest-site", content)
    linked = tmp_path / "linked"
    write_private_file(linked / "notes.txt", b"mine")
    (linked / ".memory-forest-site").symlink_to(site / ".memory-forest-site")
    folder_marker = tmp_path / "folder-marker"
    (folder_marker / ".memory-forest-site").mkdir(parents=True)
    for folder in [*(tmp_path / name for name in fakes), linked, folder_marker]:
        before = snapshot(folder)
        assert refused(forest, folder) == "browse_out_not_empty", folder.name
        assert snapshot(folder) == before


def write_private_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --- CLI -------------------------------------------------------------------------------------


def test_cli_browse_json_and_human(forest: Path, tmp_path: Path) -> None:
    done = run_cli("--json", "browse", forest, "--out", tmp_path / "site")
    assert done.code == 0, done.stderr
    outcome = done.json()
    assert outcome["ok"] and outcome["operation"] == "browse" and outcome["documents"] == 11
    failed = run_cli("--json", "browse", forest, "--out", forest / "x")
    assert failed.code == 1
    assert failed.json()["error"]["code"] == "browse_out_inside_forest"
    human = run_cli("browse", forest, "--out", tmp_path / "site2")
    assert human.code == 0, human.stderr
    assert "to 'site2'; open its index.html" in " ".join(human.stdout.split())


# --- size ------------------------------------------------------------------------------------


def _bench_module():
    path = Path(__file__).resolve().parents[1] / "scripts" / "bench_browse.py"
    spec = importlib.util.spec_from_file_location("bench_browse", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_generation_is_linear_in_documents(tmp_path: Path) -> None:
    """CPU time and output size grow about linearly (4x documents: far below 16x)."""
    bench = _bench_module()
    figures = []
    for docs in (250, 1000):
        root = tmp_path / f"forest-{docs}"
        bench.generate(root, docs)
        started = time.process_time()
        outcome = browse(root, tmp_path / f"site-{docs}")
        figures.append((time.process_time() - started,
                        (tmp_path / f"site-{docs}" / "graph.html").stat().st_size,
                        (tmp_path / f"site-{docs}" / "index.html").stat().st_size))
        assert outcome["ok"] and outcome["issues"]["errors"] == 0
        assert outcome["documents"] == docs
    (cpu_small, graph_small, index_small), (cpu_big, graph_big, index_big) = figures
    assert cpu_big / cpu_small < 8, figures
    assert graph_big / graph_small < 5 and index_big / index_small < 5, figures
