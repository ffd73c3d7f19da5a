# .ci/lib.sh: what the .ci/*.sh checks share; sourced, never run. It moves to
# the repository root and sets root, sudo, the counters and their helpers
# (step, pass, fail, finish, install_missing).
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$(pwd)
export DEBIAN_FRONTEND=noninteractive
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

step() { printf '\n=== %s\n' "$*"; }
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $*"; }
# fail MESSAGE [LOG]: counts a failure and shows the end of LOG when there is one.
fail() {
  failed=$((failed + 1))
  echo "FAIL $1"
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 40 "$2" | sed 's/^/     | /'
}

# finish: the closing line every script ends with, and its status (0 when nothing failed).
finish() {
  echo
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

# install_missing LOG PACKAGE...: apt-get installs the packages that are not
# installed (left in the array `missing`), its output into LOG; on failure
# prints the end of LOG and returns 1.
install_missing() {
  local log=$1 p
  shift
  missing=()
  for p in "$@"; do # "dpkg -s" also succeeds for a removed package's leftovers
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing ${missing[*]}"
  { $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
    >"$log" 2>&1 && return 0
  tail -n 20 "$log"
  return 1
}
