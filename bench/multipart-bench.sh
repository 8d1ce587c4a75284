#!/bin/bash
# Multipart PUTs through the S3 gateway: PARALLEL objects of SIZE_MIB uploaded at once, ROUNDS
# times, in 8 MiB parts (the AWS CLI's default part size), with the local disk's buffered write +
# fsync of the same bytes measured in the same run as the bound. Besides MiB/s it prints what the
# targets read and wrote per byte uploaded (from /metrics): a completion that copies the parts shows
# as 2x written and 1x read, one that does not as 1x and 0x. Two clients: curl (one process per
# part, SigV4 with an unsigned payload: costs the servers little CPU) and the AWS CLI (Python: on
# a small machine it is the limit itself).
#   usage: bench/multipart-bench.sh [BASE_DIR=/tmp/plinth-multipart-bench] [ROUNDS=5] [SIZE_MIB=64] [PARALLEL=4]
# Needs the AWS CLI (Debian awscli) and curl >= 7.75.
set -eu
. "$(dirname "$0")/need.sh"; need aws:awscli curl
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-multipart-bench}"); ROUNDS=${2:-5}; SIZE_MIB=${3:-64}; PARALLEL=${4:-4}
cleanup() { [ -n "${PLINTH_PID:-}" ] && kill "$PLINTH_PID" 2>/dev/null && wait "$PLINTH_PID" 2>/dev/null; return 0; }
trap cleanup EXIT
rm -rf "$BASE"; mkdir -p "$BASE/plinth" "$BASE/work" "$BASE/local"

"$HERE/bin/plinth" --version >/dev/null   # builds on first use
PLINTH_JAVA_OPTS=${HEAP:--Xmx2g} "$HERE/bin/plinth" server --data "$BASE/plinth" --listen 127.0.0.1:7390 --http 127.0.0.1:7391 \
  --s3 127.0.0.1:9390 > "$BASE/plinth.log" 2>&1 & PLINTH_PID=$!
for _ in $(seq 120); do grep -q '"s3"' "$BASE/plinth/endpoints.json" 2>/dev/null && break; sleep 1; done
grep -q '"s3"' "$BASE/plinth/endpoints.json" || { echo "plinth did not start; see $BASE/plinth.log" >&2; exit 1; }
export AWS_SHARED_CREDENTIALS_FILE="$BASE/plinth/s3-credentials" AWS_CONFIG_FILE=/dev/null AWS_DEFAULT_REGION=us-east-1
s3() { aws --endpoint-url http://127.0.0.1:9390 s3 "$@"; }
for i in $(seq "$PARALLEL"); do head -c $((SIZE_MIB << 20)) /dev/urandom > "$BASE/work/object-$i"; done
s3 mb s3://bench >/dev/null
# the sum over targets of plinth_target_io_bytes_total in one direction
target_bytes() {
  curl -s http://127.0.0.1:7391/metrics | awk -v d="direction=\"$1\"" '/^plinth_target_io_bytes_total/ && index($0, d) {s += $NF} END {printf "%.0f\n", s}'
}
KEY=$(awk -F' = ' '/aws_access_key_id/ {print $2}' "$BASE/plinth/s3-credentials")
SECRET=$(awk -F' = ' '/aws_secret_access_key/ {print $2}' "$BASE/plinth/s3-credentials")
CURL=(curl -sf --no-progress-meter --aws-sigv4 "aws:amz:us-east-1:s3" --user "$KEY:$SECRET" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
for i in $(seq "$PARALLEL"); do mkdir -p "$BASE/work/parts-$i"; split -b 8M -d -a 5 "$BASE/work/object-$i" "$BASE/work/parts-$i/"; done
# one object: create the upload, its parts one after another, then complete ("uploads=": curl 7.88 signs a bare
# "uploads" other than SigV4's canonical query string, which every server checks)
curl_object() {
  local key=$1 parts=$2 id n=0 etag list=""
  id=$("${CURL[@]}" -X POST "http://127.0.0.1:9390/bench/$key?uploads=" | sed -n 's:.*<UploadId>\(.*\)</UploadId>.*:\1:p')
  for part in "$parts"/*; do
    n=$((n + 1))
    etag=$("${CURL[@]}" -D - -o /dev/null -T "$part" "http://127.0.0.1:9390/bench/$key?partNumber=$n&uploadId=$id" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag" {print $2}')
    list="$list<Part><PartNumber>$n</PartNumber><ETag>$etag</ETag></Part>"
  done
  "${CURL[@]}" -o /dev/null -w '%{time_total}\n' -X POST --data-binary "<CompleteMultipartUpload>$list</CompleteMultipartUpload>" \
    "http://127.0.0.1:9390/bench/$key?uploadId=$id" >> "$BASE/work/complete-seconds"
}
curl_round() {
  local pids=() pid
  for i in $(seq "$PARALLEL"); do curl_object "$1-$i" "$BASE/work/parts-$i" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done
}
put_round() {
  local pids=() pid
  for i in $(seq "$PARALLEL"); do s3 cp --quiet "$BASE/work/object-$i" "s3://bench/$1-$i" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done   # not a bare wait: the server is a background job too
}
put_round warm; curl_round warm   # the gateway's JIT compiles on the first round
TOTAL_MIB=$((SIZE_MIB * PARALLEL * ROUNDS))
# one client's rounds: MiB/s, then target bytes written and read per byte uploaded
measure() {
  local w0 r0 w1 r1 t0 t1
  w0=$(target_bytes write); r0=$(target_bytes read)
  t0=$(now); for r in $(seq "$ROUNDS"); do "$1" "$2$r"; done; t1=$(now)
  w1=$(target_bytes write); r1=$(target_bytes read)
  python3 -c "import sys; t, w0, w1, r0, r1 = map(float, sys.argv[1:]); print('%.1f %.2f %.2f' % (t, (w1 - w0) / (t * (1 << 20)), (r1 - r0) / (t * (1 << 20))))" \
    "$TOTAL_MIB" "$w0" "$w1" "$r0" "$r1" | { read -r mib written read; echo "$(rate "$TOTAL_MIB" "$t0" "$t1") $written $read"; }
}
rm -f "$BASE/work/complete-seconds"
CURL_RESULT=$(measure curl_round curl)
COMPLETE_MS=$(sort -n "$BASE/work/complete-seconds" | awk '{v[NR] = $1} END {printf "%.0f", 1000 * v[int((NR + 1) / 2)]}')
AWS_RESULT=$(measure put_round aws)
t0=$(now); dd if=/dev/zero of="$BASE/local/seq" bs=1M count=$TOTAL_MIB conv=fsync status=none; t1=$(now)
LOCAL=$(rate "$TOTAL_MIB" "$t0" "$t1")
printf '%-34s %10s %10s %10s\n' "$PARALLEL x $SIZE_MIB MiB multipart" "MiB/s" "written/B" "read/B"
printf '%-34s %10s %10s %10s\n' "curl" $CURL_RESULT
printf '%-34s %10s %10s %10s\n' "AWS CLI" $AWS_RESULT
printf '%-34s %10s\n' "local write + fsync" "$LOCAL"
printf '%-34s %10s\n' "CompleteMultipartUpload, median (ms)" "$COMPLETE_MS"
