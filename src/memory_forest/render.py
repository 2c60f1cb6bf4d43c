"""Human rendering of operation results with rich. Fetching data never happens here."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.table import Table

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


MAX_LISTED_ISSUES = 20


def render(outcome: dict[str, Any], style: str = "generic") -> None:
    """Show one outcome to a person in the operation's ``style`` (failures all alike)."""
    if not outcome.get("ok") and "issues" not in outcome and "problems" not in outcome:
        _failure(outcome["error"])
        return
    _STYLES[style](outcome)


def _failure(error: dict[str, Any]) -> None:
    """The error line, then the issues behind it (``write_invalid``, ``forest_invalid``,
    ``layer_missing``...): without them the reader cannot tell what to fix."""
    # "[code]" must be escaped too, or rich takes it for a markup tag and drops it.
    code = _escape(f"[{error['code']}]")
    _err.print(f"[bold red]error[/] {code} {_escape(error['message'])}")
    details = error.get("details")
    if isinstance(details, dict) and isinstance(details.get("journal"), dict):
        _journal_failure(details)
    issues = details.get("issues") if isinstance(details, dict) else None
    if not isinstance(issues, list):
        return
    listed = [issue for issue in issues if isinstance(issue, dict)][:MAX_LISTED_ISSUES]
    for issue in listed:
        _err.print(f"  {_escape(issue.get('path', '?'))}  {_escape(issue.get('code', '?'))}  "
                   f"{_escape(issue.get('message', ''))}")
    summary = details.get("summary")
    total = max(len(issues), summary.get("errors", 0) if isinstance(summary, dict) else 0)
    if total > len(listed):
        _err.print(f"  ... {total - len(listed)} more")


def _journal_failure(details: dict[str, Any]) -> None:
    """What a journal that cannot be recovered still names, so the operator can check it."""
    journal = details["journal"]
    for path in details.get("paths", []):
        _err.print(f"  fails audit: {_escape(str(path))}")
    for path in journal.get("paths", []):
        _err.print(f"  the journal names: {_escape(str(path))}")
    for item in journal.get("staged", []):
        image = f" of {_escape(str(item['of']))}" if item.get("of") else ""
        _err.print(f"  in the journal: {_escape(str(item.get('name')))}{image} "
                   f"({item.get('size')} bytes)")


def _escape(text: str) -> str:
    """Make untrusted text inert: rich markup escaped, control characters visible.

    Paths and messages can carry memory text (file names, link targets); an
    escape sequence in them must be shown, never sent to the terminal.
    """
    from rich.markup import escape

    visible = _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", str(text))
    return escape(visible)


def _issues(outcome: dict[str, Any]) -> None:
    issues = outcome["issues"]
    if issues:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for column in ("level", "code", "path", "message"):
            table.add_column(column, overflow="fold")
        for issue in issues:
            style = "red" if issue["level"] == "error" else "yellow"
            table.add_row(f"[{style}]{issue['level']}[/]", issue["code"],
                          _escape(issue["path"]), _escape(issue["message"]))
        _out.print(table)
    summary = outcome["summary"]
    documents = sum(outcome.get("counts", {}).values())
    verdict = "[green]ok[/]" if outcome["ok"] else "[red]failed[/]"
    _out.print(f"{outcome['operation']} {verdict}: {documents} canonical files, "
               f"{summary['errors']} error(s), {summary['warnings']} warning(s)")


def _init(outcome: dict[str, Any]) -> None:
    extra = f" with {len(outcome['files'])} example files" if outcome["example"] else ""
    extra += " and the inbox" if outcome.get("inbox") else ""
    _out.print(f"[green]created[/] forest '{_escape(outcome['root'])}'{extra}")


