"""The per-turn and write surfaces before and after a change, measured side by side.

Usage: .venv/bin/python scripts/bench_surfaces.py [--before REF] [--after REF]
                                                  [--docs N] [--runs N] [--write]

``--before REF`` (default 03fd7bb, the last commit before the operation table)
and the working tree (or ``--after REF``) are each installed into a throwaway
venv in the temp directory. One forest of about ``--docs`` documents is
generated as ``bench_scale.py`` does and copied, and each side indexes its own
copy. Then, for ``--runs`` rounds, each round runs every command once per side,
alternating which side goes first, and records process wall time:

- ``retrieve``: ``memory-forest retrieve ROOT QUERY --json``
- ``gate``: ``memory-forest gate ROOT`` with the turn on stdin
- ``gate_hook``: ``python -P -m memory_forest gate ROOT``, the command that
  ``hooks install`` writes
- ``remember``: ``memory-forest remember ROOT --tree t --branch b --leaf lN
  --content ... --json``, a new leaf each round

It also counts the lines of ``src/`` on each side and finds the largest module.
Prints JSON on stdout (progress goes to stderr); ``--write`` also puts the
table into docs/benchmarks.md between its ``bench_surfaces`` markers.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import re
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import tomllib
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from bench_scale import Zipf, backdate, percentile, plan_trees, question_set, vocabulary
from docblock import write_block
from forestgen import write_forest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_surfaces:begin -->", "<!-- bench_surfaces:end -->"
DEFAULT_BEFORE = "03fd7bb"
TOOLS = ("retrieve", "gate", "gate_hook", "remember")
CONTENT_FROM_RANK = 500  # gate turns use content words, as bench_gate.py's do
# Children run as an installed package runs: with bytecode caches, and importing only
# their own side (a PYTHONPATH would put one side's source in front of the other's).
CHILD_ENV = {k: v for k, v in os.environ.items()
             if k not in {"PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONHOME"}}


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def git(*args: str) -> bytes:
    proc = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


@dataclass
class Side:
    name: str
    label: str  # the ref as given, or "working tree"
    commit: str
    source: Path  # the directory holding src/ and pyproject.toml
    venv: Path
    root: Path  # this side's copy of the forest

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def script(self) -> str:
        return str(self.venv / "bin" / "memory-forest")


def export(ref: str, into: Path) -> Path:
    """The ref's src/ and pyproject.toml, written out without touching the work tree."""
    archive = git("archive", "--format=tar", ref, "src", "pyproject.toml")
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def install(side: Side, workdir: Path) -> dict[str, str]:
    """A venv that runs the side's source, with this interpreter's packages as its deps.

    No build backend and no package index are needed, so it works offline; both
    sides are installed the same way (their source first on sys.path, like an
    editable install), so only the code differs. Dependencies this interpreter
    lacks (a package the other side dropped) are installed next to the venv.
    Returns the dependency versions the side runs with.
    """
    run([sys.executable, "-m", "venv", "--without-pip", str(side.venv)])
    project = tomllib.loads((side.source / "pyproject.toml").read_text(encoding="utf-8"))
    names = [re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req).group(0)
             for req in project["project"]["dependencies"]]
    deps = sorted({site_dir(sys.executable, key) for key in ("purelib", "platlib")})
    write_pth(side, deps)
    versions = dependency_versions(side, names)
    missing = [req for req, name in zip(project["project"]["dependencies"], names, strict=True)
               if versions[name] is None]
    if missing:
        extra = workdir / f"{side.name}-deps"
        progress(f"installing {', '.join(missing)} for {side.name}")
        run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(extra), *missing])
        write_pth(side, [str(extra), *deps])
        versions = dependency_versions(side, names)
    module, _, function = project["project"]["scripts"]["memory-forest"].partition(":")
    script = Path(side.script)
    script.write_text(
        f"#!{side.python}\nimport re\nimport sys\nfrom {module} import {function}\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        f"    sys.exit({function}())\n", encoding="utf-8")
    script.chmod(0o755)
    found = run([side.python, "-c", "import memory_forest; print(memory_forest.__file__)"])
    if not Path(found.decode().strip()).is_relative_to(side.source / "src"):
        sys.exit(f"{side.name}: memory_forest imports from {found.decode().strip()}")
    return versions


def site_dir(python: str, key: str) -> str:
    code = f"import sysconfig; print(sysconfig.get_paths()[{key!r}])"
    return run([python, "-c", code]).decode().strip()


def write_pth(side: Side, deps: list[str]) -> None:
    lines = [str(side.source / "src"), *deps]
    pth = Path(site_dir(side.python, "purelib")) / "bench_surfaces.pth"
    pth.write_text("\n".join(lines) + "\n", encoding="utf-8")


def dependency_versions(side: Side, names: list[str]) -> dict[str, str | None]:
    code = ("import importlib.metadata as m, json, sys\n"
            "def version(name):\n"
            "    try:\n        return m.version(name)\n"
            "    except m.PackageNotFoundError:\n        return None\n"
            "print(json.dumps({name: version(name) for name in sys.argv[1:]}))")
    return json.loads(run([side.python, "-c", code, *names]))


def run(argv: list[str], stdin: bytes = b"", timeout: float = 600) -> bytes:
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=CHILD_ENV,
                          timeout=timeout, check=False)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv[:4])} ...\n"
                 f"{proc.stderr.decode(errors='replace')[-2000:]}")
    return proc.stdout


