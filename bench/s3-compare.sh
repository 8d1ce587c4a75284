#!/bin/bash
# The S3 gateway beside s3proxy (filesystem-nio2 provider) on the same disk, in one run: PUT and GET
# of large objects (MiB/s) and small-object request rates, with the local disk (buffered write +
# fsync, cold read) and loopback TCP (iperf3) measured in the same run, printed as ratios, and the CPU time
# this whole machine spent per GiB and per small request with each server (from /proc/stat).
# Both servers are separate JVMs with the same heap. A third column, "ceiling", is the least work an
# S3-shaped server can do here (bench/s3-ceiling/ceiling.c: C, no authentication, no checksums, no
# fsync, GET by sendfile): what the machine and the load generator allow, so a target above it is
# out of reach with this load on this machine whatever the gateway does (design note 64). The load generator is curl (libcurl's
# parallel transfers, SigV4 with an unsigned payload): one C process, so the client costs the
# servers as little CPU as possible on a small machine; small GETs and PUTs are measured once more with
# bench/s3-ceiling/s3load.c (presigned URLs on keep-alive connections), which costs far less per
# request than curl, where curl's one thread is the limit.
#   usage: bench/s3-compare.sh [BASE_DIR=/tmp/plinth-s3-bench] [SIZE_MIB=64] [OBJECTS=16] [SMALL_OBJECTS=2000]
#   environment: THREADS (how many large transfers run in parallel, a measurement for each: "1 4"; the servers
#   rank differently at each), SMALL_THREADS (16), SMALL_BYTES (4096), HEAP (-Xmx2g),
#   WARM_SMALL (small PUTs and GETs each server gets before the measured ones, 10000: with 2,000 the
#   gateway's JIT was still compiling, and its small-PUT rate rose from ~640 to ~1,060/s over 20,000 PUTs),
#   WARM_LARGE_ROUNDS (GETs of the four 64 MiB warm-up objects, from the page cache, before the measured ones: 16,
#   4 GiB, after WARM_PUT_ROUNDS rounds of PUTs of them; with one round a fresh gateway's cold GETs ran 685 MiB/s at 2.3 s of CPU per GiB, a warmed one 1,355 at 0.83,
#   the JIT reaching steady state as design note 53 found for the native client),
#   WARM_PUT_ROUNDS (rounds of four 64 MiB PUTs of those objects before them: 32; a fresh Plinth server spent
#   5.8, 4.2, 3.7, then 3.0-3.5 core-s per GiB in its first rounds of 16 such PUTs, still compiling a hundred
#   methods a round after 20 rounds, where with 8 rounds the measured PUTs caught it at ~3.7),
#   SMALL_ROUNDS (rounds of SMALL_OBJECTS small PUTs and GETs, the servers taking turns; the median counts: 3),
#   LEAN_REPEAT (how many times each lean-client round GETs the SMALL_OBJECTS, after one such round unmeasured: 10; a
#   single pass took 0.15-0.4 s and caught the JVMs still compiling: a fresh gateway's CPU per small GET fell from
#   0.17 to 0.09 ms over its first ~70,000 GETs, design note 66; a lean PUT round PUTs as many new objects)
# Needs root (to drop the page cache before reads), curl >= 7.75, iperf3, gcc, python3-boto3 (to presign), and Maven Central once
# (peers/s3proxy/pom.xml gathers s3proxy's jars).
set -eu
. "$(dirname "$0")/need.sh"; need curl iperf3 gcc python3
# boto3 presigns the lean client's URLs near the end of a run: missing, say so now, as need does
python3 -c 'import boto3' 2>/dev/null || { echo "$(basename "$0"): missing boto3; install with: apt-get install -y python3-boto3" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-s3-bench}"); SIZE_MIB=${2:-64}; OBJECTS=${3:-16}; SMALL=${4:-2000}
THREADS=${THREADS:-1 4}; SMALL_THREADS=${SMALL_THREADS:-16}; SMALL_BYTES=${SMALL_BYTES:-4096}; HEAP=${HEAP:--Xmx2g}
WARM_SMALL=${WARM_SMALL:-10000}; WARM_LARGE_ROUNDS=${WARM_LARGE_ROUNDS:-16}; WARM_PUT_ROUNDS=${WARM_PUT_ROUNDS:-32}; SMALL_ROUNDS=${SMALL_ROUNDS:-3}; LEAN_REPEAT=${LEAN_REPEAT:-10}
cleanup() {
  for pid in "${PLINTH_PID:-}" "${S3PROXY_PID:-}" "${CEILING_PID:-}" "${IPERF_PID:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  sleep 2; return 0
}
trap cleanup EXIT
rm -rf "$BASE"; mkdir -p "$BASE/plinth" "$BASE/s3proxy/data" "$BASE/ceiling" "$BASE/local" "$BASE/work"
# this machine's CPUs so far: busy ticks (user nice system irq softirq), idle ticks (idle iowait), all ticks, CPUs
cpu_now() { awk '/^cpu /{b=$2+$3+$4+$7+$8; i=$5+$6; t=b+i+$9} /^cpu[0-9]/{n++} END{print b, i, t, n}' /proc/stat; }

