"""Every scale target on a synthetic forest, for this tool and optionally another, in one run.

Usage: python scripts/bench_scale.py --docs N [--runs R] [--forest DIR] [--other EXE]
                                     [--all] [--queries Q] [--process-queries P] [--keep DIR]

Why this shape: the scale targets compare CLI wall times that move by tens of
percent on a shared 2-core VM, so every CLI measure is the median of --runs
runs, and a comparison with another tool only means something when both run
in the same minutes on the same bytes. With ``--other EXE`` (for example the
reference at /tmp/refvenv/bin/memory-forest) each tool gets its own copy of
one generated forest (both keep their index at ``.memory-forest/index.sqlite3``,
so one copy would collide), and the runs alternate tool by tool, measure by
measure.

Measured with the real CLI (``--json`` first on the line, which both CLIs accept):

- full index (``index ROOT --full``; a tool without ``--full`` always rebuilds,
  so plain ``index ROOT``), and its peak RSS, from ``os.wait4`` on that child
  alone (on Linux the largest resident set of the child or any process it
  waited for, not the sum of a pool's workers);
- one-file incremental ``index`` after sleeping past the 2 s racy-mtime window
  and appending to one leaf (the same leaf and text in every copy);
- no-change ``index`` (after one untimed settling run);
- ``retrieve --json`` and ``gate`` process wall p50 over a fixed query set;
- index size per document;
- this tool only: ``retrieve`` in process, p50/p95 over the query set;
- with ``--all``: ``browse`` and ``maintain`` wall, once each.

A measure the other tool cannot do (no ``gate`` command, a forest over its
file limit) is null with the reason. Prints JSON on stdout and a table on stderr.

``--forest DIR`` generates the forest into DIR/source once, with DIR/stamp.json
recording how, and later runs with the same --docs reuse it (generating 200,000
documents takes minutes); the working copies are made fresh from it each run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forestgen import write_forest

from memory_forest import retrieve

SEED = 20261130
VOCABULARY = 20_000
BRANCHES_PER_TREE = 10
LEAVES_PER_BRANCH = 20
BACKDATE_S = 3600
RACY_WINDOW_S = 2.1  # the index trusts an mtime only when it is 2 s older than the last build
SYLLABLES = ["ka", "lo", "mi", "nu", "ri", "sa", "te", "vo", "zen", "dar", "mel", "kor",
             "pin", "tus", "gra", "bel", "sho", "fi", "qua", "ost"]

# Measure processes as a host runs them: with bytecode caches (some sandboxes disable
# writing them, which would make every start-up recompile the package from source).
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="Runs per CLI measure (median).")
    parser.add_argument("--forest", type=Path,
                        help="Generate the forest here once (with a stamp) and reuse it.")
    parser.add_argument("--other", help="Another memory-forest executable to run side by side.")
    parser.add_argument("--all", action="store_true", help="Also time browse and maintain.")
    parser.add_argument("--queries", type=int, default=200,
                        help="Queries for in-process retrieve.")
    parser.add_argument("--process-queries", type=int, default=20,
                        help="Queries for the retrieve and gate process walls.")
    parser.add_argument("--keep", type=Path,
                        help="Keep this tool's indexed copy at KEEP/forest.")
    args = parser.parse_args()
    report = run(args)
    print(json.dumps(report, indent=2))
    print_table(report, sys.stderr)


def run(args: argparse.Namespace) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="mf-bench-"))
    try:
        source, stamp = prepared_forest(args.forest or workdir / "generated", args.docs)
        tools = [Tool("ours", our_executable())]
        if args.other:
            tools.append(Tool("other", args.other))
        for tool in tools:
            destination = (args.keep / "forest" if args.keep and tool.name == "ours"
                           else workdir / tool.name)
            tool.copy_forest(source, destination)
        queries = fixed_queries(args.queries)
        process_queries = queries[:args.process_queries]
        measures = measure_all(tools, args.runs, stamp["documents"], queries, process_queries,
                               workdir, args.all)
        return {
            "documents": stamp["documents"],
            "forest": stamp,
            "runs": args.runs,
            "queries": len(queries),
            "process_queries": len(process_queries),
            "tools": {t.name: {"exe": t.exe, "version": t.version} for t in tools},
            "measures": measures,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def measure_all(tools: list[Tool], runs: int, documents: int, queries: list[str],
                process_queries: list[str], workdir: Path, everything: bool) -> dict:
    """Each measure in turn, its runs alternating between the tools; keys are the table rows."""
    measures: dict[str, dict] = {}

    full = interleaved(tools, runs, lambda t: t.cli("index", t.root, *t.full_flag),
                       "full index", indexes=True)
    measures["index_full_s"] = row(tools, full, wall_s)
    measures["index_full_peak_rss_mib"] = row(tools, full, rss_mib)

    leaves = leaf_paths(tools[0].root)
    edits = random.Random(SEED + 2)
    words = Zipf(vocabulary(VOCABULARY, random.Random(SEED)), edits)

    def one_file(tool: Tool) -> Outcome:
        return tool.cli("index", tool.root)

    def before_each_round() -> None:
        time.sleep(RACY_WINDOW_S)
        leaf, text = edits.choice(leaves), f"\n{words.text(20)}\n"
        for tool in tools:
            with open(tool.root / leaf, "a", encoding="utf-8") as handle:
                handle.write(text)

    incremental = interleaved(tools, runs, one_file, "one-file incremental index",
                              before_each_round, indexes=True)
    measures["index_one_file_s"] = row(tools, incremental, wall_s)

    time.sleep(RACY_WINDOW_S)  # the last edit is now old enough to trust; settle once
    interleaved(tools, 1, lambda t: t.cli("index", t.root), "settling index", indexes=True)
    unchanged = interleaved(tools, runs, lambda t: t.cli("index", t.root), "no-change index",
                            indexes=True)
    measures["index_no_change_s"] = row(tools, unchanged, wall_s)

    measures["index_bytes_per_doc"] = index_size_row(tools, documents)
    measures.update(in_process_retrieve(tools, queries))

    walls = interleaved_queries(tools, process_queries, "retrieve",
                                lambda t, q: t.cli("retrieve", t.root, q))
    measures["retrieve_process_wall_ms_p50"] = row(tools, walls, p50_ms)
    measures["retrieve_process_wall_ms_p95"] = row(tools, walls, p95_ms)
    gates = interleaved_queries(tools, process_queries, "gate",
                                lambda t, q: t.cli("gate", t.root, stdin=q, requires="gate"))
    measures["gate_process_wall_ms_p50"] = row(tools, gates, p50_ms)

    if everything:
        browse = interleaved(tools, 1, lambda t: t.cli(
            "browse", t.root, "--out", workdir / f"site-{t.name}", requires="browse"), "browse")
        measures["browse_s"] = row(tools, browse, wall_s)
        maintain = interleaved(tools, 1, lambda t: t.cli(
            "maintain", t.root, requires="maintain", ok_codes=(0, 3)), "maintain")
        measures["maintain_s"] = row(tools, maintain, wall_s)
    return measures


# The forest: generated once, copied per tool.

def prepared_forest(directory: Path, docs: int) -> tuple[Path, dict]:
    """DIR/source generated for ``docs`` documents, reused when DIR/stamp.json says it matches."""
    params = {"generator": "scripts/bench_scale.py", "docs_requested": docs, "seed": SEED,
              "vocabulary": VOCABULARY, "branches_per_tree": BRANCHES_PER_TREE,
              "leaves_per_branch": LEAVES_PER_BRANCH, "backdated_s": BACKDATE_S}
    stamp_path, source = directory / "stamp.json", directory / "source"
    if stamp_path.exists():
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
        if {k: stamp.get(k) for k in params} != params:
            differs = {k: stamp.get(k) for k in params if stamp.get(k) != params[k]}
            sys.exit(f"{directory} holds a forest generated with {differs} ({stamp_path}); "
                     "pick another --forest directory")
        progress(f"reusing {source} ({stamp['documents']} documents)")
        return source, stamp
    if directory.exists() and any(directory.iterdir()):
        sys.exit(f"{directory} is not empty and has no stamp.json; pick a new or empty directory")
    progress(f"generating {docs} documents into {source}")
    started = time.perf_counter()
    rng = random.Random(SEED)
    zipf = Zipf(vocabulary(VOCABULARY, rng), rng)
    directory.mkdir(parents=True, exist_ok=True)
    written = write_forest(source, plan_trees(docs, zipf, rng))
    backdate(source, BACKDATE_S)
    stamp = {**params, "documents": written, "generate_s": round(time.perf_counter() - started, 1),
             "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    # Written last: a generation cut short leaves no stamp, and is never reused.
    stamp_path.write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    return source, stamp


def leaf_paths(root: Path) -> list[str]:
    stm = root / "04 stm"
    return sorted(os.path.relpath(os.path.join(d, name), root)
                  for d, _dirs, files in os.walk(stm) for name in files if name.endswith(".md"))


def fixed_queries(count: int) -> list[str]:
    """The same queries whatever the forest size: drawn from the vocabulary alone."""
    words = vocabulary(VOCABULARY, random.Random(SEED))
    rng = random.Random(SEED + 1)
    return question_set(Zipf(words, rng), rng, count)


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Zipf:
    """Draw words with frequency proportional to 1/rank, like natural text."""

    def __init__(self, words: list[str], rng: random.Random) -> None:
        self.words = words
        self.rng = rng
        weights = [1 / (rank + 1) for rank in range(len(words))]
        total = sum(weights)
        acc, self.cumulative = 0.0, []
        for weight in weights:
            acc += weight / total
            self.cumulative.append(acc)

    def text(self, count: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=count))


def plan_trees(docs: int, zipf: Zipf, rng: random.Random) -> dict:
    per_tree = 1 + BRANCHES_PER_TREE * (1 + LEAVES_PER_BRANCH)
    tree_count = max(1, round((docs - 1) / per_tree))
    owners = 1 + tree_count * (1 + BRANCHES_PER_TREE)
    leaves_left = max(tree_count * BRANCHES_PER_TREE, docs - owners)
    trees: dict = {}
    for t in range(tree_count):
        branches = {}
        for b in range(BRANCHES_PER_TREE):
            share = leaves_left // (tree_count * BRANCHES_PER_TREE) + (
                1 if (t * BRANCHES_PER_TREE + b) < leaves_left % (tree_count * BRANCHES_PER_TREE)
                else 0)
            leaves = {}
            for leaf in range(share):
                paragraphs = [zipf.text(rng.randint(30, 80)) for _ in range(rng.randint(2, 5))]
                leaves[f"leaf-{leaf:03d}"] = (zipf.text(4).title(), "\n\n".join(paragraphs))
            branches[f"branch-{b:02d}"] = leaves
        trees[f"tree-{t:03d}"] = branches
    return trees


def question_set(zipf: Zipf, rng: random.Random, count: int) -> list[str]:
    """Fixed queries of 2-5 content words, as a person would ask about their memory.

    The 100 most frequent words of the vocabulary play the part of the function
    words ("the", "of", "what") that a real query's stopword filter removes, so
    they are left out; everything else is drawn with its natural frequency.
    """
    content = Zipf(zipf.words[100:], rng)
    return [content.text(rng.randint(2, 5)) for _ in range(count)]


def backdate(root: Path, seconds: int) -> None:
    then = time.time() - seconds
    for directory, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (then, then))


# The tools and their processes.

class Unsupported(Exception):
    """A measure this tool cannot take; the row says why."""


class Outcome:
    __slots__ = ("out", "rss_kib", "wall")

    def __init__(self, wall: float, rss_kib: int, out: dict) -> None:
        self.wall, self.rss_kib, self.out = wall, rss_kib, out


class Tool:
    """One memory-forest executable, what its CLI offers, and its own copy of the forest."""

    def __init__(self, name: str, exe: str) -> None:
        self.name, self.exe = name, exe
        self.root = Path()
        self.broken: str | None = None  # set when its index failed: nothing after can be timed
        self.version = self._plain("--version").strip()
        # Found by asking, not assumed: the reference has no --full (its index always
        # rebuilds) and no gate, browse or maintain.
        self.full_flag = ("--full",) if "--full" in self._plain("index", "--help") else ()
        self.commands = {c for c in ("gate", "browse", "maintain")
                         if self._status(c, "--help") == 0}

    def copy_forest(self, source: Path, destination: Path) -> None:
        """The tool's own ``init`` (so its config is its own), then the generated layers."""
        if destination.exists():
            sys.exit(f"{destination} exists; the benchmark copies into a new path")
        destination.parent.mkdir(parents=True, exist_ok=True)
        progress(f"{self.name}: copying the forest to {destination}")
        self.cli("init", destination)
        for layer in sorted(os.listdir(source)):
            if layer.startswith("."):
                continue
            shutil.rmtree(destination / layer, ignore_errors=True)
            subprocess.run(["cp", "-a", str(source / layer), str(destination / layer)],
                           check=True)
        self.root = destination

    def cli(self, command: str, *args: object, stdin: str | None = None,
            requires: str | None = None, ok_codes: tuple[int, ...] = (0,)) -> Outcome:
        """Run ``EXE --json COMMAND ARGS``; its wall time, peak RSS and JSON answer."""
        if requires and requires not in self.commands:
            raise Unsupported(f"no '{requires}' command")
        line = [self.exe, "--json", command, *map(str, args)]
        with tempfile.TemporaryFile() as errors:
            started = time.perf_counter()
            proc = subprocess.Popen(line, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=errors, env=CLI_ENV)
            if stdin is not None:
                proc.stdin.write(stdin.encode())
            proc.stdin.close()
            stdout = proc.stdout.read()
            # wait4, not RUSAGE_CHILDREN: that is a maximum over every child this script ran.
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            proc.stdout.close()
            errors.seek(0)
            stderr = errors.read().decode(errors="replace")
        try:
            out = json.loads(stdout)
        except ValueError:
            out = {"ok": False, "error": {"code": "no_json", "message": stderr[-300:]}}
        if proc.returncode not in ok_codes or not out.get("ok"):
            error = out.get("error") or {}
            reason = (f"{command} failed (exit {proc.returncode}): {error.get('code')}"
                      f" {error.get('message', '')} {json.dumps(error.get('details') or {})}")
            if self.name == "ours":
                sys.exit(f"{' '.join(line)}: {reason}")
            raise Unsupported(reason.strip())
        rss = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss
        return Outcome(wall, rss, out)

    def _plain(self, *args: str) -> str:
        return subprocess.run([self.exe, *args], capture_output=True, text=True,
                              env=CLI_ENV, check=False).stdout

    def _status(self, *args: str) -> int:
        return subprocess.run([self.exe, *args], capture_output=True, env=CLI_ENV,
                              check=False).returncode