def timed(side: Side, tool: str, argv: list[str], stdin: bytes = b"") -> float:
    """Wall milliseconds of one process; a failure stops the benchmark."""
    started = time.perf_counter()
    out = run(argv, stdin, timeout=120)
    wall = (time.perf_counter() - started) * 1000
    if not json.loads(out).get("ok"):
        sys.exit(f"{side.name} {tool} failed: {out[:500]!r}")
    return wall


def command(side: Side, tool: str, round_no: int, text: str) -> tuple[list[str], bytes]:
    root = str(side.root)
    if tool == "retrieve":
        return [side.script, "retrieve", root, text, "--json"], b""
    if tool == "gate":
        return [side.script, "gate", root], text.encode("utf-8")
    if tool == "gate_hook":
        return [side.python, "-P", "-m", "memory_forest", "gate", root], text.encode("utf-8")
    return [side.script, "remember", root, "--tree", "t", "--branch", "b",
            "--leaf", f"l{round_no}", "--content", text, "--json"], b""


def prepare_forest(workdir: Path, docs: int, sides: list[Side], rng: random.Random,
                   zipf: Zipf) -> int:
    """One generated forest, copied for each side and indexed there by that side."""
    template = workdir / "template"
    progress(f"generating about {docs} documents")
    written = write_forest(template, plan_trees(docs, zipf, rng))
    backdate(template, 3600)  # as a forest in use: no file inside the racy-mtime window
    for side in sides:
        shutil.copytree(template, side.root, symlinks=True)
        progress(f"indexing with {side.name}")
        run([side.script, "index", str(side.root), "--full", "--json"])
    shutil.rmtree(template)
    return written


def measure(sides: list[Side], runs: int, rng: random.Random, zipf: Zipf) -> dict:
    queries = question_set(zipf, rng, runs + 1)
    content = zipf.words[CONTENT_FROM_RANK:]
    turns = [" ".join(rng.sample(content, rng.randint(3, 8))) + "?" for _ in range(runs + 1)]
    facts = [zipf.text(30) for _ in range(runs + 1)]
    texts = {"retrieve": queries, "gate": turns, "gate_hook": turns, "remember": facts}
    walls: dict[str, dict[str, list[float]]] = {t: {s.name: [] for s in sides} for t in TOOLS}
    for side in sides:  # warm up: bytecode, page cache, and remember's new tree and branch
        for tool in TOOLS:
            timed(side, tool, *command(side, tool, 0, texts[tool][0]))
    for round_no in range(1, runs + 1):
        progress(f"round {round_no}/{runs}")
        order = sides if round_no % 2 else sides[::-1]
        for tool in TOOLS:
            for side in order:
                argv, stdin = command(side, tool, round_no, texts[tool][round_no])
                walls[tool][side.name].append(timed(side, tool, argv, stdin))
    return {tool: {name: {"p50_ms": round(statistics.median(values), 1),
                          "p95_ms": round(percentile(values, 0.95), 1)}
                   for name, values in per_side.items()}
            for tool, per_side in walls.items()}


