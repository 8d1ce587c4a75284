#!/bin/bash
# The S3 gateway beside s3proxy (filesystem-nio2 provider) on the same disk, in one run: PUT and GET
# of large objects and small-object request rates, with the local disk (buffered write + fsync,
# read) and loopback TCP (iperf3) measured in the same run. Both servers run as separate JVMs
# with the same heap; the load generator is `plinth s3 bench` (one JVM, the same client for both).
#   usage: bench/s3-compare.sh [BASE_DIR=/tmp/plinth-s3-bench] [SIZE=64M] [OBJECTS=16] [SMALL_OBJECTS=2000]
# Needs root to drop the page cache before GETs (otherwise GETs are warm), iperf3, and Maven Central
# once (bench/s3proxy/pom.xml gathers s3proxy's jars).
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-s3-bench}"); SIZE=${2:-64M}; OBJECTS=${3:-16}; SMALL=${4:-2000}
HEAP=${HEAP:--Xmx2g}
cleanup() {
  for pid in "${PLINTH_PID:-}" "${S3PROXY_PID:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null; done
  sleep 2; return 0
}
trap cleanup EXIT
rm -rf "$BASE"; mkdir -p "$BASE/plinth" "$BASE/s3proxy/data"

JAVA=$("$HERE/bin/plinth" --version >/dev/null && ls -d /usr/lib/jvm/temurin-25-jdk-amd64 2>/dev/null || echo "${JAVA_HOME:?set JAVA_HOME to a JDK 25}")
[ -d "$HERE/bench/s3proxy/target/lib" ] || (cd "$HERE" && ./mvnw -q -f bench/s3proxy/pom.xml package)

PLINTH_JAVA_OPTS="$HEAP" "$HERE/bin/plinth" server --data "$BASE/plinth" --listen 127.0.0.1:7290 --http 127.0.0.1:7291 --s3 127.0.0.1:9290 \
  > "$BASE/plinth.log" 2>&1 & PLINTH_PID=$!

cat > "$BASE/s3proxy/s3proxy.conf" <<CONF
s3proxy.endpoint=http://127.0.0.1:9291
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=bench
s3proxy.credential=bench-secret-key
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$BASE/s3proxy/data
CONF
printf '[default]\naws_access_key_id = bench\naws_secret_access_key = bench-secret-key\n' > "$BASE/s3proxy/credentials"
"$JAVA/bin/java" $HEAP -Dlogback.configurationFile="$HERE/bench/s3proxy/logback.xml" -cp "$HERE/bench/s3proxy/target/lib/*" \
  org.gaul.s3proxy.Main --properties "$BASE/s3proxy/s3proxy.conf" > "$BASE/s3proxy.log" 2>&1 & S3PROXY_PID=$!

for _ in $(seq 120); do [ -f "$BASE/plinth/s3-credentials" ] && grep -q '"s3"' "$BASE/plinth/endpoints.json" 2>/dev/null && break; sleep 1; done
[ -f "$BASE/plinth/s3-credentials" ] || { echo "plinth did not start; see $BASE/plinth.log" >&2; exit 1; }
for _ in $(seq 60); do (exec 3<>/dev/tcp/127.0.0.1/9291) 2>/dev/null && break; sleep 1; done

"$HERE/bin/plinth" s3 bench --endpoint http://127.0.0.1:9290 --credentials "$BASE/plinth/s3-credentials" \
  --peer-endpoint http://127.0.0.1:9291 --peer-credentials "$BASE/s3proxy/credentials" --peer-name s3proxy \
  --size "$SIZE" --objects "$OBJECTS" --small-objects "$SMALL" --local-dir "$BASE" | tee "$BASE/results.txt"
