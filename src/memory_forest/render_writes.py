"""Human rendering of what the writers and the review and sync commands did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .jsonio import dumps
from .terminal import MAX_LISTED_ISSUES, err, escape, grid, out, problem_line

if TYPE_CHECKING:
    from .results import (
        Placement,
        ProposalRejectResult,
        ProposalsListResult,
        RememberPreview,
        RememberResult,
        SyncLeft,
        SyncResult,
        WriteResult,
    )
    from .schemas import ConsolidateResult, ProposalShowResult


def receipt(outcome: WriteResult | RememberResult) -> None:
    """Every writer: what changed, under which transaction, and the operation's own facts."""
    if outcome.get("dry_run"):
        if "would_change" in outcome:
            _edit_preview(outcome)
        else:
            _remember_preview(outcome)
        return
    verdict = "[yellow]already applied[/]" if outcome["already_applied"] else "[green]committed[/]"
    out.print(f"{outcome['operation'].replace('_', '-')} {verdict}: transaction "
               f"{escape(outcome['transaction_id'])}")
    recovered = outcome.get("recovered")
    if recovered:
        out.print(f"  first recovered an interrupted write: {escape(recovered['action'])}")
    for item in outcome["touched"]:
        mark = "+" if item["before_sha256"] is None else "-" if item["after_sha256"] is None \
            else "~"
        out.print(f"  {mark} {escape(item['path'])}")
    if not outcome["touched"]:
        out.print("  no canonical file changed")
    if "captured" in outcome:
        out.print(f"  {outcome['captured']} event(s) captured, {outcome['duplicates']} "
                   "duplicate(s) skipped")
    redactions = outcome.get("redactions") or {}
    if redactions:
        listed = ", ".join(f"{rule} x{count}" for rule, count in sorted(redactions.items()))
        out.print(f"  [yellow]redacted[/] {listed}")
    for item in outcome.get("dispositions", []):
        target = f" in {escape(item['target'])}" if item.get("target") else ""
        out.print(f"  {escape(item['entry_id'])}: {item['disposition']}{target}")
    for path in outcome.get("modes_restored") or []:
        out.print(f"  [yellow]mode restored[/] {escape(path)} was wider than 0600, now 0600")
    if outcome.get("title_ignored"):
        out.print("  [yellow]title ignored[/]: the leaf exists and keeps its own title")
    if outcome.get("placement"):
        _placement(outcome["placement"])
    _edit_facts(outcome)


def _edit_preview(outcome: dict[str, Any]) -> None:
    """move and forget with --dry-run: the files that would change and go."""
    out.print(f"{outcome['operation']} [yellow]dry run[/]: nothing written")
    for path in outcome["would_change"]:
        out.print(f"  ~ {escape(path)}")
    _edit_facts(outcome)


def _edit_facts(outcome: dict[str, Any]) -> None:
    """What move and forget report beyond the files: where the leaf went, what was
    removed (to tell the user), and the links left pointing at nothing."""
    done = not outcome.get("dry_run")
    if outcome["operation"] == "move":
        out.print(f"  {'moved' if done else 'would move'} {escape(outcome['source'])} -> "
                  f"{escape(outcome['path'])} (id {escape(str(outcome['id']))})")
    for path in outcome.get("branches") or []:
        out.print(f"  new branch {escape(path)}")
    for item in (outcome.get("moved") or []) if outcome["operation"] != "move" else []:
        out.print(f"  moved {escape(item['from'])} -> {escape(item['to'])} "
                  f"(id {escape(str(item['id']))})")
    for item in outcome.get("removed") or []:
        out.print(f"  {'removed' if done else 'would remove'} {escape(item['path'])} "
                  f"(id {escape(str(item['id']))})")
    for item in outcome.get("dangling") or []:
        out.print(f"  [yellow]dangling link[/] in {escape(item['path'])} to "
                  f"{escape(item['target'])}")


def _remember_preview(outcome: RememberPreview) -> None:
    what = "a new leaf" if outcome["created"] else "the existing leaf"
    out.print(f"remember [yellow]dry run[/]: nothing written; the fact would go to {what}")
    out.print(f"  {escape(outcome['path'])}")
    if outcome.get("placement"):
        _placement(outcome["placement"])


