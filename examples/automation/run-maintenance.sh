#!/bin/sh
# Run Memory Forest maintenance once; meant for a scheduler (cron, launchd, systemd).
#
# Usage: run-maintenance.sh ROOT [MAINTAIN_OPTION...]
#   ROOT   absolute path of the forest root (a real directory, not a symlink)
#   extra options go to `memory-forest maintain`, e.g. --log FILE or --verify-all
#
# Runs $MEMORY_FOREST_BIN when it is set (an absolute path), else memory-forest
# from the caller's PATH, as: BIN maintain ROOT --json [MAINTAIN_OPTION...]
# with a minimal PATH and umask 077, and exits with its status: 0 clean, 3 indexed
# with quarantined documents (see the JSON's problems), 1 failed.
# Exit codes of its own: 2 for a bad ROOT or usage, 127 when no binary is found.
set -eu

me=run-maintenance.sh

fail() {
	printf '%s: %s\n' "$me" "$2" >&2
	exit "$1"
}

[ "$#" -ge 1 ] || fail 2 "usage: $me ROOT [MAINTAIN_OPTION...]"
root=$1
shift

case $root in
/*) ;;
*) fail 2 "ROOT must be an absolute path" ;;
esac
# Strip trailing slashes: "ROOT/" would let the tests below look through a symlink.
while :; do
	case $root in
	?*/) root=${root%/} ;;
	*) break ;;
	esac
done
case $root in
/ | */. | */.. | */./* | */../*) fail 2 "ROOT must be a plain absolute path to a forest directory" ;;
esac
[ ! -L "$root" ] || fail 2 "ROOT is a symlink; pass the real directory"
[ -d "$root" ] || fail 2 "ROOT is not an existing directory"

# Find the binary with the caller's PATH, then run it with a minimal one.
bin=${MEMORY_FOREST_BIN:-}
if [ -n "$bin" ]; then
	case $bin in
	/*) ;;
	*) fail 2 "MEMORY_FOREST_BIN must be an absolute path" ;;
	esac
else
	bin=$(command -v memory-forest 2>/dev/null) || bin=
	[ -n "$bin" ] || fail 127 "memory-forest not found on PATH; set MEMORY_FOREST_BIN"
fi
[ -f "$bin" ] && [ -x "$bin" ] || fail 127 "not an executable file: $bin"

PATH=/usr/bin:/bin
export PATH
umask 077

exec "$bin" maintain "$root" --json "$@"
