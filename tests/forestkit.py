"""Test helpers: build valid forests on the real filesystem, snapshot and compare them.

Everything here writes files the way an operator's editor would (private
modes, frontmatter, the parent wikilink) and reads results through public
interfaces only, so the tests exercise the same paths a user does.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from memory_forest import operations

DIR_MODE = 0o700
FILE_MODE = 0o600
STATE_DIR = ".memory-forest"
INDEX = Path(STATE_DIR) / "index.sqlite3"

WORDS = (
    "tomato basil pepper cucumber lettuce spinach kale carrot onion garlic ginger thyme "
    "sage rosemary mint oregano parsley cilantro fennel radish beet squash pumpkin melon "
    "bean pea lentil barley oat rye wheat compost mulch trellis seedling harvest pruning "
    "watering valve pump filter tank pipe hose nozzle gauge sensor timer schedule pressure "
    "humidity shade vent heater fan window door bench shelf crate label jar brine vinegar "
    "pickle ferment sourdough starter yeast flour oven loaf crust crumb dough proof knead"
).split()


# --- writing files --------------------------------------------------------------------------


def write_file(root: Path, rel: str, data: bytes) -> None:
    """Write ``root/rel`` with private modes, creating private parent directories."""
    parent = root
    for part in rel.split("/")[:-1]:
        parent = parent / part
        if not parent.exists():
            os.mkdir(parent, DIR_MODE)
            os.chmod(parent, DIR_MODE)
    path = root / rel
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.write(fd, data)
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def parent_target(rel: str) -> str | None:
    """The wikilink target of a structured document's immediate parent."""
    parts = rel[:-3].split("/")
    if parts[0] == "02 ltm":
        return "01 xltm/XLTM"
    if parts[0] == "03 mtm":
        return f"02 ltm/{parts[1]}_LTM"
    if parts[0] == "04 stm":
        return f"03 mtm/{parts[1]}/{parts[2]}"
    return None


def render_doc(rel: str, title: str, body: str, doc_id: str | None = None,
               status: str = "active") -> bytes:
    meta = [f"title: {json.dumps(title, ensure_ascii=False)}", f'status: "{status}"']
    if doc_id is not None:
        meta.insert(0, f"id: {json.dumps(doc_id)}")
    up = parent_target(rel)
    up_line = f"Up: [[{up}]]\n\n" if up else ""
    text = "---\n" + "\n".join(meta) + f"\n---\n# {title}\n\n{up_line}{body}\n"
    return text.encode("utf-8")


def write_doc(root: Path, rel: str, title: str, body: str = "", doc_id: str | None = None,
              status: str = "active") -> None:
    write_file(root, rel, render_doc(rel, title, body, doc_id, status))


def new_forest(parent: Path, name: str = "forest", example: bool = False) -> Path:
    root = parent / name
    operations.init(root, example=example)
    return root


# A small garage-and-kitchen forest for the semantic tests: "tires" reaches the tyre leaf
# only through the dense side, since no leaf spells it that way.
TYRE = "04 stm/garage/bicycle/tyre-pressure.md"
GARAGE = {
    "bicycle": {
        "tyre-pressure": "The rear tyre loses air overnight; pump it to 4 bar before "
                         "every ride.",
        "chain-care": "Oil the chain every 200 km with dry lube.",
    },
    "car": {"winter-service": "Book the winter service in October: oil change and "
                              "brake check."},
}
GARAGE_AND_KITCHEN = {
    "garage": GARAGE,
    "kitchen": {"fermentation": {"kimchi": "Keep the kimchi at 4 degrees; taste it after "
                                           "five days."}},
}


def skeleton(parent: Path, trees: dict[str, dict[str, dict[str, str]]],
             name: str = "forest") -> Path:
    """A forest from ``{tree: {branch: {leaf: body}}}``; titles are the capitalized names."""
    root = new_forest(parent, name)
    write_doc(root, "01 xltm/XLTM.md", "Root map", "The list of trees.", "xltm")
    for tree, branches in trees.items():
        write_doc(root, f"02 ltm/{tree}_LTM.md", tree.capitalize(), "", f"ltm-{tree}")
        for branch, leaves in branches.items():
            write_doc(root, f"03 mtm/{tree}/{branch}.md", branch.capitalize(), "",
                      f"mtm-{tree}-{branch}")
            for leaf, body in leaves.items():
                write_doc(root, f"04 stm/{tree}/{branch}/{leaf}.md", leaf.capitalize(), body,
                          f"stm-{tree}-{branch}-{leaf}")
    return root


