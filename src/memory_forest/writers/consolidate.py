"""``consolidate``: propose Daily entries and STM placements for what nothing has filed yet,
and a home for what waits in the inbox.

It reads the unfiled sources (``lookups.unfiled``: ISTM events no Daily entry
or leaf cites, Daily entries no structured record cites), leaves out those any
stored proposal already names (pending, accepted or rejected: a source is
proposed once; a proposal refused as stale names nothing) and those a review
decision of any machine names (``decisions``), and writes one proposal for at
most ``limit`` of them:

- each event gets a summary made from its own text, deterministically (the
  payload's text, shortened), and a placement (``placement.place``, appending
  to the best leaf when one fits, else the inbox); events of the same day
  placed in the same leaf become one new Daily entry citing them all;
- each unpromoted Daily entry gets a placement for its text;
- each inbox leaf that a branch now fits gets a move there, and inbox leaves
  that share a topic no branch holds get a new branch (``inbox``).

Every source carries a fingerprint of what it held, so ``proposals accept``
can tell a source that changed since. Nothing canonical is written: the
proposal is derived state under ``.memory-forest/proposals/``. The forest
lock is held while the proposal is made, so two runs cannot propose the same
source twice.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from typing import Any

from .. import lock
from ..digest import sha256_hex
from ..envelope import result
from ..errors import ForestError
from ..forest import Forest, ForestLike, opened
from ..jsonio import dumps, loads_strict
from ..lockline import DEFAULT_WAIT
from ..placement import place
from ..routes import stm_path
from ..store import lookups
from ..text import slug
from . import inbox, proposals
from .daily import entry_text
from .markdown import check_linkable, check_title
from .plans import parse
from .receipts import now
from .redact import MARKER_PREFIX, find_secret, redact_text
from .view import View

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000
SUMMARY_CHARS = 240
ENTRY_FALLBACK = "entry"  # an entry id's words when the summary has none in ASCII
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MARKER = re.compile(re.escape(MARKER_PREFIX) + r"[^\]\s]*\]?")  # a shortened one too
FALLBACK_TITLE = "Note"  # a name when the words of the source would carry a credential


def consolidate(forest: ForestLike, limit: int = DEFAULT_LIMIT,
                wait: float = DEFAULT_WAIT) -> dict[str, Any]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ForestError("consolidate_limit_invalid", f"--limit is 1 to {MAX_LIMIT} sources",
                          exit_code=2)
    with opened(forest) as forest, lock.held(forest.root, "consolidate", wait=wait):
        return propose(forest, limit)


def propose(forest: Forest, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """Make and store one proposal; the caller holds the forest lock (``maintain`` does)."""
    known, problems = proposals.every(forest)
    # A stale proposal was refused on accept: its sources wait for a fresh one. A decision
    # any machine recorded (canonical, so it outlives this machine's proposals) is final.
    named = {pointer for proposal in known if proposal.status != "stale"
             for pointer in proposals.pointers(proposal)} | lookups.decided(forest.reader())
    reserved = {entry_id for proposal in known for entry_id in proposals.entry_ids(proposal)}
    waiting = [fragment for fragment in lookups.unfiled(forest.reader())
               if f"{fragment.path}#{fragment.anchor}" not in named]
    chosen, remaining = waiting[:limit], max(0, len(waiting) - limit)
    view = View(forest)
    try:
        made = _Proposal(forest, view, reserved)
        for fragment in chosen:
            made.add(fragment)
        leaves = {leaf_id for proposal in known if proposal.status != "stale"
                  for leaf_id in inbox.leaf_ids(proposal)} | inbox.decided_leaves(forest, view)
        made.moves, made.branches = inbox.propose(forest, view, leaves, limit)
        document = made.document()
    finally:
        view.close()
    found = {"skipped": made.skipped, "remaining": remaining, "problems": problems,
             "redactions": made.redactions}
    if document is None:
        return result("consolidate", proposal=None, path=None, counts=None,
                      message="nothing to consolidate", **found)

    checked = parse("proposal", dumps(document))  # stored only as strict as it is read back
    path = proposals.save(forest, document)
    return result("consolidate", proposal=document, path=path,
                  counts=proposals.counts(checked), message=None, **found)


class _Proposal:
    """The proposal being built, one source at a time (oldest first)."""

    def __init__(self, forest: Forest, view: Any, reserved: set[str]) -> None:
        self.forest, self.view, self.reserved = forest, view, set(reserved)
        self.groups: dict[tuple[str, str], dict[str, Any]] = {}  # (day, leaf) -> entry
        self.promotions: list[dict[str, Any]] = []
        self.moves: list[dict[str, Any]] = []  # inbox leaves, with the branch that fits
        self.branches: list[dict[str, Any]] = []  # new branches, with their inbox leaves
        self.skipped: list[dict[str, str]] = []
        self.redactions: dict[str, int] = {}

    def add(self, fragment: Any) -> None:
        pointer = f"{fragment.path}#{fragment.anchor}"
        if _unusable(pointer):
            self.skipped.append({"pointer": pointer[:300], "reason": "not_plain_text"})
            return
        if find_secret(pointer):  # a pointer is a name, stored as given: never propose it
            self.skipped.append({"pointer": unmarked(self._redacted(pointer))[:300],
                                 "reason": "secret_in_name"})
            return
        try:
            if fragment.kind == "event":
                self._event(fragment, pointer)
            else:
                self._entry(fragment, pointer)
        except ForestError as exc:  # one source's problem never stops the rest
            self.skipped.append({"pointer": pointer, "reason": exc.code})

    def _event(self, fragment: Any, pointer: str) -> None:
        line = proposals.event_line(self.view.read(fragment.path), fragment.anchor)
        if line is None:  # edited away since it was indexed
            self.skipped.append({"pointer": pointer, "reason": "missing"})
            return
        record = loads_strict(line)
        text = self._redacted(event_text(record))
        placement = self._place(text)
        observed = record.get("observed_at") if isinstance(record.get("observed_at"), str) \
            else None
        day = day_of(observed, fragment.path)
        group = self.groups.setdefault((day, _leaf_path(placement)), {
            "placement": placement, "texts": [], "sources": []})
        group["texts"].append(text)
        group["sources"].append({"pointer": pointer, "fingerprint": _sha(line),
                                 "observed_at": _plain(observed)})

    def _entry(self, fragment: Any, pointer: str) -> None:
        text = entry_text(self.view.text(fragment.path) or "", fragment.anchor)
        prose = "\n".join(line for line in text.split("\n") if not line.startswith("Sources:"))
        self.promotions.append({
            "entry_id": fragment.anchor,
            "source": {"pointer": pointer, "fingerprint": proposals.fingerprint_text(text),
                       "observed_at": None},
            "placement": self._place(self._redacted(prose.strip()) or fragment.anchor)})

    def _redacted(self, text: str) -> str:
        """Source text as a proposal may hold it: another tool or a hand edit wrote it, so it
        passes the writers' redaction before anything (summary, name, title) is made of it."""
        return redact_text(text, self.redactions)

    def _place(self, text: str) -> dict[str, Any]:
        """Where ``text`` (already redacted) goes; the new leaf's name and title come from
        its words without the redaction markers, and never from a credential."""
        words = unmarked(text)
        found = place(self.forest, words, append=True)
        if find_secret(found.leaf) or find_secret(found.title):
            found = place(self.forest, words, append=True, title=FALLBACK_TITLE)
        for segment, what in ((found.tree, "tree"), (found.branch, "branch"),
                              (found.leaf, "leaf")):
            check_linkable(segment, what)
        check_title(found.title)
        return {"tree": found.tree, "branch": found.branch, "leaf": found.leaf,
                "title": _plain(found.title), "action": found.action,
                "score": _plain(float(found.score)) or 0.0, "reason": _plain(found.reason)}

    def document(self) -> dict[str, Any] | None:
        if not (self.groups or self.promotions or self.moves or self.branches):
            return None
        days: dict[str, list[dict[str, Any]]] = {}
        for (day, _), group in self.groups.items():  # insertion order: oldest source first
            summary = self._summary(group["texts"])
            days.setdefault(day, []).append({
                "entry_id": self._entry_id(day, summary), "summary": summary,
                "sources": group["sources"], "placement": group["placement"]})
        proposal_id = proposals.new_id()

        return {"schema_version": 1, "proposal_id": proposal_id,
                "transaction_id": proposals.transaction_id(proposal_id), "created_at": now(),
                "status": "pending", "decided_at": None, "reason": None,
                "days": [{"date": day, "entries": days[day]} for day in sorted(days)],
                "promotions": self.promotions, "moves": _plain(self.moves),
                "branches": _plain(self.branches)}

    def _summary(self, texts: list[str]) -> str:
        """The texts (each redacted when its source was read), shortened, one line each."""
        lines = [shorten(text) for text in texts]
        return lines[0] if len(lines) == 1 else "\n".join(f"- {line}" for line in lines)

    def _entry_id(self, day: str, summary: str) -> str:
        """``d-YYYYMMDD-<first words>``, numbered when taken (in Daily or any proposal)."""
        words = slug(unmarked(summary), ENTRY_FALLBACK, ascii_only=True)
        base = f"d-{day.replace('-', '')}-{ENTRY_FALLBACK if find_secret(words) else words}"
        number, candidate = 1, base
        while candidate in self.reserved or self.view.entry_paths({candidate}):
            number += 1
            candidate = f"{base}-{number}"
        self.reserved.add(candidate)
        return candidate


