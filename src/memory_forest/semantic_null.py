"""The null reference: what a question's similarity to memory must beat to count as evidence.

An embedding model finds every text somewhat similar to every other: with
multilingual-e5-small the cosine of a gibberish query to the nearest memory
document (0.79-0.86) is as high as that of a real question asked in another
language (0.79-0.89), so no fixed cosine floor tells "nothing" from "found".
What does separate them is a comparison: a question memory can answer is
closer to its answer than to any text about nothing in particular, while
gibberish or an unrelated question is at least as close to such a text as
to anything in memory.

So the query is compared with a fixed set of null passages, meaningless
strings in the four benchmark scripts and short passages on topics a
personal memory rarely holds: the dense side adds candidates for a query
only when the query's best document beats the best of them by
``NULL_MARGIN``; otherwise only lexical evidence counts. The passages are embedded
with the pinned model by the writers (``index --semantic``, ``maintain``)
and kept in the vectors file's meta, keyed by a digest of their text; a
reader whose file lacks them (or has another set) embeds them once in its
process (about 0.4 s). Calibrated on questions written for it
(tests/data/multilingual/nothing.jsonl, some held out) against the
multilingual mini-benchmark: docs/benchmarks.md, "Saying nothing".
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from .semantic_state import DIMENSIONS
from .store import vectorfile

if TYPE_CHECKING:
    import sqlite3

# Never edit one in place without measuring again: the digest of the set names its vectors.
# "lorem ipsum" and a line of Korean jamo were tried and left out: they sit near the centre
# of the model's space and were the nearest null passage of half the real questions.
NULL_PASSAGES = (
    "xq zvb klorp", "qqq www eee rrr", "jfkdls ghyt", "asdf jkl", "mmmmm nnnn", "zzzz",
    "blah blah blah", "test test 123", "쀍뷁 궯", "あいうえお かきくけこ", "ぬぬぬ", "ñññ xyz",
    "The history of the Roman Empire and its emperors.",
    "Stock prices, interest rates and the bond market this quarter.",
    "Installing a Python package and fixing an import error.",
    "Football match results and league standings.",
    "The planets of the solar system and their moons.",
    "Chemical elements, molecules and reactions.",
    "Famous painters and the museums that hold their works.",
    "Configuring servers, containers and cloud networks.",
    "Novels, authors and literary prizes.",
    "Quantum physics and the theory of relativity.",
    "World capitals, countries and their populations.",
    "Machine learning models, neural networks and training data.",
    "주식 시장과 금리 전망", "프로그래밍 언어와 소프트웨어 개발", "세계 역사와 전쟁",
    "株価と為替の動き", "プログラミングとソフトウェア開発", "世界の歴史と政治",
    "La historia de Europa y sus guerras", "Programación y desarrollo de software",
    "Economía, bolsa y mercados financieros",
    "Physics and chemistry: boiling points, densities and the speed of light.",
    "Geography: the highest mountains, longest rivers and largest deserts of the world.",
)
# How much closer than the best null passage the best document must be. Chosen on the
# calibration half of nothing.jsonl: the largest gibberish excess there is 0.008.
NULL_MARGIN = 0.01
META_KEY = "null_reference"
DIGEST = hashlib.sha256("\n".join(NULL_PASSAGES).encode("utf-8")).hexdigest()[:16]

# The vectors this process embedded itself, when the file held none of this set.
_embedded: list[Any] = []


def missing(vectors: sqlite3.Connection) -> bool:
    """Whether the vectors file lacks this set's vectors (made before it, or by another set)."""
    held = vectorfile.vectors_meta(vectors, META_KEY)
    return held is None or not held.startswith(f"{DIGEST}:")


def save(vectors: sqlite3.Connection, embedder: Any) -> None:
    """Store the null passages' vectors in the vectors file (a writer, in its transaction),
    unless it already holds this set's."""
    if missing(vectors):
        matrix = embedder.passages(list(NULL_PASSAGES)).astype("<f2")
        vectorfile.set_vectors_meta(vectors, META_KEY, f"{DIGEST}:{matrix.tobytes().hex()}")


def load(con: sqlite3.Connection, embedder: Any) -> Any:
    """The null passages' vectors (float32, one row each): from the attached vectors file
    when it holds this set's, else embedded now, once per process."""
    import numpy as np


    held = vectorfile.vectors_meta(con, META_KEY, "vec") or ""
    digest, _, data = held.partition(":")
    if digest == DIGEST:
        try:
            matrix = np.frombuffer(bytes.fromhex(data), dtype="<f2")
            return matrix.reshape(len(NULL_PASSAGES), DIMENSIONS).astype(np.float32)
        except ValueError:
            pass  # damaged: embed them instead, as for a file that has none
    if not _embedded:
        _embedded.append(embedder.passages(list(NULL_PASSAGES)))
    return _embedded[0]


def floor(null: Any, query: Any) -> float:
    """The cosine the query's best document must exceed for the dense side to count."""
    return float((null @ query).max()) + NULL_MARGIN