# ---- servers
"$HERE/bin/plinth" --version >/dev/null   # builds on first use
JAVA=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
[ -d "$HERE/peers/s3proxy/target/lib" ] || (cd "$HERE" && ./mvnw -q -pl peers/s3proxy package)
PLINTH_JAVA_OPTS="$HEAP" "$HERE/bin/plinth" server --data "$BASE/plinth" --listen 127.0.0.1:7290 --http 127.0.0.1:7291 \
  --s3 127.0.0.1:9290 > "$BASE/plinth.log" 2>&1 & PLINTH_PID=$!
cat > "$BASE/s3proxy/s3proxy.conf" <<CONF
s3proxy.endpoint=http://127.0.0.1:9291
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=bench
s3proxy.credential=bench-secret-key
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$BASE/s3proxy/data
CONF
"$JAVA/bin/java" $HEAP -Dlogback.configurationFile="$HERE/peers/s3proxy/logback.xml" -cp "$HERE/peers/s3proxy/target/lib/*" \
  org.gaul.s3proxy.Main --properties "$BASE/s3proxy/s3proxy.conf" > "$BASE/s3proxy.log" 2>&1 & S3PROXY_PID=$!
gcc -O2 -pthread -o "$BASE/work/ceiling" "$HERE/bench/s3-ceiling/ceiling.c"
"$BASE/work/ceiling" 9292 "$BASE/ceiling" > "$BASE/ceiling.log" 2>&1 & CEILING_PID=$!
for _ in $(seq 120); do grep -q '"s3"' "$BASE/plinth/endpoints.json" 2>/dev/null && break; sleep 1; done
grep -q '"s3"' "$BASE/plinth/endpoints.json" || { echo "plinth did not start; see $BASE/plinth.log" >&2; exit 1; }
for _ in $(seq 60); do (exec 3<>/dev/tcp/127.0.0.1/9291) 2>/dev/null && break; sleep 1; done
PLINTH_KEY=$(awk -F' = ' '/aws_access_key_id/ {print $2}' "$BASE/plinth/s3-credentials")
PLINTH_SECRET=$(awk -F' = ' '/aws_secret_access_key/ {print $2}' "$BASE/plinth/s3-credentials")

# ---- baselines, in the same run
head -c $((SIZE_MIB << 20)) /dev/urandom > "$BASE/work/large"
head -c "$SMALL_BYTES" /dev/urandom > "$BASE/work/small"
TOTAL_MIB=$((SIZE_MIB * OBJECTS))
t0=$(now); dd if=/dev/zero of="$BASE/local/seq" bs=1M count=$TOTAL_MIB conv=fsync status=none; t1=$(now)
LOCAL_WRITE=$(rate $TOTAL_MIB "$t0" "$t1")
drop_caches; t0=$(now); dd if="$BASE/local/seq" of=/dev/null bs=1M status=none; t1=$(now)
LOCAL_READ=$(rate $TOTAL_MIB "$t0" "$t1"); rm -f "$BASE/local/seq"
iperf3 -s -1 -p 5391 >/dev/null 2>&1 & IPERF_PID=$!; sleep 1
LOOPBACK=$(iperf3 -c 127.0.0.1 -p 5391 -t 5 -J | python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8/1048576))')
echo "local disk buffered write+fsync $LOCAL_WRITE MiB/s, cold read $LOCAL_READ MiB/s, loopback TCP (iperf3) $LOOPBACK MiB/s"

