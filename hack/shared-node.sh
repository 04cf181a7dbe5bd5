#!/usr/bin/env bash
# Boots the real node once (cluster/local --ready-file: Crossplane by Helm, our
# packages by `crossplane xpkg install`, the emulator as a pod), runs the
# command given with NODE_ATTACH naming it, and tears the node down whatever
# the command's outcome, Ctrl-C included. `make test` runs the suites that
# need Crossplane (test/e2e, test/platform, test/tenancy, test/argocd, test/gitops) through it, one
# package at a time: they share the node and each test cleans up after itself.
#
# Crossplane runs with the chart's defaults, as the README installs it. The
# provider's flags, set through its DeploymentRuntimeConfig as a user would:
# a poll every 5 s (a test's drift is seen within its waits) and a GCP
# snapshot that lives for most of one (test/tenancy's reads across tenants).
# The servers the suites run for the provider to reach on a tenant's behalf
# (remote clusters' API servers, GCP proxies) are exposed on the node's bridge
# gateway, a private address: only that one address is allowed, so the
# suites' hostile cases (loopback, link-local, the cluster's Services and its
# API server) are refused as in a real cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(pwd)/${NODE_OUT:-_output/node}
mkdir -p "$out"
ready=$out/attach.json
log=$out/shared-node.log
local_bin=${LOCAL:-$out/local}
if [ -z "${LOCAL:-}" ]; then go build -o "$local_bin" ./cluster/local; fi
rm -f "$ready"

args=(--ready-file "$ready" --demo=false --bin-dir "${BIN_DIR:-_output/bin}" --xpkg-dir "${XPKG_DIR:-_output/xpkg}"
	--provider-arg=--poll=5s --provider-arg=--poll-jitter=500ms --provider-arg=--snapshot-ttl=4s
	--provider-arg=--timeout=20s --provider-arg=--max-reconcile-rate=20
	--provider-arg=--allow-dial-cidr=10.244.0.1/32)
"$local_bin" "${args[@]}" >"$log" 2>&1 &
pid=$!
# The node's teardown is waited for, whatever stops this script: Ctrl-C, kill,
# a closed terminal, or a stdout that went away (with SIGPIPE ignored a write
# to it fails, and set -e ends the script); a second signal does not cut the
# wait short. The command goes first: its tests use the node.
stop() {
	trap '' INT TERM HUP
	stop_command
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	tail -3 "$log" | sed 's/^/shared node: /' || true
}

# stop_command stops the command, if it still runs, as Ctrl-C would: go test
# catches SIGINT and waits for its test binary, which SIGINT ends. One that
# is not gone within 30 s is killed.
stop_command() {
	[ -n "${cmd:-}" ] || return 0
	# shellcheck disable=SC2046 # one PID a word
	kill -INT "$cmd" $(pgrep -P "$cmd") 2>/dev/null || true
	(
		sleep 30
		# shellcheck disable=SC2046
		kill -KILL "$cmd" $(pgrep -P "$cmd") 2>/dev/null
	) &
	local killer=$!
	wait "$cmd" 2>/dev/null || true
	# KILL: it ignores TERM, as stop() set. Its sleep may linger, harmless.
	kill -KILL "$killer" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM HUP
trap '' PIPE

echo ">> booting the shared node (log: $log)"
start=$SECONDS
locked=0
until [ -f "$ready" ]; do
	# Waiting for another run's node to finish (the machine-wide node lock)
	# is not booting: the 10 minutes start once the lock is ours.
	if tail -1 "$log" | grep -q 'node.lock.*waiting for it to finish'; then
		locked=$((SECONDS - start + locked))
		start=$SECONDS
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "the shared node did not come up; the end of its log:" >&2
		tail -40 "$log" >&2
		exit 1
	fi
	if (( SECONDS - start > 600 )); then
		echo "the shared node was not up after 10 minutes; the end of its log:" >&2
		tail -40 "$log" >&2
		exit 1
	fi
	sleep 1
done
if (( locked > 0 )); then echo ">> waited $locked s for another run's node"; fi
echo ">> shared node up in $((SECONDS - start)) s"
# In the background, so that a signal to this script is acted on at once
# (bash runs a trap only once its foreground command has ended, up to 45
# minutes on), with SIGINT as a foreground command has it (a background one
# starts with it ignored).
(
	trap - INT QUIT
	NODE_ATTACH=$ready exec "$@"
) &
cmd=$!
status=0
wait "$cmd" || status=$?
cmd=
exit "$status"
