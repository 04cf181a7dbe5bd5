#!/usr/bin/env bash
# Runs a command that builds tools into the tool cache (cluster/toolchain/build.sh,
# several at once) and, while it runs, says once a minute which tools are being
# built and for how long so far: on a cold 2-core machine `make run` spends most
# of its first 45 minutes here, and would otherwise print nothing for long
# stretches. A build of this machine's other runs counts too: ours waits for it.
set -euo pipefail
cache=${PROVIDER_CLOUDARMOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-cloudarmor}
# Under 60: a loaded machine stretches each second of the wait below.
every=${PROGRESS_EVERY:-55}

# now_building prints "name 12m30s, name 3m05s" for each live marker.
now_building() {
  local m pid since list=()
  for m in "$cache"/building/*; do
    [ -f "$m" ] || continue
    read -r pid since <"$m" 2>/dev/null || continue
    kill -0 "$pid" 2>/dev/null || continue
    local s=$(($(date +%s) - since))
    list+=("$(basename "$m" | tr + ' ') $((s / 60))m$(printf %02d $((s % 60)))s")
  done
  local IFS=,
  echo "${list[*]}" | sed 's/,/, /g'
}

# The command runs as a job of its own (its own process group), and a stop
# signal to this script goes to all of it: make passes SIGTERM only to its own
# child, and a background command of a script starts with SIGINT ignored, so
# either way the builds ran on after make had given up.
set -m
"$@" </dev/null &
pid=$!
set +m
stop() {
	trap '' INT TERM HUP
	kill -"$1" -- -"$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	exit "$2"
}
trap 'stop INT 130' INT
trap 'stop TERM 143' TERM
trap 'stop HUP 129' HUP
# A gone stderr loses the progress lines, not the build.
trap '' PIPE
start=$SECONDS
while true; do
  next=$((SECONDS + every))
  while ((SECONDS < next)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid"
      exit $?
    fi
    sleep 1
  done
  now=$(now_building)
  if [ -n "$now" ]; then
    echo ">> $((SECONDS - start)) s into building tools; still building: $now" >&2 || true
  fi
done