# ---- the servers: warm-up and large objects, one server after the other; then rounds of small objects, the
# servers taking turns, each figure the median of its rounds (one round's small rate moved by half between runs)
use() { # name endpoint key secret: the server that the next runs go to
  NAME=$1; ENDPOINT=$2; BUCKET=bench-$1
  CURL=(curl -s --no-progress-meter --aws-sigv4 "aws:amz:us-east-1:s3" --user "$3:$4" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -o /dev/null)
}
list() { local what=$1 count=$2 prefix=$3; for i in $(seq 1 "$count"); do
    [ "$what" = put ] && echo "upload-file = \"$BASE/work/$4\""; echo "url = \"$ENDPOINT/$BUCKET/$prefix$i\""; echo "output = /dev/null"; done; }
measured() { # LABEL OUT COMMAND...: runs COMMAND (its output into OUT), prints the seconds it took, and logs the whole
  # machine's CPU over it (server, client and kernel) to cpu.log as "LABEL core-seconds idle-share"; fails as COMMAND does
  local label=$1 out=$2 t0 t1 c0 c1 status=0; shift 2
  c0=$(cpu_now); t0=$(now)
  "$@" > "$out" || status=$?
  t1=$(now); c1=$(cpu_now)
  python3 -c "import sys; b0, i0, a0, n = map(int, sys.argv[1:5]); b1, i1, a1, _ = map(int, sys.argv[5:9]); t = max(1, a1 - a0)
print(sys.argv[9], '%.4f' % ((b1 - b0) / t * n * (float(sys.argv[11]) - float(sys.argv[10]))), '%.3f' % ((i1 - i0) / t))" \
    $c0 $c1 "$label" "$t0" "$t1" >> "$BASE/work/cpu.log"
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$t1"
  return $status
}
run() { # what count prefix file threads -> elapsed seconds; fails unless every answer is 2xx
  list "$1" "$2" "$3" "${4:-}" > "$BASE/work/$NAME.cfg"
  local seconds
  seconds=$(measured "$NAME $1 $3 $2" "$BASE/work/$NAME.codes" "${CURL[@]}" -Z --parallel-max "$5" -K "$BASE/work/$NAME.cfg" -w '%{http_code}\n')
  if grep -qv '^2' "$BASE/work/$NAME.codes"; then echo "$NAME: some requests failed: $(sort "$BASE/work/$NAME.codes" | uniq -c | tr '\n' ' ')" >&2; exit 1; fi
  echo "$seconds"
}
large() { # name endpoint key secret: "SERVER put|get xTHREADS MiB/s" lines into results.log, after the warm-up
  use "$@"
  "${CURL[@]}" -X PUT "$ENDPOINT/$BUCKET"
  local warm_threads=${THREADS##* } seconds threads
  for _ in $(seq "$WARM_PUT_ROUNDS"); do run put 4 warm- large "$warm_threads" >/dev/null; done
  for _ in $(seq "$WARM_LARGE_ROUNDS"); do run get 4 warm- "" "$warm_threads" >/dev/null; done
  run put "$WARM_SMALL" warm-small- small "$SMALL_THREADS" >/dev/null; run get "$WARM_SMALL" warm-small- "" "$SMALL_THREADS" >/dev/null
  for threads in $THREADS; do
    seconds=$(run put "$OBJECTS" "large$threads-" large "$threads"); echo "$NAME put x$threads $(python3 -c "print($TOTAL_MIB / $seconds)")" >> "$BASE/work/results.log"
    drop_caches
    seconds=$(run get "$OBJECTS" "large$threads-" "" "$threads"); echo "$NAME get x$threads $(python3 -c "print($TOTAL_MIB / $seconds)")" >> "$BASE/work/results.log"
  done
}
small() { # round name endpoint key secret: "SERVER put|get small requests/s" lines into results.log
  local round=$1; shift; use "$@"
  local seconds
  seconds=$(run put "$SMALL" small$round- small "$SMALL_THREADS"); echo "$NAME put small $(python3 -c "print($SMALL / $seconds)")" >> "$BASE/work/results.log"
  seconds=$(run get "$SMALL" small$round- "" "$SMALL_THREADS"); echo "$NAME get small $(python3 -c "print($SMALL / $seconds)")" >> "$BASE/work/results.log"
}
SERVERS=("plinth http://127.0.0.1:9290 $PLINTH_KEY $PLINTH_SECRET" "s3proxy http://127.0.0.1:9291 bench bench-secret-key"
  "ceiling http://127.0.0.1:9292 unused unused")
for server in "${SERVERS[@]}"; do large $server; done
for round in $(seq "$SMALL_ROUNDS"); do for server in "${SERVERS[@]}"; do small "$round" $server; done; done

# ---- small GETs and PUTs again with a lean client (bench/s3-ceiling/s3load.c: keep-alive connections, presigned URLs,
# no files opened per request), which costs the machine far less per request than curl, so the rates show the servers'
# own limits. Each PUT round writes new keys; round 0 warms up, unmeasured.
gcc -O2 -pthread -o "$BASE/work/s3load" "$HERE/bench/s3-ceiling/s3load.c"
LEAN=$((SMALL * LEAN_REPEAT))
for server in "${SERVERS[@]}"; do
  set -- $server
  python3 - "$@" "$SMALL" "$LEAN" "$SMALL_ROUNDS" "$BASE/work/$1" <<'PY'
import sys, boto3, botocore.config
name, endpoint, key, secret, count, lean, rounds, out = sys.argv[1:9]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1",
                  config=botocore.config.Config(signature_version="s3v4", s3={"addressing_style": "path"}))