# --- a random forest that can be mutated ------------------------------------------------------


@dataclass
class Doc:
    title: str
    body: str
    doc_id: str
    status: str = "active"


@dataclass
class RandomForest:
    """A forest on disk mirrored by a model, changed by seeded random edits.

    Every write stamps an explicit mtime far in the past (distinct per write),
    so files the index saw before are old enough for it to reuse their parse.
    ``broken`` holds the files a breaking mutation spoiled (bad frontmatter, bytes
    that are not UTF-8): the ones indexing must quarantine until a later write fixes
    them. A lateral link breaks only a link rule: its file stays indexed.
    """

    root: Path
    rng: random.Random
    docs: dict[str, Doc] = field(default_factory=dict)
    clock_ns: int = field(default_factory=lambda: time.time_ns() - 10 * 86_400 * 10**9)
    serial: int = 0
    broken: set[str] = field(default_factory=set)

    # writing

    def put(self, rel: str, doc: Doc) -> None:
        self.docs[rel] = doc
        self.broken.discard(rel)
        write_file(self.root, rel, render_doc(rel, doc.title, doc.body, doc.doc_id, doc.status))
        self.stamp(rel)

    def stamp(self, rel: str) -> None:
        self.clock_ns += 1_000_000_000
        os.utime(self.root / rel, ns=(self.clock_ns, self.clock_ns))

    def new_id(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}-{self.serial}"

    def words(self, low: int, high: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(low, high)))

    def populate(self, trees: int = 3, branches: int = 3, leaves: int = 4) -> None:
        self.put("01 xltm/XLTM.md", Doc("Root map", self.words(5, 15), "xltm"))
        for t in range(trees):
            tree = f"tree{t}"
            self.put(f"02 ltm/{tree}_LTM.md", Doc(f"Tree {t}", self.words(5, 30),
                                                   self.new_id("ltm")))
            for b in range(branches):
                self.add_branch(tree, f"branch{b}", leaves)

    def add_branch(self, tree: str, branch: str, leaves: int) -> None:
        self.put(f"03 mtm/{tree}/{branch}.md", Doc(f"{branch} of {tree}", self.words(5, 30),
                                                    self.new_id("mtm")))
        for _ in range(leaves):
            self.add_leaf(tree, branch)

    def add_leaf(self, tree: str, branch: str) -> str:
        rel = f"04 stm/{tree}/{branch}/leaf{self.serial + 1}.md"
        self.put(rel, Doc(f"Leaf {self.words(1, 3)}", self.words(10, 80), self.new_id("stm")))
        return rel

    # queries on the model

    def of_layer(self, layer: str) -> list[str]:
        return sorted(rel for rel in self.docs if rel.startswith(layer))

    def leaves_of(self, tree: str, branch: str) -> list[str]:
        return self.of_layer(f"04 stm/{tree}/{branch}/")

    def branches(self) -> list[tuple[str, str]]:
        return [tuple(rel[len("03 mtm/"):-3].split("/")) for rel in self.of_layer("03 mtm/")]

    # mutations: each returns nothing; compare the disk before and after to see what changed

    def mutate(self, count: int, breaking: bool = False) -> None:
        """``breaking`` adds edits that spoil a file (and the edits above fix it again)."""
        actions = [self.edit_body, self.edit_same_size, self.retitle, self.set_status,
                   self.touch, self.new_leaf, self.new_branch, self.delete_leaf,
                   self.delete_branch, self.rename_leaf, self.rename_branch]
        if breaking:
            actions += [self.break_frontmatter, self.break_utf8, self.link_sideways]
        for _ in range(count):
            self.rng.choice(actions)()

    def _any(self, prefix: str = "0") -> str:
        return self.rng.choice(sorted(rel for rel in self.docs if rel.startswith(prefix)))

    def edit_body(self) -> None:
        rel = self._any()
        doc = self.docs[rel]
        self.put(rel, Doc(doc.title, self.words(10, 80), doc.doc_id, doc.status))

    def edit_same_size(self) -> None:
        """Change one letter: same size, different bytes, newer mtime."""
        rel = self._any()
        doc = self.docs[rel]
        body = doc.body
        spot = self.rng.randrange(len(body))
        swapped = "x" if body[spot] != "x" else "y"
        self.put(rel, Doc(doc.title, body[:spot] + swapped + body[spot + 1:], doc.doc_id,
                          doc.status))

    def retitle(self) -> None:
        rel = self._any()
        doc = self.docs[rel]
        self.put(rel, Doc(f"Renamed {self.words(1, 2)}", doc.body, doc.doc_id, doc.status))

    def set_status(self) -> None:
        rel = self._any("04 stm/")
        doc = self.docs[rel]
        status = self.rng.choice(["active", "superseded", "archived"])
        self.put(rel, Doc(doc.title, doc.body, doc.doc_id, status))

    def touch(self) -> None:
        """New mtime, same bytes."""
        self.stamp(self._any())

    def new_leaf(self) -> None:
        self.add_leaf(*self.rng.choice(self.branches()))

    def new_branch(self) -> None:
        tree = self._any("02 ltm/")[len("02 ltm/"):-len("_LTM.md")]
        self.serial += 1
        self.add_branch(tree, f"branch-new{self.serial}", self.rng.randint(1, 3))

    def break_frontmatter(self) -> None:
        """A hand edit that leaves YAML unparsable."""
        self.spoil(self._any(), b"---\ntitle: [unclosed\n---\n# Broken\n")

    def break_utf8(self) -> None:
        """Bytes that are not UTF-8 (a binary pasted over a note), words readable among them."""
        self.spoil(self._any(), b"\xff\xfe binary habanero \x00\x01 gloves\n")

    def link_sideways(self) -> None:
        """A "see also" link from one leaf to another: lateral, forbidden by validate and
        audit, yet indexed (a link rule never keeps a readable document out)."""
        leaves = self.of_layer("04 stm/")
        if len(leaves) < 2:
            return
        rel, other = self.rng.sample(leaves, 2)
        doc = self.docs[rel]
        data = render_doc(rel, doc.title, doc.body, doc.doc_id, doc.status)
        write_file(self.root, rel, data + f"\nSee also [[{other[:-3]}]]\n".encode())
        self.stamp(rel)
        self.broken.discard(rel)

    def spoil(self, rel: str, data: bytes) -> None:
        write_file(self.root, rel, data)
        self.stamp(rel)
        self.broken.add(rel)

    def moved(self, old: str, new: str) -> None:
        """A rename keeps the bytes, and so whether the file is broken."""
        self.docs[new] = self.docs.pop(old)
        if old in self.broken:
            self.broken.discard(old)
            self.broken.add(new)

    def delete_leaf(self) -> None:
        leaves = self.of_layer("04 stm/")
        if len(leaves) > 1:
            rel = self.rng.choice(leaves)
            (self.root / rel).unlink()
            del self.docs[rel]
            self.broken.discard(rel)

    def delete_branch(self) -> None:
        if len(self.branches()) < 2:
            return
        tree, branch = self.rng.choice(self.branches())
        for rel in [*self.leaves_of(tree, branch), f"03 mtm/{tree}/{branch}.md"]:
            (self.root / rel).unlink()
            del self.docs[rel]
            self.broken.discard(rel)
        if (self.root / "04 stm" / tree / branch).exists():
            os.rmdir(self.root / "04 stm" / tree / branch)

    def rename_leaf(self) -> None:
        rel = self._any("04 stm/")
        self.serial += 1
        new = rel.rsplit("/", 1)[0] + f"/moved{self.serial}.md"
        os.rename(self.root / rel, self.root / new)
        self.moved(rel, new)

    def rename_branch(self) -> None:
        """Move a branch: its MTM file, its leaf folder, and each leaf's parent link."""
        tree, branch = self.rng.choice(self.branches())
        self.serial += 1
        new_branch = f"renamed{self.serial}"
        old_mtm, new_mtm = f"03 mtm/{tree}/{branch}.md", f"03 mtm/{tree}/{new_branch}.md"
        os.rename(self.root / old_mtm, self.root / new_mtm)
        self.moved(old_mtm, new_mtm)
        old_dir = self.root / "04 stm" / tree / branch
        if old_dir.exists():
            os.rename(old_dir, self.root / "04 stm" / tree / new_branch)
        for rel in [r for r in self.docs if r.startswith(f"04 stm/{tree}/{branch}/")]:
            doc = self.docs.pop(rel)
            self.broken.discard(rel)
            self.put(f"04 stm/{tree}/{new_branch}/{rel.rsplit('/', 1)[1]}", doc)


