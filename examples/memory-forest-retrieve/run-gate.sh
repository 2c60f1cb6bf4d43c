#!/usr/bin/env bash
# Build the example forest, index it, and pipe turns through the per-turn gate.
#
# Usage: examples/memory-forest-retrieve/run-gate.sh [MEMORY_FOREST_COMMAND]
#
# The command defaults to 'memory-forest' on PATH; pass another (for example
# '.venv/bin/memory-forest') to use a particular install. Everything happens
# in a private temporary directory that is removed at the end.
set -euo pipefail

mf=${1:-memory-forest}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
forest="$work/forest"

"$mf" init "$forest" --example > /dev/null
"$mf" index "$forest" > /dev/null

echo "== a question memory can answer (the plain receipt)"
echo "How cold should the kimchi fridge be, and for how long?" | "$mf" gate "$forest"

echo
echo "== a question memory cannot answer"
echo "What did we decide about the quarterly budget?" | "$mf" gate "$forest"

echo
echo "== a blank turn"
printf '   \n' | "$mf" gate "$forest"

echo
echo "== the same lookup as a Claude Code UserPromptSubmit hook answer"
printf '{"hook_event_name":"UserPromptSubmit","prompt":"%s"}' \
    "Any notes on the drip line pressure?" | "$mf" gate "$forest" --format claude-code

echo
echo "== a failed lookup lets the turn through and names the fix (the index is gone)"
rm "$forest/.memory-forest/index.sqlite3"
printf '{"hook_event_name":"UserPromptSubmit","prompt":"%s"}' \
    "Any notes on the drip line pressure?" | "$mf" gate "$forest" --format claude-code