def _doctor(outcome: dict[str, Any]) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    versions = outcome["versions"]
    table.add_row("versions", ", ".join(f"{k} {'absent' if v is None else v}"
                                        for k, v in versions.items()))
    features = outcome["sqlite_features"]
    table.add_row("sqlite", ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in features.items()))
    config = outcome["config"]
    table.add_row("config", config["state"] + (f" ({config['error']['code']})"
                                               if "error" in config else ""))
    for name, count in sorted(outcome.get("counts", {}).items()):
        table.add_row(f"  {name}", str(count))
    istm = outcome.get("istm")
    if istm:
        table.add_row("istm", f"{istm['events']} event(s) in {istm['files']} file(s), "
                      f"{istm['chained']} hash-chained")
    table.add_row("index", _describe(outcome["index"]))
    table.add_row("lock", _describe(outcome["lock"]))
    if "journal" in outcome:
        table.add_row("journal", _describe(outcome["journal"]))
        for path in outcome["journal"].get("paths", []) if \
                outcome["journal"]["state"] == "corrupt" else []:
            table.add_row("  names", _escape(path))
    table.add_row("network", "never required")
    _out.print(table)


def _describe(value: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in value.items() if not isinstance(v, dict | list)) or "-"


def _index(outcome: dict[str, Any]) -> None:
    rebuilt = outcome.get("rebuilt")
    if rebuilt:
        _out.print(f"[yellow]rebuilt[/] the index from scratch ({rebuilt.replace('_', ' ')})")
    _out.print(f"index [green]{outcome['mode']}[/]: {outcome['documents']} documents "
               f"(+{outcome['added']} ~{outcome['changed']} -{outcome['deleted']}, "
               f"{outcome['unchanged']} unchanged) in {outcome['seconds']:.2f} s")
    semantic = outcome.get("semantic")
    if semantic:
        more = f", {semantic['remaining']} still to embed" if semantic["remaining"] else ""
        _out.print(f"semantic [green]on[/]: embedded {semantic['embedded']} document(s) in "
                   f"{semantic['seconds']:.1f} s; {semantic['documents']} of "
                   f"{semantic['embeddable']} have vectors{more}")
    _problems(outcome)


# Enough lines to act on; the full list is always in --json.
_PROBLEM_LINES = 50


def _problems(outcome: dict[str, Any]) -> None:
    """One line per problem (level, code, path, reason), then what was left out."""
    problems = outcome["problems"]
    for problem in problems[:_PROBLEM_LINES]:
        style = "red" if problem["level"] == "error" else "yellow"
        _out.print(f"  [{style}]{problem['level']}[/] {problem['code']} "
                   f"{_escape(problem['path'])}: {_escape(problem['message'])}")
    if len(problems) > _PROBLEM_LINES:
        _out.print(f"  ... and {len(problems) - _PROBLEM_LINES} more (see --json)")
    if outcome["quarantined"]:
        _out.print(f"[yellow]{outcome['quarantined']} document(s) left out of the index[/] "
                   "until their errors are fixed; 'memory-forest validate ROOT' checks them")


def _results(outcome: dict[str, Any]) -> None:
    if not outcome["results"]:
        _out.print("no matches")
    for number, item in enumerate(outcome["results"], start=1):
        notes = [item["status"]] if item["status"] != "active" else []
        notes += _file_notes(item)
        flag = f" [yellow]({', '.join(notes)})[/]" if notes else ""
        _out.print(f"{number:>2}. [bold]{_escape(item['title'])}[/]{flag}  "
                   f"[dim]{_escape(item['path'])}  score {item['score']:.3f}[/]")
        if item.get("body") is not None:
            for line in _body_text(item["body"]).removesuffix("\n").split("\n"):
                _out.print(f"      {line}" if line else "", markup=False, highlight=False,
                           emoji=False)


def _file_notes(node: dict[str, Any]) -> list[str]:
    """What a re-hash found about a node's file, as short words for a listing."""
    if node.get("missing"):
        return ["file missing"]
    if node.get("read_error"):
        return [f"unreadable: {node['read_error']}"]
    if node.get("indexed") is False:
        return ["not indexed"]
    if node.get("changed_since_index"):
        return ["changed since index"]
    return []


