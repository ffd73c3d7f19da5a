#!/usr/bin/env bash
# The prebuilt libraries of prebuilt/*.ts (tools/prebuild.ts, zig cc):
#  - fresh: each was built from the C sources of this tree, and decompresses to
#    its declared sha256 (tools/prebuild.ts --check);
#  - reproducible: every target but windows-aarch64, rebuilt here from scratch
#    (a fresh zig cache), is byte for byte the committed one (which also
#    proves it fresh; ~1.5 min on 2 CPUs);
#  - loadable where they go: Linux needs only glibc <= 2.17 and its own
#    libraries; the Mach-O and PE files export exactly the Linux symbols; the
#    DLL imports only system DLLs, and the C tests pass against it under Wine.
# The Deno side (deno add from a JSR stand-in, aarch64 under qemu) is
# .ci/jsr_install.sh. Needs deno and npm on PATH. Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh" # cd to the root; root, sudo, step, pass, fail, install_missing

out="$root/build-prebuilt/extracted"
prebuild() { deno run --allow-read --allow-write --allow-env --allow-run tools/prebuild.ts "$@"; }

step "install packages"
log=$(mktemp)
if ! install_missing "$log" binutils llvm cmake make gcc-mingw-w64-x86-64-win32 wine64; then
  fail "apt-get install ${missing[*]}" "$log"
  rm -f "$log"
  finish
fi
rm -f "$log"

step "fresh and intact: tools/prebuild.ts --check"
if prebuild --check; then pass "every prebuilt module matches the C sources and its sha256"; else fail "stale or damaged prebuilt modules (run: deno task prebuild)"; fi

step "reproducible: rebuild from scratch and compare"
# Every target but windows-aarch64: same recipe as windows-x86_64, and building its C runtime
# from scratch alone adds ~1 min on 2 CPUs. --check above covers its bytes.
t0=$(date +%s)
if prebuild --compare=linux-x86_64,linux-aarch64,darwin-x86_64,darwin-aarch64,windows-x86_64; then
  pass "every target but windows-aarch64 rebuilt identical ($(($(date +%s) - t0)) s)"
else
  fail "a rebuild differs from the committed library ($(($(date +%s) - t0)) s)"
fi

rm -rf "$out"
# A target that cannot be extracted fails the checks that need its file.
prebuild --extract="$out" >/dev/null

step "Linux: glibc 2.17 and no other dependency"
for t in linux-x86_64 linux-aarch64; do
  so="$out/$t/libgpures.so"
  newest=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1)
  needed=$(objdump -p "$so" | sed -nE 's/^\s*NEEDED\s+(.*)$/\1/p' |
    grep -vE '^(libc\.so\.6|libpthread\.so\.0|libdl\.so\.2|ld-linux-(x86-64|aarch64)\.so\.[12])$' || true)
  flags=$(readelf -d "$so" | grep -E 'FLAGS_1' | sed -E 's/.*Flags: //' || true)
  if [ -z "$needed" ] && [ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -n1)" = GLIBC_2.17 ] &&
    grep -q NODELETE <<<"$flags"; then
    pass "$t: newest symbol version $newest, NODELETE, needs only the C library"
  else
    fail "$t: newest $newest, extra NEEDED: ${needed:-none}, flags: ${flags:-none}"
  fi
done

step "macOS and Windows export exactly the Linux symbols"
linux_exports=$(nm -D --defined-only "$out/linux-x86_64/libgpures.so" | awk '{print $NF}' | sort -u)
echo "linux-x86_64 exports $(wc -l <<<"$linux_exports") symbols"
compare_exports() { # name, symbols[, symbols Linux has that this target may not]
  local diffs want
  want=$(grep -vxF -e "${3:-}" <<<"$linux_exports")
  diffs=$(diff <(echo "$want") <(sort -u <<<"$2"))
  if [ -z "$diffs" ]; then pass "$1 exports the same $(wc -l <<<"$want") symbols${3:+ (all but $3)}"; else
    fail "$1 exports differ from Linux's:"
    echo "$diffs" | head -n 20
  fi
}
compare_exports linux-aarch64 "$(nm -D --defined-only "$out/linux-aarch64/libgpures.so" | awk '{print $NF}')"
for t in darwin-x86_64 darwin-aarch64; do
  # Less the C prefix "_", and the two symbols the Mach-O linker defines in every dylib.
  compare_exports "$t" "$(llvm-nm --extern-only --defined-only "$out/$t/libgpures.dylib" |
    awk '{print $NF}' | sed 's/^_//' | grep -vxE '__dso_handle|_mh_dylib_header')"
done
dll="$out/windows-x86_64/gpures.dll"
for t in windows-x86_64 windows-aarch64; do
  # The Node-API entry (map/napi_buffers.c) is compiled for POSIX only.
  compare_exports "$t" "$(llvm-objdump -p "$out/$t/gpures.dll" 2>/dev/null |
    sed -n '/Export Table/,/^$/p' | awk 'NF==3 && $1 ~ /^[0-9]+$/ {print $3}')" napi_register_module_v1
  imports=$(llvm-objdump -p "$out/$t/gpures.dll" 2>/dev/null | sed -nE 's/^\s*DLL Name: (.*)$/\1/p')
  foreign=$(tr -d '\r' <<<"$imports" |
    grep -viE '^(kernel32|ucrtbase|msvcrt|api-ms-win-crt-[a-z0-9-]+)\.dll$' || true)
  if [ -n "$imports" ] && [ -z "$foreign" ]; then pass "$t: imports only system DLLs"; else
    fail "$t: gpures.dll imports ${foreign:-nothing readable}"
  fi
done

step "Windows: the C tests against the prebuilt gpures.dll, under Wine"
if [ ! -f "$dll" ]; then
  fail "no prebuilt gpures.dll to test"
  finish
fi
bw="$root/build-prebuilt-windows"
wine=$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver64)
export WINEPREFIX="$bw/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY
t0=$(date +%s)
if ! { cmake -S . -B "$bw" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/mingw-w64.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DGPURES_BUILD_TESTS=ON -DGPURES_BUILD_TEST_HELPERS=OFF \
  -DGPURES_BUILD_BENCH=OFF -DGPURES_WINE="$wine" >"$root/build-prebuilt/windows-build.log" 2>&1 &&
  cmake --build "$bw" -j"$(nproc)" >>"$root/build-prebuilt/windows-build.log" 2>&1; }; then
  fail "mingw build of the C tests" "$root/build-prebuilt/windows-build.log"
  finish
fi
# The tests load gpures.dll from their own folder: put the prebuilt one there.
cp "$dll" "$bw/native/tests/gpures.dll"
if ! cmp -s "$dll" "$bw/native/tests/gpures.dll"; then
  fail "could not place the prebuilt gpures.dll"
  finish
fi
wine_session
ctest --test-dir "$bw" --output-on-failure </dev/null >"$bw/ctest.log" 2>&1
tail -n 15 "$bw/ctest.log"
cmp -s "$dll" "$bw/native/tests/gpures.dll" || fail "ctest replaced the prebuilt gpures.dll"
count_ctest "$bw/ctest.log" "against the prebuilt DLL ($(($(date +%s) - t0)) s)"

finish
