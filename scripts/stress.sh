#!/usr/bin/env bash
# scripts/stress.sh runs test packages many times over beside a CPU hog on
# every core, the way a loaded CI machine runs them: a test that waits on
# time instead of on the event it asserts fails here long before it fails
# in CI. Run it before submitting a change that touches concurrency.
#
#   bash scripts/stress.sh                        # ./internal/... and ./cdpguard/, -race -count=20
#   STRESS_COUNT=50 bash scripts/stress.sh ./internal/relay/
#   bash scripts/stress.sh ./internal/relay/ -run TestOwedReplies
#
# Arguments are packages, then go test flags. STRESS_HOGS sets how many
# busy loops run (default: one per core). As root it runs inside a private
# network namespace with only loopback up, as scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${STRESS_COUNT:-20}
hogs=${STRESS_HOGS:-$(nproc)}
pkgs=()
while [ $# -gt 0 ] && [[ "$1" != -* ]]; do
  pkgs+=("$1")
  shift
done
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./internal/... ./cdpguard/)
go test -race -count=1 -run '^$' "${pkgs[@]}" >/dev/null # build first, hogs not yet running

hog_pids=()
trap 'kill "${hog_pids[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$hogs"); do
  # Each loop ends by itself after two hours if this script is killed outright.
  timeout 7200 bash -c 'while :; do :; done' &
  hog_pids+=($!)
done
echo "scripts/stress.sh: $hogs CPU hogs running; go test -race -count=$count ${pkgs[*]} $*" >&2
run=(go test -race -count="$count" -timeout 60m "${pkgs[@]}" "$@")
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
  unshare --net -- bash -c 'ip link set lo up && exec "$@"' _ "${run[@]}"
else
  "${run[@]}"
fi