def _body_text(body: str) -> str:
    """A body as terminal text: its line breaks and tabs kept, other control characters
    shown inert (an escape sequence in memory must never reach the terminal)."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}",
                  body)


def _trails(outcome: dict[str, Any]) -> None:
    if not outcome["trails"] and not outcome.get("unfiled"):
        _out.print("no evidence in memory for this query")
    for number, trail in enumerate(outcome["trails"], start=1):
        notes = []
        if not trail["complete"]:
            notes.append("partial")
        if not trail["original_query_matched"]:
            notes.append("plan-only")
        if trail["status"] != "active":
            notes.append(trail["status"])
        if outcome.get("ranking") == "fused" and number == 1:
            notes.append("fused ranking")
        note = f" [yellow]({', '.join(notes)})[/]" if notes else ""
        _out.print(f"{number:>2}. score {trail['score']:.3f}{note}")
        for depth, node in enumerate(trail["nodes"]):
            flags = _file_notes(node)
            if node.get("superseded_by"):
                flags.append(f"superseded by {node['superseded_by']}")
            flag = f" [yellow]({_escape(', '.join(flags))})[/]" if flags else ""
            _out.print(f"    {'  ' * depth}{_escape(node['title'])}{flag}  "
                       f"[dim]{_escape(node['path'])}  {node['age_days']:g} d[/]")
        for path in trail.get("missing", []):
            _out.print(f"    [yellow]not indexed:[/] [dim]{_escape(path)}[/]")
    _unfiled(outcome.get("unfiled", []))


def _unfiled(items: list[dict[str, Any]]) -> None:
    """Raw captures after the trails, by path and id only: unreviewed, never a trail."""
    if not items:
        return
    _out.print("unfiled (raw captures not yet promoted; unreviewed):")
    for item in items:
        flags = _file_notes(item)
        flag = f" [yellow]({', '.join(flags)})[/]" if flags else ""
        anchor = item["event_id"] or item["anchor"]
        _out.print(f"    {_escape(item['path'])}#{_escape(anchor)}{flag}  "
                   f"[dim]{_escape(item['observed_at'] or 'no time')}  "
                   f"score {item['score']:.3f}[/]")
def _schedule_print(outcome: dict[str, Any]) -> None:
    """The entry text goes to stdout exactly, so it can be piped; the hints go to stderr."""
    import sys

    entries = outcome["entries"]
    for number, entry in enumerate(entries):
        if len(entries) > 1:  # several files in one stream: say where each one goes
            sys.stdout.write(("\n" if number else "") + f"# file: {entry['install_as']}\n")
        sys.stdout.write(entry["text"])
    sys.stdout.flush()
    _err.print(f"[bold]to install ({outcome['scheduler']}):[/]")
    for step in outcome["install"]:
        _err.print(f"  {_escape(step)}")


def _unlock(outcome: dict[str, Any]) -> None:
    _out.print(f"[green]removed[/] stale lock ({_owner_words(outcome['removed'])})")


def _owner_words(owner: dict[str, Any]) -> str:
    details = ", ".join(f"{key} {owner[key]}" for key in ("pid", "host", "started_at", "command")
                        if key in owner)
    if owner.get("ownerless"):
        return f"no owner file, {owner.get('age_seconds', 0)} s old"
    return _escape(details) or "owner unknown"
def _browse(outcome: dict[str, Any]) -> None:
    issues = outcome["issues"]
    replaced = " (replacing the site browse wrote there before)" if outcome.get("regenerated") \
        else ""
    _out.print(f"[green]wrote[/] {outcome['files']} files ({outcome['documents']} documents) "
               f"to '{_escape(outcome['out'])}'{replaced}; open its "
               f"{_escape(outcome['entry'])} in a browser")
    if issues["errors"] or issues["warnings"]:
        _out.print(f"[yellow]note[/] the forest has {issues['errors']} error(s) and "
                   f"{issues['warnings']} warning(s); see issues.html")
    for path in outcome.get("changed_during_browse", []):
        _out.print(f"[yellow]changed while generating[/] {_escape(path)}")


def _maintain(outcome: dict[str, Any]) -> None:
    for name, step in outcome["steps"].items():
        mark = "[green]ok[/]" if step["ok"] else "[red]failed[/]"
        counts = ", ".join(f"{k} {v}" for k, v in step.items() if k not in ("ok", "duration_ms"))
        _out.print(f"{name:<9} {mark} {step['duration_ms']:>6} ms  {_escape(counts)}")
    _problems(outcome)
    if outcome["ok"]:
        _out.print(f"maintain [green]ok[/] in {outcome['duration_ms']} ms")
    else:
        error = outcome["error"]
        _err.print(f"[bold red]error[/] {_escape('[' + error['code'] + ']')} "
                   f"{_escape(error['message'])}")


def _open(outcome: dict[str, Any]) -> None:
    notes = [outcome["status"]] if outcome["status"] != "active" else []
    notes += _file_notes(outcome)
    flag = f" [yellow]({', '.join(notes)})[/]" if notes else ""
    _out.print(f"[bold]{_escape(outcome['title'])}[/]{flag}  [dim]{_escape(outcome['path'])}  "
               f"sha256 {outcome['sha256'][:12]}[/]", emoji=False)
    _out.print(_body_text(outcome["body"]), markup=False, highlight=False, emoji=False)


def _status(outcome: dict[str, Any]) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    table.add_row("ready", "[green]yes[/]" if outcome["ready"] else "[red]no[/]")
    table.add_row("index", _describe(outcome["index"]))
    table.add_row("documents", str(outcome["documents"]))
    table.add_row("lock", _describe(outcome["lock"]))
    copies = outcome.get("conflict_copies") or []
    if copies:
        table.add_row("conflict copies", _escape(", ".join(copies)))
    table.add_row("semantic", _semantic(outcome["semantic"]))
    if outcome["next_step"]:
        table.add_row("next step", _escape(outcome["next_step"]))
    _out.print(table)


def _semantic(coverage: dict[str, Any]) -> str:
    if not coverage["enabled"]:
        return "off ('memory-forest index ROOT --semantic' turns it on)"
    if coverage["state"] in ("semantic_unavailable", "semantic_model_mismatch"):
        return (f"on, but {coverage['state']}: ranking is lexical "
                "(pip install 'memory-forest[semantic]')")
    if coverage["embeddable"] is None:
        return "on, vectors unreadable"
    return f"on, {coverage['documents']} of {coverage['embeddable']} documents embedded"


def _stats(outcome: dict[str, Any]) -> None:
    table = Table(box=None, pad_edge=False)
    for name in ("layer", "files", "indexed"):
        table.add_column(name, justify="left" if name == "layer" else "right")
    for row in outcome["layers"]:
        table.add_row(row["dir"], str(row["files"]), str(row["indexed"]))
    table.add_row("[bold]all[/]", str(outcome["files"]), str(outcome["indexed"]))
    _out.print(table)
    age = outcome["index_age_seconds"]
    built = f", built {age:.0f} s ago" if age is not None else ""
    problems = outcome["problems"]
    left_out = f", {problems} file(s) left out" if problems else ""
    _out.print(f"index: {outcome['index']}{built}{left_out}")
    _out.print(f"semantic: {_semantic(outcome['semantic'])}")


def _hooks(outcome: dict[str, Any]) -> None:
    dry = " (dry run: nothing written)" if outcome["dry_run"] else ""
    _out.print(f"{outcome['client']} {outcome['event']} hook: [bold]{outcome['action']}[/]{dry}"
               f" in {_escape(outcome['settings'])}")
    if outcome.get("backup"):
        _out.print(f"[dim]backup: {_escape(outcome['backup'])}[/]")
    for warning in outcome.get("warnings", []):
        _err.print(f"[yellow]warning[/] {_escape(warning)}")


def _receipt(outcome: dict[str, Any]) -> None:
    """Every writer: what changed, under which transaction, and the operation's own facts."""
    if outcome.get("dry_run"):
        _remember_preview(outcome)
        return
    verdict = "[yellow]already applied[/]" if outcome["already_applied"] else "[green]committed[/]"
    _out.print(f"{outcome['operation'].replace('_', '-')} {verdict}: transaction "
               f"{_escape(outcome['transaction_id'])}")
    recovered = outcome.get("recovered")
    if recovered:
        _out.print(f"  first recovered an interrupted write: {_escape(recovered['action'])}")
    for item in outcome["touched"]:
        mark = "+" if item["before_sha256"] is None else "~"
        _out.print(f"  {mark} {_escape(item['path'])}")
    if not outcome["touched"]:
        _out.print("  no canonical file changed")
    if "captured" in outcome:
        _out.print(f"  {outcome['captured']} event(s) captured, {outcome['duplicates']} "
                   "duplicate(s) skipped")
    redactions = outcome.get("redactions") or {}
    if redactions:
        listed = ", ".join(f"{rule} x{count}" for rule, count in sorted(redactions.items()))
        _out.print(f"  [yellow]redacted[/] {listed}")
    for item in outcome.get("dispositions", []):
        target = f" in {_escape(item['target'])}" if item.get("target") else ""
        _out.print(f"  {_escape(item['entry_id'])}: {item['disposition']}{target}")
    for path in outcome.get("modes_restored") or []:
        _out.print(f"  [yellow]mode restored[/] {_escape(path)} was wider than 0600, now 0600")
    if outcome.get("title_ignored"):
        _out.print("  [yellow]title ignored[/]: the leaf exists and keeps its own title")
    if outcome.get("placement"):
        _placement(outcome["placement"])


