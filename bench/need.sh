# Sourced by the bench scripts: `need TOOL[:DEBIAN_PACKAGE] ...` stops with one line naming what
# is missing and how to install it, instead of failing halfway through a run.
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