def _placement(placement: Placement) -> None:
    """Where a placed fact went and why: the branch, its score, the rule."""
    reason = placement["reason"]
    matched = f"{len(reason['matched_terms'])} of {reason['terms']} words"
    if placement["action"] == "inbox":
        best = (f"; best branch {escape(reason['branch'])} scored {reason['branch_score']:g}, "
                f"{matched}") if reason["branch"] else ""
        out.print(f"  placed in the [yellow]inbox[/] ({reason['rule']}{best})")
        return
    verb = "appended to its best leaf" if placement["action"] == "append" else "new leaf"
    runner = (f", runner-up {escape(reason['runner_up'])} {reason['runner_up_score']:g}"
              if reason["runner_up"] else "")
    out.print(f"  placed under {escape(reason['branch'])} ({verb}): score "
               f"{placement['score']:g}, {matched}{runner}")



def consolidate(outcome: ConsolidateResult) -> None:
    proposal = outcome["proposal"]
    if proposal is None:
        out.print(f"{escape(outcome['message'] or 'nothing to consolidate')}")
    else:
        out.print(f"[green]proposed[/] {escape(proposal['proposal_id'])}  "
                   f"[dim]{escape(outcome['path'])}[/]")
        _proposal_text(proposal)
        out.print(f"next: review it, then 'memory-forest proposals accept ROOT "
                   f"{escape(proposal['proposal_id'])}' or 'proposals reject'")
    for item in outcome["skipped"]:
        out.print(f"[yellow]skipped[/] {escape(item['pointer'])} ({escape(item['reason'])})")
    if outcome["remaining"]:
        out.print(f"{outcome['remaining']} more source(s) wait for the next proposal")
    for item in outcome["problems"]:
        err.print(f"[yellow]unreadable proposal[/] {escape(item['path'])} "
                   f"({escape(item['code'])})")


def _proposal_text(proposal: dict[str, Any]) -> None:
    """A proposal as a reviewer reads it: by day, each entry with its text, its sources and
    the leaf it would go to (with the placement's reason)."""
    def target(placement: dict[str, Any]) -> str:
        leaf = f"04 stm/{placement['tree']}/{placement['branch']}/{placement['leaf']}.md"
        reason = placement["reason"]
        # The reason's few telling fields when placement gives them, else the whole of it.
        told = {key: reason[key] for key in ("rule", "branch", "coverage", "runner_up")
                if reason.get(key) is not None}
        because = ", ".join(f"{key} {value}" for key, value in told.items()) or dumps(reason)
        because = because if len(because) <= 200 else because[:199] + "\u2026"
        return (f"-> {escape(leaf)} ({placement['action']}, score {placement['score']:.3g})"
                f"\n      because {escape(because)}")

    for day in proposal["days"]:
        out.print(f"[bold]{day['date']}[/]")
        for entry in day["entries"]:
            out.print(f"  [bold]{escape(entry['entry_id'])}[/] {target(entry['placement'])}")
            for line in entry["summary"].split("\n"):
                out.print(f"    {escape(line)}")
            for source in entry["sources"]:
                out.print(f"    [dim]from {escape(source['pointer'])}[/]")
    if proposal["promotions"]:
        out.print("[bold]existing Daily entries[/]")
    for item in proposal["promotions"]:
        out.print(f"  [bold]{escape(item['source']['pointer'])}[/] {target(item['placement'])}")
    if proposal.get("moves"):
        out.print("[bold]inbox leaves a branch now fits[/]")
    for item in proposal.get("moves") or []:
        out.print(f"  [bold]{escape(item['source']['pointer'])}[/] {target(item['placement'])}")
    for branch in proposal.get("branches") or []:
        out.print(f"[bold]new branch[/] 03 mtm/{escape(branch['tree'])}/"
                  f"{escape(branch['branch'])}.md \"{escape(branch['title'])}\" for "
                  f"{len(branch['leaves'])} inbox leaves sharing "
                  f"{escape(', '.join(branch['terms']))}")
        for item in branch["leaves"]:
            out.print(f"  [bold]{escape(item['source']['pointer'])}[/]")


def proposal(outcome: ProposalShowResult) -> None:
    proposal, counts = outcome["proposal"], outcome["counts"]
    decided = f", {proposal['status']} {proposal['decided_at']}" if proposal["decided_at"] else ""
    out.print(f"proposal {escape(proposal['proposal_id'])} [bold]{proposal['status']}[/] "
               f"(created {proposal['created_at']}{decided}): {counts['entries']} new "
               f"entr{'y' if counts['entries'] == 1 else 'ies'}, {counts['promotions']} "
               f"promotion(s), {counts['sources']} source(s), {counts['moves']} move(s), "
               f"{counts['branches']} new branch(es)")
    if proposal.get("reason"):
        out.print(f"  reason: {escape(proposal['reason'])}")
    _proposal_text(proposal)


