#!/bin/bash
# The soak run: a cluster of separate processes (mgmt, meta, two storage nodes, an S3 gateway)
# under three applications at once (appends fsynced through a hard FUSE mount, files written and
# fsynced through the native client, objects PUT through S3), with faults drawn at random for
# MINUTES: every role killed with SIGKILL and restarted, storage and meta paused with SIGSTOP,
# storage nodes restarted with a slow disk or short writes, lost replies to WriteChunk, Create,
# Publish, PutWhole and Close. At the end every acknowledged line, file and object is read back.
# Prints a progress line a minute (Failsafe writes a test's output as it ends, so they come together
# at the end), then the faults injected by kind, the operations acknowledged,
# and the violations (any error an application saw, anything acknowledged lost or changed): 0, or
# the run fails and says what. It is RoleRestartLoopIT's soak mode (the normal test run does each
# fault a fixed number of times instead).
#   usage: bench/soak.sh [MINUTES=30]
# Needs root (the FUSE mount), fuse3 and python3; builds the project first (offline when it can).
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
MINUTES=${1:-30}
cd "$HERE"
./mvnw -o -q install -DskipTests 2>/dev/null || ./mvnw -q install -DskipTests
REPORT="$HERE/integration/target/failsafe-reports/dev.plinth.integration.RoleRestartLoopIT-output.txt"
rm -f "$REPORT"
# the run's lines as Failsafe writes them to the test's report file
( while [ ! -f "$REPORT" ]; do sleep 5; done; tail -n +1 -f "$REPORT" | grep --line-buffered '^soak:' ) & TAIL=$!
trap 'kill $TAIL 2>/dev/null; pkill -f "tail -n +1 -f $REPORT" 2>/dev/null || true' EXIT
status=0
(cd integration && ../mvnw -o -q verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=RoleRestartLoopIT \
  -Dplinth.soak.minutes="$MINUTES" > "$HERE/integration/target/soak-maven.log" 2>&1) || status=$?
sleep 6
if [ "$status" -ne 0 ]; then
  echo "soak: FAILED; see integration/target/soak-maven.log and the logs it names (kept under /tmp/junit-*)" >&2
  grep -E "Expecting|expected|but was|Exception" "$HERE/integration/target/soak-maven.log" | head -20 >&2
fi
exit "$status"