def _leaf_path(placement: dict[str, Any]) -> str:
    return stm_path(placement["tree"], placement["branch"], placement["leaf"])


def event_text(record: dict[str, Any]) -> str:
    """What an event says: its payload's text, the payload itself if it is a string, else
    the payload as compact JSON; the kind when there is nothing else."""
    payload = record.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        text = payload["text"]
    elif isinstance(payload, str):
        text = payload
    else:
        text = dumps(payload)
    text = " ".join(_CONTROL.sub(" ", unicodedata.normalize("NFC", text)).split())
    return text or str(record.get("kind") or "event")


def shorten(text: str, limit: int = SUMMARY_CHARS) -> str:
    """At most ``limit`` characters, cut at a word boundary with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "\u2026"


def unmarked(text: str) -> str:
    """Redacted text without its redaction markers: the words a name or title is made of."""
    return " ".join(_MARKER.sub(" ", text).split())


def day_of(observed_at: str | None, path: str) -> str:
    """The day an event belongs to: its observed date as written, else its shard's date."""
    if observed_at is not None:
        try:
            return dt.datetime.fromisoformat(observed_at.replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            pass
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    if _DATE.fullmatch(stem):
        return stem
    return dt.datetime.now(dt.UTC).date().isoformat()


def _sha(data: bytes) -> str:
    return sha256_hex(data)


def _unusable(pointer: str) -> bool:
    """A pointer a proposal cannot carry as given: it must stay byte for byte what it names."""
    return unicodedata.normalize("NFC", pointer) != pointer or bool(_CONTROL.search(pointer))


def _plain(value: Any) -> Any:
    """A value as a proposal stores it: NFC text without control characters, finite numbers."""
    if isinstance(value, str):
        return _CONTROL.sub(" ", unicodedata.normalize("NFC", value))
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(_plain(str(key))): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