def our_executable() -> str:
    return shutil.which("memory-forest", path=os.path.dirname(sys.executable)) or "memory-forest"


# Interleaving: a run of each tool, then the next run, alternating which goes first.

def interleaved(tools: list[Tool], runs: int, measure, label: str,
                before_each_round=None, indexes: bool = False) -> dict[str, list | str]:
    """Per tool, its outcomes, or the reason it has none (a string).

    ``indexes``: the measure builds the index, so a failure leaves nothing to time after it.
    """
    results: dict[str, list | str] = {t.name: [] for t in tools}
    for number in range(runs):
        if before_each_round:
            before_each_round()
        for tool in tools if number % 2 == 0 else tools[::-1]:
            if isinstance(results[tool.name], str):
                continue
            if tool.broken:
                results[tool.name] = tool.broken
                continue
            try:
                outcome = measure(tool)
            except Unsupported as exc:
                results[tool.name] = str(exc)
                if indexes:
                    tool.broken = f"its index failed: {exc}"
                continue
            results[tool.name].append(outcome)
            progress(f"{label} {number + 1}/{runs} {tool.name}: {outcome.wall:.3f} s")
    return results


def interleaved_queries(tools: list[Tool], queries: list[str], label: str, measure):
    """One warm-up each (bytecode, page cache), then every query by each tool in turn."""
    results: dict[str, list | str] = {}
    for tool in tools:
        try:
            if tool.broken:
                raise Unsupported(tool.broken)
            measure(tool, queries[0])
            results[tool.name] = []
        except Unsupported as exc:
            results[tool.name] = str(exc)
    for number, query in enumerate(queries):
        for tool in tools if number % 2 == 0 else tools[::-1]:
            if isinstance(results[tool.name], list):
                try:
                    results[tool.name].append(measure(tool, query))
                except Unsupported as exc:
                    results[tool.name] = str(exc)
    progress(f"{label} process walls: " + ", ".join(
        f"{name} {p50_ms(v)} ms" for name, v in results.items() if isinstance(v, list)))
    return results


