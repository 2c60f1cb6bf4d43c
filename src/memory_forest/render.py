"""Human rendering of operation results. Fetching data never happens here.

Where the output goes (a terminal or not) and how rows are laid out is
``terminal``'s; the writers' and the review commands' styles are in
``render_writes``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import render_writes
from .jsonio import dumps
from .terminal import (
    CONTROL,
    MAX_LISTED_ISSUES,
    body_text,
    err,
    escape,
    grid,
    out,
    pairs,
    problem_line,
)

if TYPE_CHECKING:
    from .results import (
        Node,
        OpenResult,
        RetrieveResult,
        RouteResult,
        SearchResult,
        Semantic,
        StatsResult,
        StatusResult,
        Unfiled,
    )


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
    code = escape(f"[{error['code']}]")
    err.print(f"[bold red]error[/] {code} {escape(error['message'])}")
    details = error.get("details")
    if isinstance(details, dict) and isinstance(details.get("journal"), dict):
        _journal_failure(details)
    if isinstance(details, dict) and isinstance(details.get("damaged"), list):
        for item in details["damaged"]:  # what a journal restore could not identify or verify
            if isinstance(item, dict):
                what, why = item.get("name") or item.get("path"), item.get("reason")
                err.print(f"  cannot restore: {escape(str(what))} ({escape(str(why))})")
    issues = details.get("issues") if isinstance(details, dict) else None
    if not isinstance(issues, list):
        return
    listed = [issue for issue in issues if isinstance(issue, dict)][:MAX_LISTED_ISSUES]
    for issue in listed:
        err.print(f"  {problem_line(issue, level=False)}")
    summary = details.get("summary")
    total = max(len(issues), summary.get("errors", 0) if isinstance(summary, dict) else 0)
    if total > len(listed):
        err.print(f"  ... {total - len(listed)} more")


def _journal_failure(details: dict[str, Any]) -> None:
    """What a journal that cannot be recovered still names, so the operator can check it."""
    journal = details["journal"]
    for path in details.get("paths", []):
        err.print(f"  fails audit: {escape(str(path))}")
    for path in journal.get("paths", []):
        err.print(f"  the journal names: {escape(str(path))}")
    for item in journal.get("staged", []):
        image = f" of {escape(str(item['of']))}" if item.get("of") else ""
        err.print(f"  in the journal: {escape(str(item.get('name')))}{image} "
                  f"({item.get('size')} bytes)")


def _issues(outcome: dict[str, Any]) -> None:
    issues = outcome["issues"]
    if issues and out.is_terminal:
        grid([[f"[{'red' if issue['level'] == 'error' else 'yellow'}]{issue['level']}[/]",
               escape(issue["code"]), escape(issue["path"]), escape(issue["message"])]
              for issue in issues], ["level", "code", "path", "message"])
    for issue in issues if not out.is_terminal else ():
        out.print(problem_line(issue))
    summary = outcome["summary"]
    documents = sum(outcome.get("counts", {}).values())
    verdict = "[green]ok[/]" if outcome["ok"] else "[red]failed[/]"
    out.print(f"{outcome['operation']} {verdict}: {documents} canonical files, "
              f"{summary['errors']} error(s), {summary['warnings']} warning(s)")


def _init(outcome: dict[str, Any]) -> None:
    extra = f" with {len(outcome['files'])} example files" if outcome["example"] else ""
    extra += " and the inbox" if outcome.get("inbox") else ""
    out.print(f"[green]created[/] forest '{escape(outcome['root'])}'{extra}")


def _doctor(outcome: dict[str, Any]) -> None:
    versions, features = outcome["versions"], outcome["sqlite_features"]
    config = outcome["config"]
    rows = [("versions", ", ".join(f"{k} {'absent' if v is None else v}"
                                   for k, v in versions.items())),
            ("sqlite", ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in features.items())),
            ("config", config["state"] + (f" ({config['error']['code']}: "
                                          f"{escape(config['error']['message'])})"
                                          if "error" in config else ""))]
    rows += [(f"  {name}", str(count)) for name, count in sorted(outcome.get("counts",
                                                                             {}).items())]
    istm = outcome.get("istm")
    if istm:
        rows.append(("istm", f"{istm['events']} event(s) in {istm['files']} file(s), "
                     f"{istm['chained']} hash-chained"))
    rows += [("index", _describe(outcome["index"])), ("lock", _describe(outcome["lock"])),
             ("watcher", _watcher(outcome["watcher"]))]
    if "journal" in outcome:
        rows.append(("journal", _describe(outcome["journal"])))
        if outcome["journal"]["state"] == "corrupt":
            rows += [("  names", escape(path)) for path in outcome["journal"].get("paths", [])]
    rows += _git_damage(outcome)
    rows.append(("network", "never required"))
    repairable = outcome["lock"]["state"] == "stale" or \
        outcome.get("journal", {}).get("state", "clear") not in ("clear", "invalid")
    if repairable and "repair" not in outcome:
        rows.append(("fix", "run memory-forest doctor ROOT --repair"))
    pairs(rows)


def _git_damage(outcome: dict[str, Any]) -> list[tuple[str, str]]:
    """One row per repository fault that stops sync: the piece, its code and what detail
    names it (the offending commit), and the command that fixes it."""
    rows = []
    for piece in outcome.get("git", {}).get("damaged", []):
        named = f" at commit {piece['commit']}" if "commit" in piece else ""
        rows.append((escape(piece["piece"]), f"{piece['code']}{named}; "
                     f"fix: {escape(piece['fix'])}"))
    return rows


def _describe(value: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in value.items() if not isinstance(v, dict | list)) or "-"


def _index(outcome: dict[str, Any]) -> None:
    rebuilt = outcome.get("rebuilt")
    if rebuilt:
        out.print(f"[yellow]rebuilt[/] the index from scratch ({rebuilt.replace('_', ' ')})")
    out.print(f"index [green]{outcome['mode']}[/]: {outcome['documents']} documents "
               f"(+{outcome['added']} ~{outcome['changed']} -{outcome['deleted']}, "
               f"{outcome['unchanged']} unchanged) in {outcome['seconds']:.2f} s")
    semantic = outcome.get("semantic")
    if semantic:
        more = f", {semantic['remaining']} still to embed" if semantic["remaining"] else ""
        out.print(f"semantic [green]on[/]: embedded {semantic['embedded']} document(s) in "
                   f"{semantic['seconds']:.1f} s; {semantic['documents']} of "
                   f"{semantic['embeddable']} have vectors{more}")
        for piece in semantic.get("healed", []):
            out.print(f"  rebuilt or removed damaged {escape(piece)}")
    _problems(outcome)


# Enough lines to act on; the full list is always in --json.
_PROBLEM_LINES = 50


def _problems(outcome: dict[str, Any]) -> None:
    """One line per problem (level, path, code, message), then what was left out."""
    problems = outcome["problems"]
    for problem in problems[:_PROBLEM_LINES]:
        out.print(f"  {problem_line(problem)}")
    if len(problems) > _PROBLEM_LINES:
        out.print(f"  ... and {len(problems) - _PROBLEM_LINES} more (see --json)")
    if outcome["quarantined"]:
        out.print(f"[yellow]{outcome['quarantined']} document(s) left out of the index[/] "
                   "until their errors are fixed; 'memory-forest validate ROOT' checks them")


def _results(outcome: RouteResult | SearchResult) -> None:
    if not outcome["results"]:
        out.print("no matches")
    for number, item in enumerate(outcome["results"], start=1):
        notes = [item["status"]] if item["status"] != "active" else []
        notes += _file_notes(item)
        flag = f" [yellow]({', '.join(notes)})[/]" if notes else ""
        out.print(f"{number:>2}. [bold]{escape(item['title'])}[/]{flag}  "
                   f"[dim]{escape(item['path'])}  score {item['score']:.3f}[/]")
        if item.get("body") is not None:
            for line in body_text(item["body"]).removesuffix("\n").split("\n"):
                out.print(f"      {line}" if line else "", markup=False, highlight=False,
                           emoji=False)


def _file_notes(node: Node) -> list[str]:
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


def _trails(outcome: RetrieveResult) -> None:
    if not outcome["trails"] and not outcome.get("unfiled"):
        out.print("no evidence in memory for this query")
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
        out.print(f"{number:>2}. score {trail['score']:.3f}{note}")
        for depth, node in enumerate(trail["nodes"]):
            flags = _file_notes(node)
            if node.get("superseded_by"):
                flags.append(f"superseded by {node['superseded_by']}")
            flag = f" [yellow]({escape(', '.join(flags))})[/]" if flags else ""
            out.print(f"    {'  ' * depth}{escape(node['title'])}{flag}  "
                       f"[dim]{escape(node['path'])}  {node['age_days']:g} d[/]")
        for path in trail.get("missing", []):
            out.print(f"    [yellow]not indexed:[/] [dim]{escape(path)}[/]")
    _unfiled(outcome.get("unfiled", []))


def _unfiled(items: list[Unfiled]) -> None:
    """Raw captures after the trails, by path and id only: unreviewed, never a trail."""
    if not items:
        return
    out.print("unfiled (raw captures not yet promoted; unreviewed):")
    for item in items:
        flags = _file_notes(item)
        flag = f" [yellow]({', '.join(flags)})[/]" if flags else ""
        anchor = item["event_id"] or item["anchor"]
        out.print(f"    {escape(item['path'])}#{escape(anchor)}{flag}  "
                   f"[dim]{escape(item['observed_at'] or 'no time')}  "
                   f"score {item['score']:.3f}[/]")
def _schedule_print(outcome: dict[str, Any]) -> None:
    """The entry text goes to stdout exactly, so it can be piped; the hints go to stderr."""
    entries = outcome["entries"]
    for number, entry in enumerate(entries):
        if len(entries) > 1:  # several files in one stream: say where each one goes
            sys.stdout.write(("\n" if number else "") + f"# file: {entry['install_as']}\n")
        sys.stdout.write(entry["text"])
    sys.stdout.flush()
    err.print(f"[bold]to install ({outcome['scheduler']}):[/]")
    for step in outcome["install"]:
        err.print(f"  {escape(step)}")


def _unlock(outcome: dict[str, Any]) -> None:
    out.print(f"[green]removed[/] stale lock ({_owner_words(outcome['removed'])})")


def _owner_words(owner: dict[str, Any]) -> str:
    details = ", ".join(f"{key} {owner[key]}" for key in ("pid", "host", "started_at", "command")
                        if key in owner)
    if owner.get("ownerless"):
        return f"no owner file, {owner.get('age_seconds', 0)} s old"
    return escape(details) or "owner unknown"
def _browse(outcome: dict[str, Any]) -> None:
    issues = outcome["issues"]
    replaced = " (replacing the site browse wrote there before)" if outcome.get("regenerated") \
        else ""
    out.print(f"[green]wrote[/] {outcome['files']} files ({outcome['documents']} documents) "
               f"to '{escape(outcome['out'])}'{replaced}; open its "
               f"{escape(outcome['entry'])} in a browser")
    if issues["errors"] or issues["warnings"]:
        out.print(f"[yellow]note[/] the forest has {issues['errors']} error(s) and "
                   f"{issues['warnings']} warning(s); see issues.html")
    for path in outcome.get("changed_during_browse", []):
        out.print(f"[yellow]changed while generating[/] {escape(path)}")


def _maintain(outcome: dict[str, Any]) -> None:
    for name, step in outcome["steps"].items():
        mark = "[green]ok[/]" if step["ok"] else "[red]failed[/]"
        counts = ", ".join(f"{k} {v}" for k, v in step.items() if k not in ("ok", "duration_ms"))
        out.print(f"{name:<9} {mark} {step['duration_ms']:>6} ms  {escape(counts)}")
    _problems(outcome)
    if outcome["ok"]:
        out.print(f"maintain [green]ok[/] in {outcome['duration_ms']} ms")
    else:
        error = outcome["error"]
        err.print(f"[bold red]error[/] {escape('[' + error['code'] + ']')} "
                   f"{escape(error['message'])}")


def _open(outcome: OpenResult) -> None:
    notes = [outcome["status"]] if outcome["status"] != "active" else []
    notes += _file_notes(outcome)
    flag = f" [yellow]({', '.join(notes)})[/]" if notes else ""
    out.print(f"[bold]{escape(outcome['title'])}[/]{flag}  [dim]{escape(outcome['path'])}  "
               f"sha256 {outcome['sha256'][:12]}[/]", emoji=False)
    out.print(body_text(outcome["body"]), markup=False, highlight=False, emoji=False)


def _status(outcome: StatusResult) -> None:
    rows = [("ready", "[green]yes[/]" if outcome["ready"] else "[red]no[/]"),
            ("index", _describe(outcome["index"])), ("documents", str(outcome["documents"])),
            ("lock", _describe(outcome["lock"])), ("watcher", _watcher(outcome["watcher"]))]
    copies = outcome.get("conflict_copies") or []
    if copies:
        rows.append(("conflict copies", escape(", ".join(copies))))
    rows.append(("semantic", _semantic(outcome["semantic"])))
    rows += _git_damage(outcome)
    if outcome["next_step"]:
        rows.append(("next step", escape(outcome["next_step"])))
    pairs(rows)


def _watcher(watcher: dict[str, Any]) -> str:
    if not watcher["running"]:
        return "not running (the index follows 'index' and 'maintain'; 'watch' keeps it live)"
    if watcher.get("answering") is False:
        return f"pid {watcher['pid']}, not answering"
    behind = "current" if watcher["current"] else f"{watcher['behind_seconds']:.1f} s behind"
    return f"pid {watcher['pid']}, {behind}"


def _watch(outcome: dict[str, Any]) -> None:
    out.print(f"watched for {outcome['seconds']:.0f} s: {outcome['builds']} build(s), "
              f"{outcome['answered']} warm answer(s); stopped by {outcome['stopped_by']}")


def _semantic(coverage: Semantic) -> str:
    if not coverage["enabled"]:
        return "off ('memory-forest index ROOT --semantic' turns it on)"
    if coverage["state"] in ("semantic_unavailable", "semantic_model_mismatch"):
        return (f"on, but {coverage['state']}: ranking is lexical "
                "(pip install -e '.[semantic]' in the clone's folder)")
    if coverage["embeddable"] is None:
        return ("on, but the vectors are damaged: ranking is lexical "
                "('memory-forest index ROOT --semantic' rebuilds them)")
    return f"on, {coverage['documents']} of {coverage['embeddable']} documents embedded"


def _stats(outcome: StatsResult) -> None:
    rows = [[row["dir"], str(row["files"]), str(row["indexed"])] for row in outcome["layers"]]
    rows.append(["[bold]all[/]", str(outcome["files"]), str(outcome["indexed"])])
    if out.is_terminal:
        grid(rows, ["layer", "files", "indexed"], right=(1, 2))
    else:  # each line says what its numbers are, so it reads alone
        for layer, files, indexed in rows:
            out.print(f"{layer}: {files} file(s), {indexed} indexed")
    age = outcome["index_age_seconds"]
    built = f", built {age:.0f} s ago" if age is not None else ""
    problems = outcome["problems"]
    left_out = f", {problems} file(s) left out" if problems else ""
    out.print(f"index: {outcome['index']}{built}{left_out}")
    out.print(f"semantic: {_semantic(outcome['semantic'])}")


def _hooks(outcome: dict[str, Any]) -> None:
    dry = " (dry run: nothing written)" if outcome["dry_run"] else ""
    out.print(f"{outcome['client']} {outcome['event']} hook: [bold]{outcome['action']}[/]{dry}"
               f" in {escape(outcome['settings'])}")
    if outcome.get("backup"):
        out.print(f"[dim]backup: {escape(outcome['backup'])}[/]")
    for warning in outcome.get("warnings", []):
        err.print(f"[yellow]warning[/] {escape(warning)}")

def _structured_context(outcome: dict[str, Any]) -> None:
    out.print(f"snapshot {outcome['snapshot_sha256']} over {outcome['structured_documents']} "
               "structured documents")
    for item in outcome["documents"]:
        cut = " [yellow](truncated)[/]" if item["truncated"] else ""
        out.print(f"\n[bold]{escape(item['title'])}[/]{cut}  [dim]{escape(item['path'])}  "
                   f"sha256 {item['sha256']}[/]")
        for line in item["body"].split("\n"):  # line breaks kept, other controls shown
            out.print(CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line), markup=False)


def _doctor_extra(outcome: dict[str, Any]) -> None:
    _doctor(outcome)
    walk = outcome.get("walk", {})
    if walk.get("ignored"):
        out.print(f"ignored: {walk['ignored']} editor or OS debris file(s)")
    istm = outcome.get("istm", {})
    if istm.get("unchained"):
        out.print(f"info: {istm['unchained']} events in {istm['unchained_files']} ISTM files "
                   "are unchained (written before hash chains)")
    repair = outcome.get("repair")
    if repair and repair.get("unlocked") is not None:
        out.print(f"repair: [green]removed[/] stale lock ({_owner_words(repair['unlocked'])})")
    if repair and repair.get("git"):
        out.print(f"repair: [green]removed[/] stale {repair['git']['removed']}")
    if repair:
        out.print(f"repair: journal {repair['journal']['action']}, "
                   f"{len(repair['modes'])} mode(s) restored")
        for verb in ("restored", "removed"):
            for path in repair["journal"].get(verb, []):
                out.print(f"  {verb} {escape(path)}")
        if repair["journal"].get("set_aside"):
            out.print(f"  journal moved to {escape(repair['journal']['set_aside'])} "
                       "(kept, not deleted)")
        for item in repair["modes"]:
            out.print(f"  {escape(item['path'])}: {item['was']} -> {item['now']}")
        for item in repair["modes_failed"]:
            out.print(f"  [red]not repaired[/] {escape(item['path'])} ({item['code']})")
        for piece in repair.get("healed", []):
            out.print(f"  rebuilt or removed derived {escape(piece)}")
    for item in outcome.get("damaged", []):
        out.print(f"[yellow]damaged[/] {escape(item['piece'])} ({item['code']}): "
                   f"run {escape(item['fix'])}")

def _completion(outcome: dict[str, Any]) -> None:
    """The script exactly, so ``source <(memory-forest completion bash)`` loads it."""
    sys.stdout.write(outcome["script"])
    sys.stdout.flush()


def _generic(outcome: dict[str, Any]) -> None:
    out.print(escape(dumps(outcome)))


# The styles the catalog's operations name (``Operation.render``).
_STYLES = {
    "sync": render_writes.sync,
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
    "watch": _watch,
    "stats": _stats,
    "hooks": _hooks,
    "receipt": render_writes.receipt,
    "structured_context": _structured_context,
    "consolidate": render_writes.consolidate,
    "proposal": render_writes.proposal,
    "proposals": render_writes.proposals,
    "rejected": render_writes.rejected,
    "completion": _completion,
    "generic": _generic,
}
