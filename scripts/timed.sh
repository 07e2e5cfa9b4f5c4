#!/usr/bin/env bash
# usage: scripts/timed.sh NAME COMMAND...: runs COMMAND and reports how long
# NAME took, passing its exit status through.
set -uo pipefail
name=$1
shift
start=$(date +%s)
echo "==> $name"
"$@"
rc=$?
echo "==> $name: $(($(date +%s) - start)) s$([ "$rc" -eq 0 ] || echo ", FAILED (exit $rc)")"
exit "$rc"
