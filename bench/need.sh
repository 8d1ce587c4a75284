# Sourced by the bench scripts: `need TOOL[:DEBIAN_PACKAGE] ...` stops with one line naming what
# is missing and how to install it, instead of failing halfway through a run; and the helpers every
# script times and compares with.
need() {
  local missing=() packages=() tool package
  for spec in "$@"; do
    tool=${spec%%:*}; package=${spec#*:}
    command -v "$tool" >/dev/null 2>&1 || { missing+=("$tool"); packages+=("$package"); }
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "$(basename "$0"): missing ${missing[*]}; install with: apt-get install -y ${packages[*]}" >&2
    exit 2
  fi
}

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || echo "(not root: reads are warm)" >&2; }
# seconds since the epoch, to the nanosecond; `seconds START END` the time between two of them
now() { date +%s.%N; }
seconds() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$@"; }
# `rate AMOUNT START END`: amount per second between two `now`s; `ratio A B`: A / B
rate() { python3 -c "import sys; print('%.1f' % (float(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2]))))" "$@"; }
ratio() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$@"; }
# `await_file FILE`: waits (60 s at most) until a starting process has written FILE, else stops the script
await_file() { for _ in $(seq 120); do [ -s "$1" ] && return 0; sleep 0.5; done; echo "no $1 after 60 s; see the logs in ${BASE:-the bench directory}" >&2; exit 1; }
# `cpu_seconds PID`: the CPU seconds (user + system) the process has used so far
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$1/stat"; }
# `ms_per BEFORE AFTER COUNT`: milliseconds per item between two `cpu_seconds` (or `now`) readings
ms_per() { python3 -c "import sys; print('%.3f' % (1000 * (float(sys.argv[2]) - float(sys.argv[1])) / int(sys.argv[3])))" "$@"; }
# the median of the numbers on stdin, one per line
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
