"""What semantic ranking costs: embedding throughput, the per-turn wall, the bytes per document.

Usage: python scripts/bench_semantic.py [--docs 10000] [--runs 3] [--queries 10]
                                        [--sample 300] [--sample-runs 3] [--forest DIR]
                                        [--write-docs]

Why this shape: embedding the 10,000-document scale forest (bench_scale.py's generator)
with the real model takes about two hours on the 2-core VM, so the two costs are measured
apart, each where it can be measured honestly:

- throughput: ``index --semantic --json`` as a process on a fresh copy of a SAMPLE-document
  forest from the same generator (the same paragraph lengths, so the same chunks per
  document), median of --sample-runs; chunks/s and documents/s come from the result's own
  ``semantic`` counts and seconds, and the time to embed 10,000 documents is extrapolated
  from the documents/s (said so in the output);
- the per-turn wall at --docs documents: the engine's own ``semantic.embed`` writes every
  vector (real chunking, batches, vectors file and matrix cache), with the model's passage
  call replaced by random unit vectors: a query's cost depends on the number and shape of
  the vectors, not their values. Then ``retrieve --json`` and ``retrieve --json --lexical``
  as processes, alternating, over --queries fixed queries; the p50 of each run, and the
  median of those over --runs;
- bytes per document: the lexical index, the vectors file (float16) and the matrix cache
  (float32) that readers map, each divided by the number of documents.

Prints JSON on stdout and a table on stderr; ``--write-docs`` puts the table in
docs/benchmarks.md between its markers. Measure on a quiet machine: every figure moves
with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_scale import CLI_ENV, fixed_queries, our_executable, prepared_forest
from docblock import write_block

from memory_forest import operations, semantic, semantic_state
from memory_forest.forest import Forest
from memory_forest.statefiles import index_path, state_dir, vectors_path

DOCS_FILE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_semantic: begin -->", "<!-- bench_semantic: end -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="Runs of the query walls (median).")
    parser.add_argument("--queries", type=int, default=10, help="Queries per wall run.")
    parser.add_argument("--sample", type=int, default=300,
                        help="Documents embedded for real to measure throughput.")
    parser.add_argument("--sample-runs", type=int, default=3)
    parser.add_argument("--forest", type=Path,
                        help="Generate the large forest here once and reuse it.")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mf-semantic-"))
    try:
        report = {"documents": args.docs, "runs": args.runs, "queries": args.queries,
                  "chunk_lines": semantic.CHUNK_LINES, "fusion_k": semantic.FUSION_K,
                  **per_turn(args, work), **throughput(args, work)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["embed_10000_docs_s_extrapolated"] = round(10_000 / report["embed_docs_per_s"])
    print(json.dumps(report, indent=2))
    table = render(report)
    print(table, file=sys.stderr)
    if args.write_docs:
        write_docs(table)


# --- the per-turn wall -----------------------------------------------------------------------


def per_turn(args: argparse.Namespace, work: Path) -> dict:
    source, stamp = prepared_forest(args.forest or work / "large", args.docs)
    root = copy_forest(source, work / "turn")
    operations.index(root, full=True)
    filled = fill_vectors(root)
    exe = our_executable()
    queries = fixed_queries(args.queries)
    fused_runs, lexical_runs = [], []
    run_cli(exe, "retrieve", root, queries[0])  # warm the page cache and bytecode once
    run_cli(exe, "retrieve", root, queries[0], "--lexical")
    for number in range(args.runs):
        fused, lexical = [], []
        for position, query in enumerate(queries):
            pair = [("fused", ()), ("lexical", ("--lexical",))]
            for kind, extra in pair if (number + position) % 2 == 0 else pair[::-1]:
                wall, out = run_cli(exe, "retrieve", root, query, *extra)
                assert out["ranking"] == kind, out.get("ranking_reason")
                (fused if kind == "fused" else lexical).append(wall)
        fused_runs.append(statistics.median(fused))
        lexical_runs.append(statistics.median(lexical))
        progress(f"walls run {number + 1}/{args.runs}: fused p50 {fused_runs[-1]:.0f} ms, "
                 f"lexical p50 {lexical_runs[-1]:.0f} ms")
    documents = stamp["documents"]
    sizes = {"index": index_path(root).stat().st_size,
             "vectors": vectors_path(root).stat().st_size,
             "matrix_cache": sum(p.stat().st_size for p in state_dir(root).glob("vectors.*"))}
    return {
        "documents": documents,
        "chunks": filled["chunks"],
        "chunks_per_doc": round(filled["chunks"] / documents, 2),
        "retrieve_process_wall_ms_p50_fused": round(statistics.median(fused_runs), 1),
        "retrieve_process_wall_ms_p50_lexical": round(statistics.median(lexical_runs), 1),
        "retrieve_wall_runs_ms": {"fused": [round(v, 1) for v in fused_runs],
                                  "lexical": [round(v, 1) for v in lexical_runs]},
        "bytes_per_doc": {name: round(size / documents) for name, size in sizes.items()},
        "bytes_per_doc_with_vectors": round(sum(sizes.values()) / documents),
    }


def fill_vectors(root: Path) -> dict:
    """Every embeddable document's vectors through the engine's own write path, with random
    unit vectors instead of the model's (hours of embedding; the values do not matter here)."""
    import numpy as np

    rng = np.random.default_rng(20261203)

    def passages(self: semantic.Model, texts: list[str]) -> np.ndarray:
        semantic.stats["chunks"] += len(texts)
        vectors = rng.standard_normal((len(texts), semantic_state.DIMENSIONS)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    real = semantic.Model.passages
    semantic.Model.passages = passages
    try:
        started = time.perf_counter()
        done = semantic.embed(Forest.open(root), enable=True)
    finally:
        semantic.Model.passages = real
    progress(f"filled {done['chunks']} chunk vectors for {done['embedded']} documents in "
             f"{time.perf_counter() - started:.1f} s")
    assert done["remaining"] == 0 and done["embedded"] == done["embeddable"], done
    return done


# --- throughput ------------------------------------------------------------------------------


def throughput(args: argparse.Namespace, work: Path) -> dict:
    source, stamp = prepared_forest(work / "sample", args.sample)
    exe = our_executable()
    runs = []
    for number in range(args.sample_runs):
        root = copy_forest(source, work / f"sample-{number}")
        run_cli(exe, "index", root)  # the lexical build, untimed: only embedding is measured
        _, out = run_cli(exe, "index", root, "--semantic")
        done = out["semantic"]
        assert done["remaining"] == 0, done
        runs.append(done)
        progress(f"embedding run {number + 1}/{args.sample_runs}: {done['embedded']} documents, "
                 f"{done['chunks']} chunks in {done['seconds']:.1f} s")
        shutil.rmtree(root)
    seconds = statistics.median(run["seconds"] for run in runs)
    chunks, documents = runs[0]["chunks"], runs[0]["embedded"]
    return {
        "sample_documents": documents,
        "sample_chunks": chunks,
        "embed_seconds_runs": [run["seconds"] for run in runs],
        "embed_chunks_per_s": round(chunks / seconds, 2),
        "embed_docs_per_s": round(documents / seconds, 2),
        "embed_chars_per_chunk": chars_per_chunk(source),
    }


def chars_per_chunk(root: Path) -> int:
    """The mean length of the sample's passages, as the engine cuts them."""
    lengths = []
    for directory, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".md"):
                text = (Path(directory) / name).read_text(encoding="utf-8")
                lengths += [len(p) for p in semantic.chunks(name, text.split("\n---\n", 1)[-1])]
    return round(sum(lengths) / len(lengths))


