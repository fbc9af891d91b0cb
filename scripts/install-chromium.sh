#!/usr/bin/env bash
# Installs Debian's chromium for the attention explorer's browser tests, when it is missing.
# Idempotent and silent when chromium is already there; when it cannot install (no apt-get, not
# root and no sudo, or the install fails), says in one line that those tests will be skipped.
set -u
command -v chromium >/dev/null 2>&1 && exit 0

skip() { echo "chromium: not installed ($1); the explorer's browser tests will be skipped (they fail when CI is set)" >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || skip "no apt-get"
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    skip "needs root or sudo"
fi
echo "installing chromium (apt-get) for the explorer's browser tests" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
       "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    skip "apt-get failed"
fi
command -v chromium >/dev/null 2>&1 || skip "apt-get installed no chromium command"