def _remember_preview(outcome: dict[str, Any]) -> None:
    what = "a new leaf" if outcome["created"] else "the existing leaf"
    _out.print(f"remember [yellow]dry run[/]: nothing written; the fact would go to {what}")
    _out.print(f"  {_escape(outcome['path'])}")
    if outcome.get("placement"):
        _placement(outcome["placement"])


def _placement(placement: dict[str, Any]) -> None:
    """Where a placed fact went and why: the branch, its score, the rule."""
    reason = placement["reason"]
    matched = f"{len(reason['matched_terms'])} of {reason['terms']} words"
    if placement["action"] == "inbox":
        best = (f"; best branch {_escape(reason['branch'])} scored {reason['branch_score']:g}, "
                f"{matched}") if reason["branch"] else ""
        _out.print(f"  placed in the [yellow]inbox[/] ({reason['rule']}{best})")
        return
    verb = "appended to its best leaf" if placement["action"] == "append" else "new leaf"
    runner = (f", runner-up {_escape(reason['runner_up'])} {reason['runner_up_score']:g}"
              if reason["runner_up"] else "")
    _out.print(f"  placed under {_escape(reason['branch'])} ({verb}): score "
               f"{placement['score']:g}, {matched}{runner}")


def _structured_context(outcome: dict[str, Any]) -> None:
    _out.print(f"snapshot {outcome['snapshot_sha256']} over {outcome['structured_documents']} "
               "structured documents")
    for item in outcome["documents"]:
        cut = " [yellow](truncated)[/]" if item["truncated"] else ""
        _out.print(f"\n[bold]{_escape(item['title'])}[/]{cut}  [dim]{_escape(item['path'])}  "
                   f"sha256 {item['sha256']}[/]")
        for line in item["body"].split("\n"):  # line breaks kept, other controls shown
            _out.print(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line), markup=False)


