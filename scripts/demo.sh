#!/usr/bin/env bash
# `make demo`: the main job on the synthetic example forest, in a fresh temporary directory.
set -euo pipefail
MF=${1:-memory-forest}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
forest="$work/forest"
step() { printf '\n\033[1m$ memory-forest %s\033[0m\n' "$*"; "$MF" "$@"; }

step init "$forest" --example
step doctor "$forest"
step validate "$forest"
step audit "$forest"
step index "$forest"
step stats "$forest"
step route "$forest" "fermentation"
step retrieve "$forest" "kimchi ripening temperature"
step retrieve "$forest" "김치"
step retrieve "$forest" "斑点"
step retrieve "$forest" "الزعتر"
step retrieve "$forest" "réglage goutte-à-goutte"
step retrieve "$forest" "rain tank reserve" --json
step remember "$forest" --tree kitchen --branch fermentation --leaf miso \
  --title "Miso batch 1" --content "Started 2 kg of barley miso; check the salt crust in March."
step retrieve "$forest" "barley miso salt crust"
step remember "$forest" "Kimchi batch 8: less salt in the brine, two days at room temperature."
step remember "$forest" --dry-run "The boiler service is booked for 9 December."

say() { printf '\n\033[1m# %s\033[0m\n' "$*"; }
say "a raw capture is found at once, as unfiled evidence; consolidation proposes where to file it"
printf '\n\033[1m$ echo {event} | memory-forest capture - \033[0m\n'
echo '{"observed_at": "2026-12-01T08:30:00Z", "source": "demo", "kind": "note", "payload": {"text": "Drip timer battery replaced; the irrigation schedule restarted at 06:00."}}' \
  | "$MF" capture "$forest" -
step retrieve "$forest" "drip timer battery"
step consolidate "$forest"
proposal=$("$MF" --json proposals list "$forest" --status pending \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["proposals"][0]["proposal_id"])')
step proposals accept "$forest" "$proposal"
step audit "$forest"
printf '\n\033[1m$ echo "how cold should the kimchi fridge be?" | memory-forest gate\033[0m\n'
echo "how cold should the kimchi fridge be?" | "$MF" gate "$forest"
step maintain "$forest"
step schedule print --scheduler cron --root "$forest"

# Ordinary use never blocks: a hand edit, an editor's swap file, a "see also" link.
say "a hand edit after indexing is flagged, not fatal"
echo "Day 12: moved to the back of the fridge." >> "$forest/04 stm/kitchen/fermentation/kimchi-batch-7.md"
step retrieve "$forest" "kimchi fridge"
say "vim's swap file is ignored; a lateral link quarantines one file, the rest is indexed"
touch "$forest/04 stm/kitchen/fermentation/.kimchi-batch-7.md.swp"
echo "See also [[03 mtm/greenhouse/irrigation]]." >> "$forest/03 mtm/kitchen/fermentation.md"
step index "$forest"
step retrieve "$forest" "kimchi fridge"
printf '\nThe forest lived in %s and has been removed.\n' "$work"
