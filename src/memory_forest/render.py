"""Human rendering of operation results with rich. Fetching data never happens here."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def render(outcome: dict[str, Any]) -> None:
    if not outcome.get("ok") and "issues" not in outcome:
        error = outcome["error"]
        _err.print(f"[bold red]error[/] [{error['code']}] {_escape(error['message'])}")
        return
    handler = _RENDERERS.get(outcome["operation"], _generic)
    handler(outcome)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(str(text))


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
    _out.print(f"[green]created[/] forest '{_escape(outcome['root'])}'{extra}")


def _doctor(outcome: dict[str, Any]) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    versions = outcome["versions"]
    table.add_row("versions", ", ".join(f"{k} {v}" for k, v in versions.items()))
    features = outcome["sqlite_features"]
    table.add_row("sqlite", ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in features.items()))
    config = outcome["config"]
    table.add_row("config", config["state"] + (f" ({config['error']['code']})"
                                               if "error" in config else ""))
    for name, count in sorted(outcome.get("counts", {}).items()):
        table.add_row(f"  {name}", str(count))
    table.add_row("index", _describe(outcome["index"]))
    table.add_row("lock", _describe(outcome["lock"]))
    table.add_row("network", "never required")
    _out.print(table)


def _describe(value: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in value.items() if not isinstance(v, dict | list)) or "-"


def _browse(outcome: dict[str, Any]) -> None:
    issues = outcome["issues"]
    _out.print(f"[green]wrote[/] {outcome['files']} files ({outcome['documents']} documents) "
               f"to '{_escape(outcome['out'])}'; open its {_escape(outcome['entry'])} "
               "in a browser")
    if issues["errors"] or issues["warnings"]:
        _out.print(f"[yellow]note[/] the forest has {issues['errors']} error(s) and "
                   f"{issues['warnings']} warning(s); see issues.html")
    for path in outcome.get("changed_during_browse", []):
        _out.print(f"[yellow]changed while generating[/] {_escape(path)}")


def _generic(outcome: dict[str, Any]) -> None:
    from .jsonio import dumps

    _out.print(_escape(dumps(outcome)))


_RENDERERS = {
    "validate": _issues,
    "audit": _issues,
    "init": _init,
    "doctor": _doctor,
    "browse": _browse,
}