def _doctor_extra(outcome: dict[str, Any]) -> None:
    _doctor(outcome)
    walk = outcome.get("walk", {})
    if walk.get("ignored"):
        _out.print(f"ignored: {walk['ignored']} editor or OS debris file(s)")
    istm = outcome.get("istm", {})
    if istm.get("unchained"):
        _out.print(f"info: {istm['unchained']} events in {istm['unchained_files']} ISTM files "
                   "are unchained (written before hash chains)")
    repair = outcome.get("repair")
    if repair and repair.get("unlocked") is not None:
        _out.print(f"repair: [green]removed[/] stale lock ({_owner_words(repair['unlocked'])})")
    if repair:
        _out.print(f"repair: journal {repair['journal']['action']}, "
                   f"{len(repair['modes'])} mode(s) restored")
        if repair["journal"].get("set_aside"):
            _out.print(f"  journal moved to {_escape(repair['journal']['set_aside'])} "
                       "(kept, not deleted)")
        for item in repair["modes"]:
            _out.print(f"  {_escape(item['path'])}: {item['was']} -> {item['now']}")
        for item in repair["modes_failed"]:
            _out.print(f"  [red]not repaired[/] {_escape(item['path'])} ({item['code']})")


def _consolidate(outcome: dict[str, Any]) -> None:
    proposal = outcome["proposal"]
    if proposal is None:
        _out.print(f"{_escape(outcome['message'] or 'nothing to consolidate')}")
    else:
        _out.print(f"[green]proposed[/] {_escape(proposal['proposal_id'])}  "
                   f"[dim]{_escape(outcome['path'])}[/]")
        _proposal_text(proposal)
        _out.print(f"next: review it, then 'memory-forest proposals accept ROOT "
                   f"{_escape(proposal['proposal_id'])}' or 'proposals reject'")
    for item in outcome["skipped"]:
        _out.print(f"[yellow]skipped[/] {_escape(item['pointer'])} ({_escape(item['reason'])})")
    if outcome["remaining"]:
        _out.print(f"{outcome['remaining']} more source(s) wait for the next proposal")
    for item in outcome["problems"]:
        _err.print(f"[yellow]unreadable proposal[/] {_escape(item['path'])} "
                   f"({_escape(item['code'])})")