def paths(method, keys):
    return "".join(s3.generate_presigned_url(method, Params={"Bucket": "bench-" + name, "Key": k}, ExpiresIn=3600)[len(endpoint):] + "\n"
                   for k in keys)
with open(out + ".get", "w") as f:
    f.write(paths("get_object", ("small1-%d" % i for i in range(1, int(count) + 1))))
for r in range(int(rounds) + 1):
    with open(out + ".put%d" % r, "w") as f:
        f.write(paths("put_object", ("lean%d-%d" % (r, i) for i in range(1, int(lean) + 1))))
PY
  for _ in $(seq "$LEAN_REPEAT"); do cat "$BASE/work/$1.get"; done > "$BASE/work/$1.lean"
  "$BASE/work/s3load" "${2#http://}" "$BASE/work/$1.lean" "$SMALL_THREADS" > /dev/null # warm-up, not measured
done
lean() { # round server-words... get|put: one measured lean round into results.log ("SERVER get|put lean RATE")
  local round=$1 name=$2 endpoint=$3 what=${@: -1} seconds label=lean paths=$BASE/work/$2.lean body=()
  if [ "$what" = put ]; then label=leanput; paths=$BASE/work/$name.put$round; body=("$BASE/work/small"); fi
  seconds=$(measured "$name $label small$round $LEAN" "$BASE/work/s3load.out" "$BASE/work/s3load" "${endpoint#http://}" "$paths" \
    "$SMALL_THREADS" "${body[@]}") || { echo "$name: $(cat "$BASE/work/s3load.out")" >&2; exit 1; }
  echo "$name $what lean $(python3 -c "print($LEAN / $seconds)")" >> "$BASE/work/results.log"
}
settle() { # sync, then wait (30 s at most) for a second with the machine 90% idle: what a round of PUTs leaves to do
  # (s3proxy's dirty pages, Plinth's memtable flushes and compactions) must not run in the next server's measured round
  sync
  local before after
  for _ in $(seq 30); do
    before=$(cpu_now); sleep 1; after=$(cpu_now)
    python3 -c "import sys; _, i0, t0, _ = map(int, sys.argv[1:5]); _, i1, t1, _ = map(int, sys.argv[5:9]); sys.exit(i1 - i0 < 0.9 * max(1, t1 - t0))" \
      $before $after && return 0
  done
  return 0
}
for round in $(seq "$SMALL_ROUNDS"); do for server in "${SERVERS[@]}"; do lean "$round" $server get; done; done
# PUTs after the GETs, so that their after-work never runs in a GET round
for server in "${SERVERS[@]}"; do
  set -- $server
  "$BASE/work/s3load" "${2#http://}" "$BASE/work/$1.put0" "$SMALL_THREADS" "$BASE/work/small" > /dev/null # warm-up, not measured
  settle