# --- helpers ---------------------------------------------------------------------------------


def copy_forest(source: Path, destination: Path) -> Path:
    operations.init(destination)
    for layer in sorted(os.listdir(source)):
        if not layer.startswith("."):
            shutil.rmtree(destination / layer, ignore_errors=True)
            subprocess.run(["cp", "-a", str(source / layer), str(destination / layer)],
                           check=True)
    return destination


def run_cli(exe: str, command: str, root: Path, *args: str) -> tuple[float, dict]:
    """``EXE --json COMMAND ROOT ARGS`` as a process: its wall in ms and its JSON answer."""
    line = [exe, "--json", command, str(root), *args]
    started = time.perf_counter()
    done = subprocess.run(line, capture_output=True, env=CLI_ENV, check=False)
    wall = (time.perf_counter() - started) * 1000
    out = json.loads(done.stdout or b"{}")
    if done.returncode != 0 or not out.get("ok"):
        sys.exit(f"{' '.join(line)} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return wall, out


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def render(report: dict) -> str:
    sizes = report["bytes_per_doc"]
    rows = [
        ("documents / chunks (chunks per document)",
         f"{report['documents']:,} / {report['chunks']:,} ({report['chunks_per_doc']})"),
        ("`retrieve --json` process wall p50, fused",
         f"{report['retrieve_process_wall_ms_p50_fused']:.0f} ms"),
        ("`retrieve --json --lexical` process wall p50, same run",
         f"{report['retrieve_process_wall_ms_p50_lexical']:.0f} ms"),
        ("embedding throughput (real model, "
         f"{report['sample_documents']} documents, {report['embed_chars_per_chunk']} "
         "characters a chunk)",
         f"{report['embed_chunks_per_s']} chunks/s, {report['embed_docs_per_s']} documents/s"),
        ("time to embed 10,000 documents (extrapolated)",
         f"{report['embed_10000_docs_s_extrapolated'] / 60:.0f} min"),
        ("bytes per document: index / vectors (float16) / matrix cache (float32)",
         f"{sizes['index']:,} / {sizes['vectors']:,} / {sizes['matrix_cache']:,}"),
        ("bytes per document with vectors, in all", f"{report['bytes_per_doc_with_vectors']:,}"),
    ]
    lines = [f"Chunks of {report['chunk_lines']} lines, {report['fusion_k']} candidates a side; "
             f"walls: median over {report['runs']} runs of each run's p50 over "
             f"{report['queries']} queries; throughput: median of "
             f"{len(report['embed_seconds_runs'])} runs.", "",
             "| measure | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def write_docs(table: str) -> None:
    write_block(DOCS_FILE, BEGIN, END, f"{BEGIN}\n{table}\n{END}")


if __name__ == "__main__":
    main()