def in_process_retrieve(tools: list[Tool], queries: list[str]) -> dict:
    """This tool's ``retrieve`` called in this process, as the MCP server calls it."""
    root = tools[0].root
    retrieve.retrieve(root, queries[0], limit=10)
    latencies = []
    for query in queries:
        started = time.perf_counter()
        retrieve.retrieve(root, query, limit=10)
        latencies.append((time.perf_counter() - started) * 1000)
    reason = "in process: this tool only"
    p50 = round(statistics.median(latencies), 2)
    p95 = round(percentile(latencies, 0.95), 2)
    return {"retrieve_in_process_ms_p50": _single(tools, p50, reason),
            "retrieve_in_process_ms_p95": _single(tools, p95, reason)}


# Rows: a figure per tool from its outcomes, and the ratio ours/other.

def row(tools: list[Tool], results: dict[str, list | str], figure) -> dict:
    entry: dict = {}
    for tool in tools:
        found = results[tool.name]
        if isinstance(found, str):
            entry[tool.name], entry[f"{tool.name}_why_null"] = None, found
        else:
            entry[tool.name] = figure(found)
            if figure in (wall_s, rss_mib):
                entry[f"{tool.name}_runs"] = [figure([o]) for o in found]
            if figure is wall_s:
                # What the tool says it did (ours: the mode and the counts), to show that a
                # one-file run saw one change and a no-change run saw none.
                said = {k: found[-1].out[k] for k in REPORTED if k in found[-1].out}
                if said:
                    entry[f"{tool.name}_reported"] = said
    if len(tools) == 2:
        ours, other = entry["ours"], entry["other"]
        entry["ratio"] = round(ours / other, 2) if ours is not None and other else None
    return entry