def _proposal_text(proposal: dict[str, Any]) -> None:
    """A proposal as a reviewer reads it: by day, each entry with its text, its sources and
    the leaf it would go to (with the placement's reason)."""
    from .jsonio import dumps

    def target(placement: dict[str, Any]) -> str:
        leaf = f"04 stm/{placement['tree']}/{placement['branch']}/{placement['leaf']}.md"
        reason = placement["reason"]
        # The reason's few telling fields when placement gives them, else the whole of it.
        told = {key: reason[key] for key in ("rule", "branch", "coverage", "runner_up")
                if reason.get(key) is not None}
        because = ", ".join(f"{key} {value}" for key, value in told.items()) or dumps(reason)
        because = because if len(because) <= 200 else because[:199] + "\u2026"
        return (f"-> {_escape(leaf)} ({placement['action']}, score {placement['score']:.3g})"
                f"\n      because {_escape(because)}")

    for day in proposal["days"]:
        _out.print(f"[bold]{day['date']}[/]")
        for entry in day["entries"]:
            _out.print(f"  [bold]{_escape(entry['entry_id'])}[/] {target(entry['placement'])}")
            for line in entry["summary"].split("\n"):
                _out.print(f"    {_escape(line)}")
            for source in entry["sources"]:
                _out.print(f"    [dim]from {_escape(source['pointer'])}[/]")
    if proposal["promotions"]:
        _out.print("[bold]existing Daily entries[/]")
    for item in proposal["promotions"]:
        _out.print(f"  [bold]{_escape(item['source']['pointer'])}[/] {target(item['placement'])}")


def _proposal(outcome: dict[str, Any]) -> None:
    proposal, counts = outcome["proposal"], outcome["counts"]
    decided = f", {proposal['status']} {proposal['decided_at']}" if proposal["decided_at"] else ""
    _out.print(f"proposal {_escape(proposal['proposal_id'])} [bold]{proposal['status']}[/] "
               f"(created {proposal['created_at']}{decided}): {counts['entries']} new "
               f"entr{'y' if counts['entries'] == 1 else 'ies'}, {counts['promotions']} "
               f"promotion(s), {counts['sources']} source(s)")
    if proposal.get("reason"):
        _out.print(f"  reason: {_escape(proposal['reason'])}")
    _proposal_text(proposal)


def _proposals(outcome: dict[str, Any]) -> None:
    if not outcome["proposals"]:
        _out.print("no proposals")
    # Fits 80 columns: a narrow terminal (or none) must not cut the headers down to "sta…".
    table = Table(box=None, pad_edge=False)
    for name in ("proposal", "created", "status", "new", "promote", "src"):
        table.add_column(name, no_wrap=True,
                         justify="right" if name in ("new", "promote", "src") else "left")
    for row in outcome["proposals"]:
        counts = row["counts"]
        created = row["created_at"][:16].replace("T", " ")
        table.add_row(_escape(row["proposal_id"]), _escape(created), row["status"],
                      str(counts["entries"]), str(counts["promotions"]), str(counts["sources"]))
    if outcome["proposals"]:
        _out.print(table)
    for item in outcome["problems"]:
        _err.print(f"[yellow]unreadable[/] {_escape(item['path'])} ({_escape(item['code'])})")