done
for round in $(seq "$SMALL_ROUNDS"); do for server in "${SERVERS[@]}"; do lean "$round" $server put; settle; done; done

# Rates (each small figure the median of its rounds), CPU of the whole machine per unit of work (server, curl and the
# kernel's copies alike; for small requests the median over the rounds, steadier than the rates), and the ratios
python3 - "$BASE/work/results.log" "$BASE/work/cpu.log" "$TOTAL_MIB" "$LOCAL_WRITE" "$LOCAL_READ" "$LOOPBACK" "$SIZE_MIB" "$SMALL_BYTES" \
  "$THREADS" <<'PY' | tee "$BASE/results.txt"
import sys, statistics
results, cpu_rows = [l.split() for l in open(sys.argv[1])], [l.split() for l in open(sys.argv[2])]
gib = float(sys.argv[3]) / 1024
local_write, local_read, loopback = map(float, sys.argv[4:7])
size, small, threads = sys.argv[7], sys.argv[8], sys.argv[9].split()
servers = ("plinth", "s3proxy", "ceiling")
def rate(server, what, kind):
    return statistics.median(float(r[3]) for r in results if r[:3] == [server, what, kind])
for server in servers:
    print("%-7s %s" % (server, "; ".join("%s %s %s" % (what.upper(), kind, " ".join("%.0f" % float(r[3]) for r in results if r[:3] == [server, what, kind]))
          for kind in ["x" + t for t in threads] + ["small", "lean"] for what in ("put", "get"))) + " (MiB/s, small: requests/s)")
for server in servers:
    parts = []
    for what in ("put", "get"):
        for t in threads:
            row = [r for r in cpu_rows if r[0] == server and r[1] == what and r[2] == "large%s-" % t][-1]
            parts.append("%s x%s %.2f core-s/GiB (%.0f%% idle)" % (what.upper(), t, float(row[4]) / gib, 100 * float(row[5])))
    for what, label in (("put", "PUT small"), ("get", "GET small"), ("leanput", "PUT small, lean client"), ("lean", "GET small, lean client")):
        rows = [r for r in cpu_rows if r[0] == server and r[1] == what and r[2].startswith("small")]
        parts.append("%s %.3f core-ms/request (%.0f%% idle)" % (label, statistics.median(float(r[4]) / int(r[3]) * 1000 for r in rows),
                     100 * statistics.median(float(r[5]) for r in rows)))
    print("%-7s this machine: %s" % (server, "; ".join(parts)))
bound = min(local_read, loopback)
rows = []
for t in threads:
    rows.append(("PUT %s MiB x%s (MiB/s)" % (size, t), "put", "x" + t, local_write, "local disk buffered write+fsync", 0.7, 1.0))
    rows.append(("GET %s MiB x%s (MiB/s)" % (size, t), "get", "x" + t, bound, "min(disk read, loopback) = " + ("disk" if local_read <= loopback else "loopback"), 0.7, 2.0))
rows.append(("PUT %s B (req/s)" % small, "put", "small", None, "-", None, 2.0))
rows.append(("GET %s B (req/s)" % small, "get", "small", None, "-", None, 2.0))
rows.append(("PUT %s B lean (req/s)" % small, "put", "lean", None, "new objects from a lean client", None, 2.0))
rows.append(("GET %s B lean (req/s)" % small, "get", "lean", None, "the same GETs from a lean client", None, 2.0))
# ceiling/s3proxy below a target's "x s3proxy" means no server reaches that target on this machine with this load
print("%-24s %10s %10s %10s %10s %9s %9s %9s  %s" % ("benchmark (xN: in parallel)", "baseline", "plinth", "s3proxy", "ceiling", "/baseline",
      "/s3proxy", "ceil/s3p", "baseline (targets)"))
for name, what, kind, base, label, target_base, target_peer in rows:
    p, s, c = (rate(server, what, kind) for server in servers)
    print("%-24s %10s %10.1f %10.1f %10.1f %9s %9.2f %9.2f  %s (targets: %s%sx s3proxy)" % (name, "-" if base is None else "%.1f" % base,
          p, s, c, "-" if base is None else "%.2f" % (p / base), p / s, c / s, label,
          "" if target_base is None else ">= %.1f of baseline, " % target_base, target_peer))
PY
