#!/usr/bin/env bash
# make ha-demo: high availability on etcd, end to end, with the real
# processes. It starts a one-member etcd and two mooncake-meta-servers (a
# and b) in a temporary directory on free loopback ports, writes
# soft-pinned objects through the leader a and prints their replicas and
# deadlines, kills a (SIGKILL), waits until b leads, and shows b serving
# the same objects with the same deadlines (not restarted by the
# failover). Every process it started is killed and the directory removed
# on exit, whatever the exit.
#
# usage: scripts/ha-demo.sh [path/to/mooncake-meta-server]
# (default target/mooncake-meta-server: make server builds it)
set -euo pipefail

BIN=$(realpath -m "${1:-target/mooncake-meta-server}")
ETCD=${MOONCAKE_META_ETCD:-etcd}
TTL=2s
PREFIX=/mooncake/demo
BOUND=60 # seconds any wait may take

[ -x "$BIN" ] || { echo "ha-demo: no server binary at $BIN (run make server)" >&2; exit 1; }
command -v "$ETCD" >/dev/null || { echo "ha-demo: '$ETCD' not found; install it with: apt-get install -y etcd-server" >&2; exit 1; }
for tool in curl python3; do
	command -v "$tool" >/dev/null || { echo "ha-demo: '$tool' is required; install it with: apt-get install -y $tool" >&2; exit 1; }
done

DIR=$(mktemp -d "${TMPDIR:-/tmp}/mooncake-ha-demo.XXXXXX")
# A server that keeps snapshots takes a store every node shares.
SNAPSHOTS=()
if "$BIN" -h 2>&1 | grep -q -- '-snapshot-dir'; then
	SNAPSHOTS=(--snapshot-dir "$DIR/snapshots")
