#!/usr/bin/env bash
# Replication throughput on a cluster of separate processes on this machine: plinth mgmt, meta and
# three storage nodes (one target each, all on the disk under WORK), then `plinth bench` with
# 1, 2 and 3 replicas. bench prints every figure beside this machine's disk and loopback TCP,
# measured in the same run. Also measures how long mgmt takes to mark a killed node offline and
# how soon writes resume.
#
#   bench/cluster-compare.sh [SIZE] [WORK]        e.g. bench/cluster-compare.sh 1G /var/tmp/plinth-bench
#
# On 2 cores the five JVMs and the bench client share the CPUs: the figures are lower bounds.
set -euo pipefail
SIZE=${1:-1G}
WORK=${2:-/var/tmp/plinth-cluster-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PLINTH="$ROOT/bin/plinth"
TIMEOUT_MS=3000
SET="--set mgmt.node-timeout-millis=$TIMEOUT_MS"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

rm -rf "$WORK" && mkdir -p "$WORK"
"$PLINTH" --version >/dev/null   # builds on first use, before the clock matters
endpoint() { # FILE -> the rpc address in it, once it is there
  for _ in $(seq 1 600); do
    if [ -f "$1" ] && grep -q '"rpc"' "$1"; then sed -n 's/.*"rpc": "\([^"]*\)".*/\1/p' "$1"; return; fi
    sleep 0.1
  done
  echo "no endpoint in $1" >&2; exit 1
}
export PLINTH_JAVA_OPTS="-Xmx512m -XX:+UseSerialGC"
"$PLINTH" mgmt --data "$WORK/mgmt" --listen 127.0.0.1:0 --http 127.0.0.1:0 $SET > "$WORK/mgmt.log" 2>&1 & PIDS+=($!)
MGMT=$(endpoint "$WORK/mgmt/endpoints.json")
SECRET="$WORK/mgmt/cluster.secret"
"$PLINTH" meta --data "$WORK/meta" --mgmt "$MGMT" --secret-file "$SECRET" --listen 127.0.0.1:0 --http 127.0.0.1:0 $SET \
  > "$WORK/meta.log" 2>&1 & PIDS+=($!)
endpoint "$WORK/meta/endpoints.json" >/dev/null
for i in 1 2 3; do
  "$PLINTH" storage --target "$WORK/node$i/target" --mgmt "$MGMT" --secret-file "$SECRET" --listen 127.0.0.1:0 \
    --http 127.0.0.1:0 --endpoints "$WORK/node$i.json" $SET > "$WORK/node$i.log" 2>&1 & PIDS+=($!)
  endpoint "$WORK/node$i.json" >/dev/null
done
export PLINTH_SERVER=$MGMT PLINTH_SECRET_FILE=$SECRET
unset PLINTH_JAVA_OPTS
sleep 2   # meta sees the chains mgmt formed

for r in 1 2 3; do
  echo "== replicas $r"
  "$PLINTH" bench --size "$SIZE" --files 200 --replicas "$r" --stripe-count 1 --local-dir "$WORK" 2>&1
done

echo "== a storage node killed while a writer writes (replicas 2)"
"$PLINTH" fs mkdir -p /failover && "$PLINTH" setstripe -r 2 -c 1 /failover
head -c 64M /dev/urandom > "$WORK/block"
VICTIM=${PIDS[2]}   # storage node 1
( for n in $(seq 1 200); do "$PLINTH" fs put "$WORK/block" /failover/f$n >/dev/null 2>&1 && date +%s.%N >> "$WORK/acks"; done ) &
WRITER=$!
sleep 3
KILLED=$(date +%s.%N); kill -9 "$VICTIM"
for _ in $(seq 1 300); do
  if { "$PLINTH" status --json 2>/dev/null || true; } | grep -q '"online":false'; then break; fi; sleep 0.1
done
DETECTED=$(date +%s.%N)
for _ in $(seq 1 600); do
  LAST=$(tail -1 "$WORK/acks"); if awk -v a="$LAST" -v k="$KILLED" 'BEGIN{exit !(a>k)}'; then break; fi; sleep 0.1
done
# the loop, then the put it is waiting for (a killed subshell leaves its child running, retrying against a cluster that is gone)
PUT=$(pgrep -P "$WRITER" || true); kill "$WRITER" 2>/dev/null || true; [ -z "$PUT" ] || kill $PUT 2>/dev/null || true
awk -v k="$KILLED" -v d="$DETECTED" -v a="$LAST" -v t="$TIMEOUT_MS" 'BEGIN{printf "node timeout %d ms: offline in status after %.1f s, a write acknowledged again %.1f s after the kill (each put is a new JVM: +~1 s)\n", t, d-k, a-k}'