def proposals(outcome: ProposalsListResult) -> None:
    if not outcome["proposals"]:
        out.print("no proposals")
    rows = [[escape(row["proposal_id"]), escape(row["created_at"][:16].replace("T", " ")),
             row["status"], str(row["counts"]["entries"]), str(row["counts"]["promotions"]),
             str(row["counts"]["sources"]), str(row["counts"]["moves"]),
             str(row["counts"]["branches"])] for row in outcome["proposals"]]
    if rows:
        grid(rows, ["proposal", "created", "status", "new", "promote", "src", "move", "branch"],
             right=(3, 4, 5, 6, 7))
    for item in outcome["problems"]:
        err.print(f"[yellow]unreadable[/] {escape(item['path'])} ({escape(item['code'])})")


def rejected(outcome: ProposalRejectResult) -> None:
    again = " (it already was; nothing changed)" if outcome["already_rejected"] else ""
    out.print(f"rejected proposal {escape(outcome['proposal_id'])}{again}: its "
               f"{outcome['counts']['sources']} source(s) will not be proposed again")
    if outcome.get("decision"):
        out.print(f"  decision recorded in {escape(outcome['decision'])}")


def sync(outcome: SyncResult) -> None:
    if outcome["dry_run"]:
        would = outcome.get("would_commit") or []
        out.print(f"would commit {len(would)} file(s)" + ("" if not outcome["created"]
                                                           else " (new repository)"))
        for path in would[:MAX_LISTED_ISSUES]:
            out.print(f"  {escape(path)}")
        _left(outcome)
        incoming = outcome.get("incoming")
        out.print("would pull nothing" if not incoming or not incoming["commits"] else
                   f"would pull {incoming['commits']} commit(s), {incoming['files']} file(s)")
        for finding in outcome.get("secrets", []):
            out.print(f"[yellow]secret[/] {escape(finding['path'])}:{finding['line']} "
                       f"{escape(finding['rule'])}")
        return
    if outcome["nothing_to_do"]:
        out.print(f"sync [green]ok[/]: nothing to do ({outcome['seconds']} s)")
        return
    committed, pulled = outcome.get("committed"), outcome.get("pulled") or {}
    if committed:
        out.print(f"committed {committed['files']} file(s): {escape(committed['message'])}")
    if pulled.get("commits"):
        out.print(f"pulled {pulled['commits']} commit(s), {pulled['files']} file(s)")
    _left(outcome)
    for conflict in outcome.get("conflicts", []):
        out.print(f"[yellow]conflict[/] {escape(conflict['path'])}: {_conflict_note(conflict)}")
    errors = (outcome.get("checks") or {}).get("errors") or []
    for issue in errors[:MAX_LISTED_ISSUES]:
        out.print(problem_line(issue))
    pushed = "pushed" if outcome.get("pushed") else "nothing to push"
    if outcome.get("remote") is None:
        pushed = "no remote to push to ('memory-forest sync ROOT --init URL' adds one)"
    out.print(f"sync [green]ok[/]: {pushed} ({outcome['seconds']} s)")


def _left(outcome: SyncResult) -> None:
    """One short line per kind of path sync keeps to this machine."""
    incoming = outcome.get("pulled") or outcome.get("incoming") or {}
    for key, what in (("left_local", "left local (not the forest's)"),
                      ("stop_tracking", "would stop tracking (files kept)"),
                      ("stopped_tracking", "stopped tracking (files kept)")):
        _left_line(outcome.get(key), what)
    _left_line(incoming.get("not_checked_out"), "not checked out from the remote")


def _left_line(found: SyncLeft | None, what: str) -> None:
    if not found or not found["count"]:
        return
    shown = ", ".join(escape(entry["path"]) for entry in found["paths"][:3])
    more = f" and {found['count'] - 3} more" if found["count"] > 3 else ""
    out.print(f"{found['count']} path(s) {what}: {shown}{more}")


def _conflict_note(conflict: dict[str, Any]) -> str:
    kind = conflict.get("kind")
    if kind == "copy":
        return f"ours kept; theirs is {escape(conflict['copy'])}"
    if kind == "entries":
        return "theirs kept as " + escape(", ".join(conflict["entries"]))
    if kind == "kept_changed":
        return f"deleted by {conflict['deleted_by']}; the changed version ({conflict['kept']}) kept"
    if kind == "kept_ours":
        return f"ours kept; theirs is git blob {conflict['theirs_blob']}"
    return "deleted on both sides"