def source_files(side: Side, from_work_tree: bool) -> list[Path]:
    if not from_work_tree:
        return sorted((side.source / "src").rglob("*.py"))
    # What the next commit would hold: tracked files still there, and new unignored ones.
    listed = git("ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "src")
    return sorted(path for rel in set(listed.decode().split("\0")) if rel.endswith(".py")
                  and (path := REPO / rel).is_file())


def source_lines(side: Side, from_work_tree: bool) -> dict:
    counts = {}
    non_blank = 0
    for path in source_files(side, from_work_tree):
        lines = path.read_text(encoding="utf-8").splitlines()
        counts[path.relative_to(side.source).as_posix()] = len(lines)
        non_blank += sum(1 for line in lines if line.strip())
    largest = max(counts, key=counts.__getitem__)
    return {"modules": len(counts), "lines": sum(counts.values()), "non_blank": non_blank,
            "largest_module": {"path": largest, "lines": counts[largest]}}


def describe(ref: str | None) -> tuple[str, str]:
    """The side's label and commit; the working tree is HEAD plus its changes."""
    if ref is not None:
        return ref, git("rev-parse", "--short", "--verify", f"{ref}^{{commit}}").decode().strip()
    head = git("rev-parse", "--short", "HEAD").decode().strip()
    dirty = git("status", "--porcelain", "--untracked-files=normal", "--", "src",
                "pyproject.toml").strip()
    return "working tree", head + ("+changes" if dirty else "")


def bench(before: str, after: str | None, docs: int, runs: int) -> dict:
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="mf-surfaces-"))
    try:
        sides = []
        for name, ref in (("before", before), ("after", after)):
            label, commit = describe(ref)
            source = REPO if ref is None else export(ref, workdir / name / "source")
            sides.append(Side(name, label, commit, source, workdir / name / "venv",
                              workdir / name / "forest"))
        report: dict = {"documents": 0, "runs": runs, "sides": {}}
        for side in sides:
            progress(f"installing {side.name}: {side.label} ({side.commit})")
            report["sides"][side.name] = {
                "ref": side.label, "commit": side.commit,
                "dependencies": install(side, workdir),
                "src": source_lines(side, from_work_tree=side.source == REPO),
            }
        rng = random.Random(20261130)
        zipf = Zipf(vocabulary(20_000, rng), rng)
        report["documents"] = prepare_forest(workdir, docs, sides, rng, zipf)
        report["wall"] = measure(sides, runs, rng, zipf)
        report["machine"] = {"cpus": os.cpu_count(), "arch": platform.machine(),
                             "system": platform.system(), "python": platform.python_version(),
                             "sqlite": sqlite3.sqlite_version}
        report["date"] = date.today().isoformat()
        report["seconds"] = round(time.perf_counter() - started, 1)
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


ROWS = {
    "retrieve": "`memory-forest retrieve ROOT QUERY --json`",
    "gate": "`memory-forest gate ROOT`, turn on stdin",
    "gate_hook": "`python -P -m memory_forest gate ROOT` (what `hooks install` writes)",
    "remember": "`memory-forest remember ROOT ... --json`, a new leaf",
}


def name_of(side: dict) -> str:
    name = "working tree" if side["ref"] == "working tree" else f"`{side['ref']}`"
    return name if side["ref"] == side["commit"] else f"{name} ({side['commit']})"


def table(report: dict) -> list[str]:
    sides = [report["sides"][name] for name in ("before", "after")]
    rows = ["| process wall, ms, p50 / p95 | "
            + " | ".join(f"{name}: {name_of(side)}" for name, side in zip(
                ("before", "after"), sides, strict=True)) + " |",
            "|---|---|---|"]
    for tool, label in ROWS.items():
        cells = [f"{wall['p50_ms']:.0f} / {wall['p95_ms']:.0f}"
                 for wall in (report["wall"][tool]["before"], report["wall"][tool]["after"])]
        rows.append(f"| {label} | {' | '.join(cells)} |")
    src = [side["src"] for side in sides]
    rows += [
        "| lines in `src/`: non-blank / total | "
        + " | ".join(f"{s['non_blank']:,} / {s['lines']:,}" for s in src) + " |",
        "| Python modules in `src/` | " + " | ".join(str(s["modules"]) for s in src) + " |",
        "| largest module, lines | " + " | ".join(
            f"`{s['largest_module']['path']}`, {s['largest_module']['lines']}" for s in src) + " |",
    ]
    return rows


def machine_note(report: dict) -> str:
    machine = report["machine"]
    return textwrap.fill(
        f"Measured {report['date']} on {machine['cpus']} vCPUs ({machine['arch']}, "
        f"{machine['system']}) of a shared VM, Python {machine['python']}, SQLite "
        f"{machine['sqlite']}: {report['runs']} processes per command and side on "
        f"{report['documents']:,} documents, the sides interleaved (each round runs every "
        "command once per side, alternating which side goes first). On a shared machine "
        "compare the medians (p50); p95 is the nearest-rank 95th percentile.", width=78)


def write_docs(report: dict, argv: list[str]) -> None:
    command = shlex.join([".venv/bin/python", "scripts/bench_surfaces.py", *argv])
    block = "\n".join([BEGIN, machine_note(report), "", "```console", f"$ {command}", "```", "",
                       *table(report), END])
    write_block(DOCS, BEGIN, END, block)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git ref of the before side")
    parser.add_argument("--after", help="git ref of the after side (default: the working tree)")
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--write", action="store_true",
                        help="also write the table into docs/benchmarks.md")
    args = parser.parse_args()
    if args.runs < 1 or args.docs < 1:
        parser.error("--runs and --docs must be at least 1")
    report = bench(args.before, args.after, args.docs, args.runs)
    print(json.dumps(report, indent=2))
    if args.write:
        write_docs(report, sys.argv[1:])


if __name__ == "__main__":
    main()