fi
PIDS=()
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	# The kills and the waits in one redirected group: bash reports a
	# child killed by a signal ("... Killed ...") on stderr when it reaps
	# it, which may be before the wait, after any command that follows the
	# kill; inside the group that report goes to /dev/null.
	{
		for pid in "${PIDS[@]}"; do
			kill -KILL "$pid" || true
		done
		for pid in "${PIDS[@]}"; do
			wait "$pid" || true
		done
	} 2>/dev/null
	if [ "$rc" -ne 0 ]; then
		for log in "$DIR"/*.log; do
			[ -f "$log" ] && { echo "--- last lines of $(basename "$log")"; tail -n 5 "$log"; } >&2
		done
	fi
	rm -rf "$DIR"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Free loopback ports (the kernel's choice; another process may take one
# before we bind it, in which case a start below fails and says so).
read -r P_CLIENT P_PEER P_A P_B < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])
for s in ss: s.close()')
ETCD_URL=http://127.0.0.1:$P_CLIENT

# jq-like: evaluate a Python expression over the JSON document d on stdin.
json() { python3 -c 'import sys, json; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# A deadline in milliseconds as UTC time.
utc() { python3 -c 'import sys, datetime; print(datetime.datetime.fromtimestamp(int(sys.argv[1]) / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC")' "$1"; }

# wait_for WHAT CMD...: run CMD until it succeeds, for at most BOUND seconds.
wait_for() {
	local what=$1 deadline=$((SECONDS + BOUND))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] || { echo "ha-demo: gave up after ${BOUND}s waiting for $what" >&2; exit 1; }
		sleep 0.05
	done
}

# call URL PATH JSON: POST to the API; fails (with the answer) unless 200.
call() {
	local out code
	out=$(curl -sS -w '\n%{http_code}' -H 'Content-Type: application/json' -d "$3" "$1$2")
	code=${out##*$'\n'}
	out=${out%$'\n'*}
	[ "$code" = 200 ] || { echo "ha-demo: $2 on $1: HTTP $code $out" >&2; return 1; }
	printf '%s\n' "$out"
}
role() { curl -sS --max-time 2 "$1/role" | json "d['role']"; }
is_role() { [ "$(role "$1")" = "$2" ]; }

echo "== etcd on $ETCD_URL, data in $DIR"
"$ETCD" --name demo --data-dir "$DIR/etcd" \
	--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
	--listen-peer-urls "http://127.0.0.1:$P_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$P_PEER" \
	--initial-cluster "demo=http://127.0.0.1:$P_PEER" --log-outputs stderr >"$DIR/etcd.log" 2>&1 &
PIDS+=($!)
healthy() { curl -sS --max-time 2 "$ETCD_URL/health" | grep -q '"health":"true"'; }
wait_for "etcd to be healthy" healthy

start_server() { # name port (run in its own directory: relative paths land there)
	mkdir -p "$DIR/$1"
	(cd "$DIR/$1" && exec "$BIN" --listen "127.0.0.1:$2" --etcd-endpoints "$ETCD_URL" --cluster-prefix "$PREFIX" \
		--node-name "$1" --session-ttl "$TTL" ${SNAPSHOTS[@]+"${SNAPSHOTS[@]}"}) >"$DIR/$1.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$1=$!"
}
A=http://127.0.0.1:$P_A
B=http://127.0.0.1:$P_B
echo "== server a on $A, session TTL $TTL"
start_server a "$P_A"
wait_for "a to lead" is_role "$A" leader
echo "== server b on $B"
start_server b "$P_B"
wait_for "b to follow" is_role "$B" follower
echo "   a is $(role "$A"), b is $(role "$B")"

echo "== writing soft-pinned objects through a (each answer only once durable in etcd)"
call "$A" /v1/segment/mount '{"client_id":1,"name":"seg0","base":1099511627776,"size":1073741824}' >/dev/null
KEYS=(prompt/1 prompt/2 prompt/3)
TTLS=(600000 3600000 7200000)
for i in 0 1 2; do
	key=${KEYS[$i]}
	group=""
	[ "$i" = 2 ] && group='"group":"conversation/7",'
	tok=$(call "$A" /v1/put/start "{\"client_id\":7,\"key\":\"$key\",\"size\":4096,\"config\":{$group\"soft_pin_action\":\"ENABLE\",\"ttl_ms\":${TTLS[$i]}}}" | json "d['token']")
	call "$A" /v1/put/end "{\"client_id\":7,\"key\":\"$key\",\"token\":$tok}" >/dev/null
done
GROUP_DEADLINE=$(call "$A" /v1/groups/retain '{"groups":["conversation/7"],"ttl_ms":5400000}' | json "d['results'][0]['deadline_ms']")
# A write left in flight: Started on a, Ended on b after the failover.
INFLIGHT=$(call "$A" /v1/put/start '{"client_id":7,"key":"prompt/4","size":4096,"config":{"soft_pin_action":"ENABLE","ttl_ms":600000}}' | json "d['token']")

declare -A DEADLINE REPLICAS
show() { # url label
	for key in "${KEYS[@]}"; do
		local d r
		d=$(call "$1" /v1/softpin/deadline "{\"key\":\"$key\"}" | json "d['deadline_ms']")
		r=$(call "$1" /v1/get "{\"key\":\"$key\"}" | json "' '.join('%s@%s+%#x' % (x['id'], x['segment'], x['address']) for x in d['replicas'])")
		printf '   %-9s replicas %-26s soft-pin deadline %s ms (%s)\n' "$key" "$r" "$d" "$(utc "$d")"
		if [ "$2" = before ]; then
			DEADLINE[$key]=$d
			REPLICAS[$key]=$r
		elif [ "$d" != "${DEADLINE[$key]}" ] || [ "$r" != "${REPLICAS[$key]}" ]; then
			echo "ha-demo: $key changed across the failover" >&2
			exit 1
		fi
	done
}
show "$A" before
echo "   group conversation/7 retained until $GROUP_DEADLINE ms ($(utc "$GROUP_DEADLINE")); prompt/4 Started, not Ended"

durable=$(curl -sS "$A/role" | json "d['durable_seq']")
caught_up() { [ "$(curl -sS --max-time 2 "$B/role" | json "d['applied_seq']")" -ge "$durable" ]; }
wait_for "b to apply up to sequence $durable" caught_up
echo "== b applied the journal up to sequence $durable; killing a (SIGKILL)"
t0=$(date +%s%N)
# The kill inside the redirected group, with the wait: bash reports the
# killed child on stderr ("line N: PID Killed ...") as soon as it reaps
# it, which can be before a wait that follows the kill, and so outside a
# redirection of the wait alone.
{ kill -KILL "$PID_a"; wait "$PID_a" || true; } 2>/dev/null
wait_for "b to lead" is_role "$B" leader
t1=$(date +%s%N)
echo "   b leads $(((t1 - t0) / 1000000)) ms after the kill"

echo "== b serves the same objects with the same deadlines"
show "$B" after
call "$B" /v1/put/end "{\"client_id\":7,\"key\":\"prompt/4\",\"token\":$INFLIGHT}" >/dev/null
echo "   prompt/4, Started on a, Ended on b: exists $(call "$B" /v1/exist '{"key":"prompt/4"}' | json "d['exists']")"
g=$(call "$B" /v1/groups/retain '{"groups":["conversation/7"],"ttl_ms":1}' | json "d['results'][0]['deadline_ms']")
[ "$g" = "$GROUP_DEADLINE" ] || { echo "ha-demo: the group's retention changed: $g, was $GROUP_DEADLINE" >&2; exit 1; }
echo "   group conversation/7 still retained until $g ms (a retain for 1 ms keeps the later deadline)"
echo "== done: every process stopped, $DIR removed"
