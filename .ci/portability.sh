#!/usr/bin/env bash
# Portability: proves on a Debian machine what can be proved about
# Windows and macOS, and ends with one line "N passed, N failed".
#
# Windows: cross-builds gpures.dll and the C tests with mingw-w64 through
#   cmake/toolchains/mingw-w64.cmake into build-windows/, checks the DLL's
#   name, exports (every symbol ffi/gen/symbols.ts binds) and imports (system
#   DLLs only), runs the C tests under Wine (one check per test executable),
#   and checks that the tables the Deno module compares at load are the same
#   in gpures.dll as in a Linux build.
# macOS: compiles every library source and native/tests/test_platform.c
#   (whose static assertions check the kind table's gating for the target)
#   with clang -target x86_64-apple-darwin, one check per file. No macOS SDK
#   exists on Debian, so the C library headers are musl's: POSIX headers that
#   hide GNU extensions unless asked for them, which is what os/posix.c must
#   live with on macOS.
#
# Installs what it needs with apt-get (only what is missing). Idempotent. Needs
# deno on PATH (as .ci/run provides) to read the symbols the loader binds.
set -uo pipefail
. "$(dirname "$0")/lib.sh" # cd to the root; root, sudo, step, pass, fail, install_missing

step "install packages"
t0=$(date +%s)
log=$(mktemp)
if ! install_missing "$log" cmake make gcc libc6-dev clang musl-dev gcc-mingw-w64-x86-64-win32 wine64; then
  rm -f "$log"
  fail "apt-get install ${missing[*]}"
  finish
fi
rm -f "$log"
echo "packages ready in $(($(date +%s) - t0)) s"

# ------------------------------------------------------------------ Windows
bw=build-windows
wine=$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver64)
export WINEPREFIX="$root/$bw/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY

step "Windows: cross-build with mingw-w64"
t0=$(date +%s)
if cmake -S . -B "$bw" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/mingw-w64.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DGPURES_BUILD_TESTS=ON -DGPURES_BUILD_TEST_HELPERS=OFF \
  -DGPURES_BUILD_BENCH=OFF -DGPURES_WINE="$wine" >"$bw.configure.log" 2>&1 &&
  cmake --build "$bw" -j"$(nproc)"; then
  pass "cross-build ($(($(date +%s) - t0)) s)"
  built=1
else
  cat "$bw.configure.log" 2>/dev/null | tail -n 20
  fail "cross-build"
  built=0
fi
rm -f "$bw.configure.log"

# Every DLL a file imports that is not part of Windows.
foreign_imports() {
  x86_64-w64-mingw32-objdump -p "$1" | sed -nE 's/^\s*DLL Name: (.*)$/\1/p' | tr -d '\r' |
    grep -viE '^(kernel32|msvcrt|ucrtbase|user32|advapi32|ws2_32|ntdll|api-ms-win-.*)\.dll$' |
    grep -vx "${2:-}" || true
}

if [ "$built" = 1 ]; then
  step "Windows: gpures.dll's name, exports and imports"
  dll="$bw/gpures.dll"
  if [ ! -f "$dll" ]; then
    fail "no $dll (the Deno loader looks for gpures.dll)"
  else
    exports=$(x86_64-w64-mingw32-objdump -p "$dll" |
      sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | awk '{print $NF}' | grep '^gpures')
    # The C names the loader binds: an entry's `name` when it aliases one (fast-path variants).
    wanted=$(deno eval --quiet 'import { symbols } from "./ffi/gen/symbols.ts";
      for (const [key, def] of Object.entries(symbols)) console.log("name" in def ? def.name : key);' |
      sort -u)
    absent=$(comm -13 <(sort -u <<<"$exports") <(echo "$wanted"))
    foreign=$(foreign_imports "$dll"; for exe in "$bw"/native/tests/*.exe; do foreign_imports "$exe" gpures.dll; done)
    echo "gpures.dll exports $(wc -l <<<"$exports") functions; ffi/gen/symbols.ts binds $(wc -l <<<"$wanted")"
    if [ -z "$wanted" ]; then
      fail "found no gpures_* symbol in ffi/gen/symbols.ts"
    elif [ -n "$absent" ]; then
      fail "gpures.dll lacks: $absent"
    elif [ -n "$foreign" ]; then
      fail "gpures.dll or a test needs DLLs Windows does not have: $(sort -u <<<"$foreign" | tr '\n' ' ')"
    else
      pass "gpures.dll exports every symbol the Deno loader binds and imports only system DLLs"
    fi
  fi

  step "Windows: C tests under Wine"
  t0=$(date +%s)
  wine_session
  echo "Wine session ready in $(($(date +%s) - t0)) s"
  ctest --test-dir "$bw" --output-on-failure </dev/null 2>&1 | tee "$bw/ctest.log"
  count_ctest "$bw/ctest.log" "under Wine ($(($(date +%s) - t0)) s)"

  step "Windows: the tables the Deno module checks are the Linux build's"
  # The Linux side: the same program against a host build of the library.
  if ! { cmake -S . -B "$bw/host" -DCMAKE_BUILD_TYPE=Release -DGPURES_BUILD_TESTS=ON \
    -DGPURES_BUILD_TEST_HELPERS=OFF -DGPURES_BUILD_BENCH=OFF >/dev/null &&
    cmake --build "$bw/host" -j"$(nproc)" --target layout_dump >/dev/null; }; then
    fail "layout dump: the Linux build failed"
  else
    "$bw/host/native/tests/layout_dump" >"$bw/host/layout-linux.txt"
    (cd "$bw/native/tests" && "$wine" layout_dump.exe </dev/null) | tr -d '\r' >"$bw/host/layout-windows.txt"
    if [ -s "$bw/host/layout-windows.txt" ] &&
      diff -u "$bw/host/layout-linux.txt" "$bw/host/layout-windows.txt"; then
      pass "gpures.dll's kinds, field rows, enums, formats and struct sizes equal Linux's ($(wc -l <"$bw/host/layout-linux.txt") lines)"
    else
      fail "gpures.dll's tables differ from Linux's (or layout_dump.exe printed nothing)"
    fi
  fi
fi

# -------------------------------------------------------------------- macOS
step "macOS: compile for x86_64-apple-darwin"
bm=build-macos
mkdir -p "$bm"
resource=$(clang -print-resource-dir)
musl=/usr/include/x86_64-linux-musl
# The library's own flags (CMakeLists.txt); only undeclared functions are errors,
# since they are what an API missing on macOS looks like here.
darwin=(clang -target x86_64-apple-darwin -mmacosx-version-min=10.15 -std=c11 -c
  -nostdinc -isystem "$resource/include" -isystem "$musl" -Inative/include
  -fvisibility=hidden -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-missing-field-initializers
  -Werror=implicit-function-declaration)
for src in native/src/*/*.c; do # every layer folder (native/src/internal.h lists them)
  obj="$bm/$(tr / _ <<<"${src%.c}").o"
  if "${darwin[@]}" -DGPURES_BUILDING "$src" -o "$obj"; then pass "$src"; else fail "$src"; fi
done
if "${darwin[@]}" native/tests/test_platform.c -o "$bm/test_platform.o"; then
  pass "native/tests/test_platform.c: the kind table gates darwin as SPEC section 2 says"
else
  fail "native/tests/test_platform.c: the kind table's darwin gating"
fi

finish