def _rejected(outcome: dict[str, Any]) -> None:
    again = " (it already was; nothing changed)" if outcome["already_rejected"] else ""
    _out.print(f"rejected proposal {_escape(outcome['proposal_id'])}{again}: its "
               f"{outcome['counts']['sources']} source(s) will not be proposed again")


def _sync(outcome: dict[str, Any]) -> None:
    if outcome["dry_run"]:
        would = outcome.get("would_commit") or []
        _out.print(f"would commit {len(would)} file(s)" + ("" if not outcome["created"]
                                                           else " (new repository)"))
        for path in would[:MAX_LISTED_ISSUES]:
            _out.print(f"  {_escape(path)}")
        incoming = outcome.get("incoming")
        _out.print("would pull nothing" if not incoming or not incoming["commits"] else
                   f"would pull {incoming['commits']} commit(s), {incoming['files']} file(s)")
        for finding in outcome.get("secrets", []):
            _out.print(f"[yellow]secret[/] {_escape(finding['path'])}:{finding['line']} "
                       f"{_escape(finding['rule'])}")
        return
    if outcome["nothing_to_do"]:
        _out.print(f"sync [green]ok[/]: nothing to do ({outcome['seconds']} s)")
        return
    committed, pulled = outcome.get("committed"), outcome.get("pulled") or {}
    if committed:
        _out.print(f"committed {committed['files']} file(s): {_escape(committed['message'])}")
    if pulled.get("commits"):
        _out.print(f"pulled {pulled['commits']} commit(s), {pulled['files']} file(s)")
    for conflict in outcome.get("conflicts", []):
        _out.print(f"[yellow]conflict[/] {_escape(conflict['path'])}: {_conflict_note(conflict)}")
    errors = (outcome.get("checks") or {}).get("errors") or []
    for issue in errors[:MAX_LISTED_ISSUES]:
        _out.print(f"[red]error[/] {_escape(issue['path'])}: {_escape(issue['code'])}")
    pushed = "pushed" if outcome.get("pushed") else "nothing to push"
    if outcome.get("remote") is None:
        pushed = "no remote to push to ('memory-forest sync ROOT --init URL' adds one)"
    _out.print(f"sync [green]ok[/]: {pushed} ({outcome['seconds']} s)")


def _conflict_note(conflict: dict[str, Any]) -> str:
    kind = conflict.get("kind")
    if kind == "copy":
        return f"ours kept; theirs is {_escape(conflict['copy'])}"
    if kind == "entries":
        return "theirs kept as " + _escape(", ".join(conflict["entries"]))
    if kind == "kept_changed":
        return f"deleted by {conflict['deleted_by']}; the changed version ({conflict['kept']}) kept"
    if kind == "kept_ours":
        return f"ours kept; theirs is git blob {conflict['theirs_blob']}"
    return "deleted on both sides"


def _generic(outcome: dict[str, Any]) -> None:
    from .jsonio import dumps

    _out.print(_escape(dumps(outcome)))


# The styles the catalog's operations name (``Operation.render``).
_STYLES = {
    "sync": _sync,
    "issues": _issues,
    "init": _init,
    "doctor": _doctor_extra,
    "index": _index,
    "results": _results,
    "trails": _trails,
    "maintain": _maintain,
    "schedule_print": _schedule_print,
    "unlock": _unlock,
    "browse": _browse,
    "open": _open,
    "status": _status,
    "stats": _stats,
    "hooks": _hooks,
    "receipt": _receipt,
    "structured_context": _structured_context,
    "consolidate": _consolidate,
    "proposal": _proposal,
    "proposals": _proposals,
    "rejected": _rejected,
    "generic": _generic,
}