# --- observing a forest ---------------------------------------------------------------------


def canonical_state(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file and directory outside ``.memory-forest``: bytes, mtime_ns and mode.

    A directory is keyed by its path with a trailing ``/`` and recorded as
    ``(b"", 0, mode)``: its existence and mode are part of the state (a rollback
    must remove the directories it created), its mtime is not (any file created
    and removed inside it moves the mtime, and a rollback does exactly that).
    """
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == STATE_DIR:
            dirnames.clear()
            continue
        if rel_dir != ".":
            found[rel_dir + "/"] = (b"", 0, stat.S_IMODE(os.lstat(dirpath).st_mode))
        for name in filenames:
            path = Path(dirpath) / name
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            found[rel] = (path.read_bytes(), st.st_mtime_ns, stat.S_IMODE(st.st_mode))
    return found


def canonical_files(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """``canonical_state`` without the directories."""
    return {rel: value for rel, value in canonical_state(root).items() if not rel.endswith("/")}


def file_digest(root: Path, rel: str) -> tuple[bytes, int]:
    path = root / rel
    return path.read_bytes(), os.stat(path).st_mtime_ns


def index_rows(root: Path) -> tuple[list[tuple], list[tuple]]:
    """All ``docs`` rows (without rowid) and all full-text rows, keyed by document path."""
    con = sqlite3.connect(f"{(root / INDEX).as_uri()}?mode=ro", uri=True)
    try:
        docs = con.execute(
            "SELECT path, layer, layer_number, tree, branch, leaf, parent_path, doc_id, title,"
            " status, sha256, size, mtime_ns, facts FROM docs ORDER BY path").fetchall()
        terms = con.execute(
            "SELECT d.path, t.title, t.path, t.body FROM terms t JOIN docs d"
            " ON d.rowid = t.rowid ORDER BY d.path").fetchall()
        orphans = con.execute(
            "SELECT count(*) FROM terms WHERE rowid NOT IN (SELECT rowid FROM docs)").fetchone()
    finally:
        con.close()
    assert orphans == (0,), "full-text rows without a document"
    return docs, terms


def quarantine_rows(root: Path) -> list[tuple]:
    """The index's quarantined files: path, size, mtime, route-ness and id, with their
    problems (as stored, sorted)."""
    con = sqlite3.connect(f"{(root / INDEX).as_uri()}?mode=ro", uri=True)
    try:
        held = con.execute("SELECT path, size, mtime_ns, routed, doc_id FROM quarantine"
                           " ORDER BY path").fetchall()
        problems = con.execute("SELECT path, issue FROM problems ORDER BY path, issue").fetchall()
    finally:
        con.close()
    return [(*row, [issue for path, issue in problems if path == row[0]]) for row in held]


def set_meta(root: Path, key: str, value: str) -> None:
    con = sqlite3.connect(root / INDEX)
    try:
        with con:
            con.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    finally:
        con.close()


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# --- reading a hook context -------------------------------------------------------------------


def hook_context(answer: dict) -> tuple[str, dict]:
    """A hook answer's context split into its prose line and its JSON (checked to be whole)."""
    prose, data = answer["hookSpecificOutput"]["additionalContext"].split("\n", 1)
    return prose, json.loads(data)


def tree_nodes(data: dict) -> list[dict]:
    """Every node of a hook context's trail tree, parents before their children."""
    nodes, stack = [], list(reversed(data["untrusted"]["tree"]))
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(node.get("under", [])))
    return nodes


def trail_ends(data: dict) -> dict[int, str]:
    """Trail rank -> the path of the node that trail ends at."""
    return {node["trail"]: node["path"] for node in tree_nodes(data) if "trail" in node}


# A writer killed mid-commit, as SQLite sees it: a transaction that deleted every row, with a
# one-page cache so the changed pages spill into the database file before the commit, then
# SIGKILL. What is left is a hot journal and a half-written index.
_KILLED_WRITER = """
import os, signal, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA cache_size=1")
con.execute("BEGIN")
for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
    try:
        con.execute(f'DELETE FROM "{name}"')
    except sqlite3.DatabaseError:
        pass  # a virtual table's shadow tables are emptied through the table itself
os.kill(os.getpid(), signal.SIGKILL)
"""


def leave_hot_journal(root: Path) -> None:
    """Kill a writer of ``root``'s index mid-commit; assert it left a hot journal."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(root / INDEX)],
                          capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr
    journal = root / STATE_DIR / "index.sqlite3-journal"
    assert journal.stat().st_size > 0
