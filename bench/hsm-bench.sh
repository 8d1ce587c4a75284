#!/bin/bash
# The cold tier's throughput, beside the bounds measured in the same run: archive and restore of one
# large file to the local-directory archive (bound: cp of the file between two directories of this
# disk, then sync) and to s3proxy (bound: s3proxy's own PUT and GET of the same bytes with curl, a
# lean C client), page cache dropped before each; and the first byte of a read of a released file
# (less that of the same read once the file is resident) beside the archive's own first byte.
# Prints MiB/s and the ratios.
#   usage: bench/hsm-bench.sh [BASE_DIR=/tmp/plinth-hsm-bench] [SIZE_MIB=4096]
#   environment: HEAP (-Xmx2g, for the Plinth server and s3proxy alike)
# Needs root (to drop the page cache), curl >= 7.75, python3, and Maven Central once (peers/s3proxy gathers s3proxy's jars).
set -eu
. "$(dirname "$0")/need.sh"; need curl python3
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-hsm-bench}"); SIZE_MIB=${2:-4096}; HEAP=${HEAP:--Xmx2g}
JAVA=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
cleanup() {
  for pid in "${PLINTH_PID:-}" "${S3PROXY_PID:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  sleep 2; return 0
}
trap cleanup EXIT
rm -rf "$BASE"; mkdir -p "$BASE/plinth" "$BASE/s3proxy/data" "$BASE/local/a" "$BASE/local/b"
plinth() { "$HERE/bin/plinth" "$@" --server 127.0.0.1:7490 --secret-file "$BASE/plinth/cluster.secret"; }

# ---- servers: Plinth (archive 1 in BASE/plinth/archive, on this disk) and s3proxy (archive 2)
"$HERE/bin/plinth" --version >/dev/null   # builds on first use
[ -d "$HERE/peers/s3proxy/target/lib" ] || (cd "$HERE" && ./mvnw -q -pl peers/s3proxy package)
cat > "$BASE/s3proxy/s3proxy.conf" <<CONF
s3proxy.endpoint=http://127.0.0.1:9491
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=bench
s3proxy.credential=bench-secret-key
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$BASE/s3proxy/data
CONF
printf '[default]\naws_access_key_id = bench\naws_secret_access_key = bench-secret-key\n' > "$BASE/s3proxy/credentials"
"$JAVA/bin/java" $HEAP -Dlogback.configurationFile="$HERE/peers/s3proxy/logback.xml" -cp "$HERE/peers/s3proxy/target/lib/*" \
  org.gaul.s3proxy.Main --properties "$BASE/s3proxy/s3proxy.conf" > "$BASE/s3proxy.log" 2>&1 & S3PROXY_PID=$!
PLINTH_JAVA_OPTS="$HEAP" "$HERE/bin/plinth" server --data "$BASE/plinth" --listen 127.0.0.1:7490 --http 127.0.0.1:7491 --s3 '' \
  > "$BASE/plinth.log" 2>&1 & PLINTH_PID=$!
