# .ci/lib.sh: what the .ci/*.sh checks share; sourced, never run. It moves to
# the repository root and sets root, sudo, the counters and their helpers
# (step, pass, fail, finish, install_missing, wine_session, count_ctest).
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

# wine_session: one Wine session for every test of a run (wine and wineserver set,
# WINEPREFIX exported): a server that outlives each test by 30 s, and Wine's services
# started here with no output. A service that a test's own wine started would
# inherit its stdout and keep ctest waiting until the service exits.
wine_session() {
  mkdir -p "$WINEPREFIX"                         # the server needs it; wineboot fills it the first time
  "$wineserver" -p30 </dev/null >/dev/null 2>&1 # exits 2 when one already runs: fine
  trap '"$wineserver" -k </dev/null >/dev/null 2>&1' EXIT # this prefix's session only
  "$wine" wineboot.exe </dev/null >/dev/null 2>&1
}

# count_ctest LOG WHAT: adds the test executables ctest's LOG counts to passed and
# failed, and says how many passed; a log that ran none is one failure.
count_ctest() {
  local total bad
  total=$(sed -nE 's/.*tests failed out of ([0-9]+).*/\1/p' "$1" | tail -n1)
  bad=$(sed -nE 's/.* ([0-9]+) tests failed out of.*/\1/p' "$1" | tail -n1)
  if [ -z "$total" ] || [ "$total" = 0 ]; then
    fail "ctest $2 ran no test"
  else
    passed=$((passed + total - bad))
    failed=$((failed + bad))
    echo "$((total - bad)) of $total test executables passed $2"
  fi
}