REPORTED = ("mode", "added", "changed", "deleted", "unchanged", "quarantined", "documents")


def _single(tools: list[Tool], value: float, reason: str) -> dict:
    entry: dict = {"ours": value}
    if len(tools) == 2:
        entry.update(other=None, other_why_null=reason, ratio=None)
    return entry


def wall_s(outcomes: list[Outcome]) -> float:
    return round(statistics.median(o.wall for o in outcomes), 3)


def rss_mib(outcomes: list[Outcome]) -> float:
    return round(statistics.median(o.rss_kib for o in outcomes) / 1024, 1)


def p50_ms(outcomes: list[Outcome]) -> float:
    return round(statistics.median(o.wall for o in outcomes) * 1000, 1)


def p95_ms(outcomes: list[Outcome]) -> float:
    return round(percentile([o.wall for o in outcomes], 0.95) * 1000, 1)


def index_size_row(tools: list[Tool], documents: int) -> dict:
    """Bytes of ``.memory-forest/index.sqlite3`` (where both tools keep it) per document."""
    sizes: dict[str, list | str] = {}
    for tool in tools:
        index = tool.root / ".memory-forest" / "index.sqlite3"
        sizes[tool.name] = (tool.broken or "no index file") if tool.broken or not index.exists() \
            else [index.stat().st_size]
    return row(tools, sizes, lambda found: round(found[0] / documents))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def print_table(report: dict, stream) -> None:
    names = list(report["tools"])
    header = ["measure", *names] + (["ours/other"] if len(names) == 2 else [])
    lines = [header]
    for measure, entry in report["measures"].items():
        cells = [measure] + ["-" if entry[n] is None else str(entry[n]) for n in names]
        if len(names) == 2:
            cells.append("-" if entry["ratio"] is None else f"{entry['ratio']}x")
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    print(f"\n{report['documents']} documents, median of {report['runs']} runs", file=stream)
    for line in lines:
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        print("  ".join(cells), file=stream)
    for measure, entry in report["measures"].items():
        for name in names:
            if entry.get(f"{name}_why_null") and entry[name] is None:
                print(f"  {measure} {name}: {entry[f'{name}_why_null']}", file=stream)


if __name__ == "__main__":
    main()