for _ in $(seq 120); do grep -q '"rpc"' "$BASE/plinth/endpoints.json" 2>/dev/null && break; sleep 1; done
for _ in $(seq 60); do (exec 3<>/dev/tcp/127.0.0.1/9491) 2>/dev/null && break; sleep 1; done
CURL=(curl -s --no-progress-meter --aws-sigv4 "aws:amz:us-east-1:s3" --user "bench:bench-secret-key" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
"${CURL[@]}" -X PUT http://127.0.0.1:9491/cold -o /dev/null
plinth archive add --id 2 --name s3proxy "s3://cold/plinth?endpoint=http://127.0.0.1:9491&path-style=true&credentials=$BASE/s3proxy/credentials"

# ---- the file, and the bounds
head -c $((SIZE_MIB << 20)) /dev/urandom > "$BASE/local/a/big"
drop_caches; t0=$(now); cp "$BASE/local/a/big" "$BASE/local/b/big"; sync; t1=$(now)
COPY=$(rate "$SIZE_MIB" "$t0" "$t1"); rm -f "$BASE/local/b/big"
drop_caches; t0=$(now); "${CURL[@]}" -T "$BASE/local/a/big" http://127.0.0.1:9491/cold/bound -o /dev/null; t1=$(now)
S3_PUT=$(rate "$SIZE_MIB" "$t0" "$t1")
drop_caches; S3_FIRST=$("${CURL[@]}" -o /dev/null -w '%{time_starttransfer}' -r 0-0 http://127.0.0.1:9491/cold/bound)
drop_caches; t0=$(now); "${CURL[@]}" http://127.0.0.1:9491/cold/bound -o /dev/null; t1=$(now)
S3_GET=$(rate "$SIZE_MIB" "$t0" "$t1"); "${CURL[@]}" -X DELETE http://127.0.0.1:9491/cold/bound -o /dev/null
plinth fs put "$BASE/local/a/big" /big >/dev/null
rm -f "$BASE/local/a/big"

# ---- archive, release, first byte, restore: to each archive
first_byte() { # seconds from starting `plinth fs cat /big` to its first byte, page cache dropped first
  local t0 t1
  drop_caches; t0=$(now); plinth fs cat /big | head -c 1 > /dev/null; t1=$(now)
  python3 -c "print('%.2f' % ($t1 - $t0))"
}
cycle() { # ARCHIVE_ID -> "archive MiB/s, first byte s, restore MiB/s, first byte of the resident file s"
  local id=$1 t0 t1 archive first restore resident
  plinth hsm remove /big >/dev/null 2>&1 || true
  drop_caches; t0=$(now); plinth hsm archive -a "$id" /big 2>/dev/null; t1=$(now); archive=$(rate "$SIZE_MIB" "$t0" "$t1")
  plinth hsm release /big; sleep 7   # the old chunks' freeing (design note 80), not part of a restore's time
  first=$(first_byte)
  plinth hsm restore /big 2>/dev/null   # the restore the read started, to its end
  plinth hsm release /big; sleep 7
  drop_caches; t0=$(now); plinth hsm restore /big 2>/dev/null; t1=$(now); restore=$(rate "$SIZE_MIB" "$t0" "$t1")
  resident=$(first_byte)
  echo "$archive $first $restore $resident"
}
read -r DIR_ARCHIVE DIR_FIRST DIR_RESTORE DIR_RESIDENT <<< "$(cycle 1)"
read -r S3_ARCHIVE S3P_FIRST S3_RESTORE S3P_RESIDENT <<< "$(cycle 2)"
extra() { python3 -c "print('%.2f' % ($1 - $2))"; }

printf '%-34s %10s %10s %8s\n' "$SIZE_MIB MiB file" "Plinth" "bound" "ratio"
printf '%-34s %10s %10s %8s\n' "archive to directory (MiB/s)" "$DIR_ARCHIVE" "$COPY" "$(ratio "$DIR_ARCHIVE" "$COPY")"
printf '%-34s %10s %10s %8s\n' "restore from directory (MiB/s)" "$DIR_RESTORE" "$COPY" "$(ratio "$DIR_RESTORE" "$COPY")"
printf '%-34s %10s %10s %8s\n' "archive to s3proxy (MiB/s)" "$S3_ARCHIVE" "$S3_PUT" "$(ratio "$S3_ARCHIVE" "$S3_PUT")"
printf '%-34s %10s %10s %8s\n' "restore from s3proxy (MiB/s)" "$S3_RESTORE" "$S3_GET" "$(ratio "$S3_RESTORE" "$S3_GET")"
# first byte: `plinth fs cat` of the released file, its JVM start included; beside it the same of the
# file once resident, and what the release adds (to compare with the archive's own first byte)
printf '%-34s %10s %10s %10s %10s\n' "first byte (s)" "released" "resident" "added" "archive's"
printf '%-34s %10s %10s %10s %10s\n' "  directory" "$DIR_FIRST" "$DIR_RESIDENT" "$(extra "$DIR_FIRST" "$DIR_RESIDENT")" "~0"
printf '%-34s %10s %10s %10s %10s\n' "  s3proxy" "$S3P_FIRST" "$S3P_RESIDENT" "$(extra "$S3P_FIRST" "$S3P_RESIDENT")" "$S3_FIRST"
