"""Operations that create, check, repair, schedule and publish a forest."""

from __future__ import annotations

from . import FLAG, FLOAT, INT, PATH, TEXT, Operation, Param
from .params import WAIT

SHELLS = ("bash", "zsh", "fish")  # the shells ``completion`` writes a script for
_DRY_RUN = Param("dry_run", FLAG, "Report the change; write nothing.", flags=("--dry-run",))
_CLIENT = Param("client", TEXT, "claude-code or codex.", flags=("--client",), required=True,
                choices="memory_forest.hooks:CLIENTS")
_SETTINGS = Param("settings", PATH, "Settings file (default: ~/.claude/settings.json for "
                  "claude-code, ~/.codex/hooks.json for codex).", flags=("--settings",))

OPERATIONS = (
    Operation(
        "init", "memory_forest.operations:init",
        "Create a new private forest (0700/0600) at a path that does not exist.",
        "memory-forest init ~/memory --example",
        # Not "root": a new forest is always named, never the default root.
        params=(Param("target", PATH, "Path of the new forest (must not exist).",
                      required=True, metavar="ROOT"),
                Param("example", FLAG, "Fill it with the synthetic example.",
                      flags=("--example",)),
                Param("inbox", FLAG, "Also create the inbox tree and branch (02 ltm/inbox_LTM.md, "
                      "03 mtm/inbox/inbox.md) where remember files facts it cannot place, and "
                      "the index; without it remember creates them on first use.",
                      flags=("--inbox",))),
        forest=False, writes=True, render="init"),
    Operation(
        "validate", "memory_forest.operations:validate",
        "Check the structural contract: layers, names, parents, modes, symlinks, UTF-8, ISTM.",
        "memory-forest validate ~/memory --json", render="issues"),
    Operation(
        "audit", "memory_forest.operations:audit",
        "Validate, then check the link contract (parent links, adjacent layers only) and "
        "provenance (ISTM hash chains, sources pointers).",
        "memory-forest audit ~/memory", render="issues"),
    Operation(
        "doctor", "memory_forest.operations:doctor",
        "Report versions, SQLite features, config, counts, hash-chained ISTM events, index, "
        "lock and journal state.",
        "memory-forest doctor ~/memory --repair",
        params=(Param("repair", FLAG, "Clear a stale lock, finish or roll back an interrupted "
                      "write, restore 0700/0600 modes (takes the lock).", flags=("--repair",)),
                WAIT.replace(help="With --repair: " + WAIT.help[0].lower() + WAIT.help[1:]),
                Param("set_aside_journal", FLAG, "With --repair: when the journal cannot be "
                      "recovered, move it to .memory-forest/journal.set-aside-<UTC stamp>/ "
                      "(never deleted), if the forest passes audit.",
                      flags=("--set-aside-journal",)),
                Param("restore_journal", FLAG, "With --repair: when the journal cannot be "
                      "recovered (a torn manifest), put back every file it was changing from "
                      "its before-files, move what the write created or left into the "
                      "journal, and move the journal to "
                      ".memory-forest/journal.set-aside-<UTC stamp>/ (never deleted).",
                      flags=("--restore-journal",))),
        writes=True, render="doctor"),
    Operation(
        "index", "memory_forest.operations:index",
        "Bring the derived index up to date (incremental by default).",
        "memory-forest index ~/memory --full",
        help="Documents with errors are left out and listed; exit 0 whenever the index was "
        "built.",
        params=(Param("full", FLAG, "Rebuild from scratch, atomically.", flags=("--full",)),
                WAIT,
                Param("semantic", FLAG, "Turn semantic ranking on for this forest and embed "
                      "the documents that have no vectors yet (needs "
                      "memory-forest[semantic]; resumable).", flags=("--semantic",))),
        progress="indexing", render="index"),
    Operation(
        "maintain", "memory_forest.maintain:maintain",
        "The scheduled job: lock, validate, audit, index, verify; never repairs anything.",
        "memory-forest maintain ~/memory --json --log ~/memory.maintenance.jsonl",
        help="Exits 0 when clean, 3 when it indexed with quarantined documents, 1 when it "
        "failed.",
        params=(Param("verify_all", FLAG, "Re-hash every file, not a sample.",
                      flags=("--verify-all",)),
                Param("log", PATH, "Append a one-line JSON run record to this file (0600).",
                      flags=("--log",)),
                Param("consolidate", FLAG, "After the checks, make a consolidation proposal "
                      "for what nothing has filed yet (never accepts one).",
                      flags=("--consolidate",)),
                Param("sync", FLAG, "Last, sync the forest through git (commit, merge, push: "
                      "as 'memory-forest sync', under this run's lock).", flags=("--sync",)),
                Param("semantic_budget", TEXT, "When semantic ranking is on, embed the "
                      "documents that have no vectors yet for at most this long (60s, 2m).",
                      flags=("--semantic-budget",), metavar="TIME"),
                WAIT),
        render="maintain"),
    Operation(
        "unlock", "memory_forest.operations:unlock",
        "Remove a stale forest lock after re-checking that its owner process is gone.",
        "memory-forest unlock ~/memory --stale",
        params=(Param("stale", FLAG, "Remove a lock whose owner process is gone.",
                      flags=("--stale",)),),
        writes=True, render="unlock"),
    Operation(
        "sync", "memory_forest.sync:sync",
        "Replicate the forest through git: commit, fetch, merge, restore modes, check, index, "
        "push.",
        "memory-forest sync ~/memory --init git@example.org:me/memory.git",
        help="Takes the forest lock. Derived state under .memory-forest/ is never committed "
        "(forest.json travels), nor is anything else the forest does not own: a symlink, a "
        "file outside the layers or with another extension stays local (left_local) unless "
        "forest.json's sync.publish opts it in. Refuses to publish credential-shaped text or "
        "binary content, in the files or in any commit the remote has not seen "
        "(secrets_found), unless --allow-secrets. Without a repository it creates one; "
        "without a remote it commits locally (remote: null, nothing pushed). A record "
        "changed on both sides keeps ours and files theirs beside it as a conflict copy (a "
        "Daily entry: a conflict entry in the same record); a file deleted on one side keeps "
        "the changed version; the config keeps ours. Only a file against a folder (or a "
        "published file the remote turned into a symlink) undoes the merge (sync_conflict). "
        "No conflict marker ever lands in a file. --init URL on a forest that has its own "
        "history joins the two. See docs/sync.md.",
        params=(Param("remote", TEXT, "The git remote to sync with (default: origin).",
                      flags=("--remote",)),
                Param("init", TEXT, "Add the remote at this URL (creating the repository, "
                      "with its .gitignore and .gitattributes, if there is none) and merge its "
                      "history, unrelated or not; the URL lives in .git/config only.",
                      flags=("--init",),
                      metavar="URL"),
                Param("dry_run", FLAG, "Show what would be committed and what would be pulled "
                      "(fetches, changes nothing else).", flags=("--dry-run",)),
                Param("allow_secrets", FLAG, "Commit and push even when the credential rules "
                      "find something (the findings are still reported).",
                      flags=("--allow-secrets",)),
                WAIT),
        writes=True, render="sync"),
    Operation(
        "browse", "memory_forest.browse:browse",
        "Write a private static site (0700/0600, works from file://) to read the forest.",
        "memory-forest browse ~/memory --out ~/memory-site",
        params=(Param("out", PATH, "New or empty directory for the site, outside the forest.",
                      flags=("--out",), required=True),),
        render="browse"),
    Operation(
        "serve", None,  # the MCP server is a surface: the command line runs it
        "Run the MCP server for this forest over stdio (needs memory-forest[mcp]).",
        "memory-forest serve ~/memory"),
    Operation(
        "hooks_install", "memory_forest.hooks:install",
        "Add the gate hook to the client's settings; keeps every other setting, backs up first.",
        "memory-forest hooks install --client claude-code --root ~/memory",
        params=(_CLIENT,
                Param("root", PATH, "Forest root directory (default: the default root); the "
                      "hook always names it by its absolute path.", flags=("--root",)),
                Param("context_bytes", INT, "The most bytes of context the hook adds per turn "
                      "(1536-65536; default: the gate's, 2048).", flags=("--context-bytes",)),
                _SETTINGS, _DRY_RUN),
        command=("hooks", "install"), forest=False, writes=True, render="hooks"),
    Operation(
        "hooks_uninstall", "memory_forest.hooks:uninstall",
        "Remove the gate hooks that 'hooks install' added, and nothing else.",
        "memory-forest hooks uninstall --client claude-code --root ~/memory",
        params=(_CLIENT,
                Param("root", PATH, "Only the hook for this forest (default: every gate hook "
                      "this tool added).", flags=("--root",)),
                _SETTINGS, _DRY_RUN),
        command=("hooks", "uninstall"), forest=False, writes=True, render="hooks"),
    Operation(
        "watch", None,  # a surface itself, like serve: it answers a socket
        "Keep the index current as files change, and answer gate and retrieve warm, until "
        "stopped.",
        "memory-forest watch ~/memory",
        help="Each change a file-system event reports goes through the same incremental "
        "build as index, holding the lock only while it applies; with semantic ranking on, "
        "what changed is embedded in the background at low priority. While it runs, gate "
        "and retrieve are answered over a private socket in the state directory (the same "
        "answers, without starting cold), and index returns at once. Stops cleanly on "
        "SIGTERM or Ctrl-C. Run it from a service manager: schedule print --watch.",
        params=(Param("rescan", FLOAT, "Also rebuild from a walk this often, in seconds, in "
                      "case the system dropped an event.", flags=("--rescan",),
                      default=600.0, metavar="SECONDS"),),
        progress="indexing", render="watch"),
    Operation(
        "schedule_print", "memory_forest.schedule:print_entry",
        "Print a ready-to-install cron line, launchd plist or systemd units; installs nothing.",
        "memory-forest schedule print --scheduler systemd --root ~/memory",
        params=(Param("scheduler", TEXT, "cron, launchd or systemd.", flags=("--scheduler",),
                      required=True, choices="memory_forest.schedule:SCHEDULERS"),
                Param("root", PATH, "Forest root directory (default: the default root); the "
                      "entry always names it by its absolute path.", flags=("--root",)),
                Param("bin_path", PATH, "memory-forest executable (default: this one).",
                      flags=("--bin",)),
                Param("log", PATH, "JSONL run log (default: ROOT.maintenance.jsonl next to the "
                      "forest).", flags=("--log",)),
                Param("consolidate", FLAG, "Each run also makes a consolidation proposal for "
                      "review (maintain --consolidate); it never accepts one.",
                      flags=("--consolidate",)),
                Param("sync", FLAG, "Each run also syncs the forest through git "
                      "(maintain --sync).", flags=("--sync",)),
                Param("semantic_budget", TEXT, "Each run also embeds what has no vectors yet, "
                      "for at most this long (maintain --semantic-budget TIME).",
                      flags=("--semantic-budget",), metavar="TIME"),
                Param("watch", FLAG, "Print the watcher's entry instead (memory-forest watch, "
                      "kept alive and restarted on failure): a systemd user unit or a launchd "
                      "agent.", flags=("--watch",))),
        command=("schedule", "print"), forest=False, render="schedule_print"),
    Operation(
        "completion", None,  # written from the command line's own parser, which runs it
        "Print a shell completion script (bash, zsh or fish) for every command and option.",
        "source <(memory-forest completion bash)",
        help="Written from the command catalog, so it completes every command, subcommand, "
        "option and the values an option allows. bash: add 'source <(memory-forest "
        "completion bash)' to ~/.bashrc; zsh: the same with zsh in ~/.zshrc; fish: "
        "memory-forest completion fish > ~/.config/fish/completions/memory-forest.fish.",
        params=(Param("shell", TEXT, "bash, zsh or fish.", required=True,
                      choices=SHELLS),),
        forest=False, render="completion"),
)

# What the command groups say in the help: a summary and an example to copy.
GROUPS = {
    "hooks": ("Install or remove the per-turn gate as a UserPromptSubmit hook (Claude Code, "
              "Codex).",
              "memory-forest hooks install --client claude-code --root ~/memory --dry-run"),
    "schedule": ("Print scheduler entries for unattended maintenance (installs nothing).",
                 "memory-forest schedule print --scheduler cron --root ~/memory"),
    "proposals": ("Review consolidation proposals: list, show, accept or reject.",
                  "memory-forest proposals list ~/memory"),
}
