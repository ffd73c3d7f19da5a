#!/usr/bin/env bash
# Install from JSR with no compiler: a local JSR stand-in (tools/jsr_stand_in.ts)
# serves the package as `deno publish` would upload it; in a fresh DENO_DIR and
# HOME, with PATH holding only deno, `deno add jsr:@gpures/gpures`, then a
# script run with only --allow-ffi creates, clones, describes and releases a
# handle (from the prebuilt library: no cmake, cc or zig on PATH). It makes no
# registry request; with the stand-in stopped it runs again with --cached-only.
# Then the same under qemu-aarch64-static with Deno's arm64 binary from npm,
# loading the linux-aarch64 prebuilt. Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh" # cd to the root; root, sudo, step, pass, fail, install_missing

DENO_VERSION=2.9.6
deno=$(command -v deno) || { echo "deno is not on PATH"; echo "0 passed, 1 failed"; exit 1; }
work=$(mktemp -d /tmp/gpures-jsr-XXXXXX)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/bin" "$work/home" "$work/app"
ln -s "$deno" "$work/bin/deno"

start_registry() {
  rm -f "$work/url"
  deno run --allow-net=127.0.0.1 --allow-read --allow-write --allow-run tools/jsr_stand_in.ts \
    --root "$root" --url-file "$work/url" --log "$work/requests.log" 2>"$work/registry.log" &
  server=$!
  for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
  [ -s "$work/url" ]
}
stop_registry() {
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  server=""
}

# A user's machine: nothing but deno; DENO_DIR and HOME fresh.
user() { # dir, command...
  local dir=$1
  shift
  (cd "$dir" && env -i HOME="$work/home" DENO_DIR="$work/deno-dir" PATH="$work/bin" NO_COLOR=1 \
    JSR_URL="$(cat "$work/url" 2>/dev/null)" "$@")
}

cat >"$work/app/main.ts" <<'EOF'
import { CpuBytes, load } from "@gpures/gpures";

const data = new Uint8Array(16 * 4 * 4);
const first = CpuBytes.create({ data, rowPitch: 16, format: "RgbaU8", width: 4, height: 4 });
const second = first.clone();
const d = second.describe();
first.release();
second.release();
const loaded = load();
console.log(JSON.stringify({ kind: d.kind, refcount: d.refcount, from: loaded.from }));
EOF
echo '{}' >"$work/app/deno.json"

# expect_handle LOG TARGET: main.ts printed what a working install prints.
expect_handle() {
  grep -q "\"kind\":\"CpuBytes\",\"refcount\":2,\"from\":\"the prebuilt library for $2 (in a memfd)\"" "$1"
}

step "JSR stand-in and deno add"
if ! start_registry; then
  fail "the JSR stand-in did not start" "$work/registry.log"
  finish
fi
cat "$work/registry.log"
if user "$work/app" deno add jsr:@gpures/gpures >"$work/add.log" 2>&1; then
  pass "deno add jsr:@gpures/gpures from the stand-in at $(cat "$work/url")"
else
  fail "deno add jsr:@gpures/gpures" "$work/add.log"
  finish
fi
missing=$(grep -v ' 200$' "$work/requests.log" || true)
if [ -z "$missing" ] && grep -q "prebuilt/linux-aarch64.ts 200" "$work/requests.log" &&
  grep -q "prebuilt/windows-x86_64.ts 200" "$work/requests.log"; then
  pass "deno add fetched every module, each prebuilt included ($(wc -l <"$work/requests.log") requests)"
else
  fail "deno add: a request failed or a prebuilt module was not fetched: $missing" "$work/requests.log"
fi

step "a script with only --allow-ffi, from the prebuilt library"
before=$(wc -l <"$work/requests.log")
if user "$work/app" deno run --allow-ffi main.ts >"$work/run.log" 2>&1 && expect_handle "$work/run.log" linux-x86_64; then
  pass "create, clone, describe, release with only --allow-ffi: $(cat "$work/run.log")"
else
  fail "the script with only --allow-ffi" "$work/run.log"
fi
after=$(wc -l <"$work/requests.log")
if [ "$before" = "$after" ]; then
  pass "the run made no registry request"
else
  fail "the run made $((after - before)) registry requests" "$work/requests.log"
fi
if user "$work/app" deno run main.ts >"$work/noffi.log" 2>&1; then
  fail "without --allow-ffi the script should fail"
elif grep -q -- '--allow-ffi' "$work/noffi.log"; then
  pass "without --allow-ffi the error says to pass --allow-ffi"
else
  fail "without --allow-ffi the error does not name the flag" "$work/noffi.log"
fi

step "offline: the stand-in stopped, --cached-only"
stop_registry
if user "$work/app" deno run --cached-only --allow-ffi main.ts >"$work/offline.log" 2>&1 &&
  expect_handle "$work/offline.log" linux-x86_64; then
  pass "runs offline with --cached-only"
else
  fail "offline run with --cached-only" "$work/offline.log"
fi

step "offline build from source: the C sources ship in the package"
# With a compiler on PATH this time; still offline (the stand-in is stopped, --cached-only).
t0=$(date +%s)
if (cd "$work/app" && env -i HOME="$work/home" DENO_DIR="$work/deno-dir" PATH="$PATH" NO_COLOR=1 JSR_URL="$(cat "$work/url")" \
  GPURES_CACHE_DIR="$work/cache" deno run -A --cached-only jsr:@gpures/gpures/build) >"$work/build.log" 2>&1 &&
  built=$(find "$work/cache" -maxdepth 2 -name libgpures.so | head -n1) && [ -n "$built" ] &&
  user "$work/app" /usr/bin/env GPURES_LIB="$built" deno run --cached-only --allow-ffi --allow-env=GPURES_LIB main.ts \
    >"$work/built-run.log" 2>&1 && grep -qF "\"from\":\"\\\"$built\\\"\"" "$work/built-run.log"; then
  pass "built from the package's sources offline in $(($(date +%s) - t0)) s, and load() takes it"
else
  fail "offline build from source" "$work/build.log"
  cat "$work/built-run.log" 2>/dev/null | tail -n 5
fi

# ------------------------------------------------------------------ aarch64
step "aarch64 under qemu: Deno's arm64 binary, the linux-aarch64 prebuilt"
log=$(mktemp)
if ! install_missing "$log" qemu-user-static libc6-arm64-cross libgcc-s1-arm64-cross; then
  fail "apt-get install qemu-user-static libc6-arm64-cross libgcc-s1-arm64-cross" "$log"
  rm -f "$log"
  finish
fi
rm -f "$log"
arm_tools="$root/build-prebuilt/.tools-arm64"
arm_deno="$arm_tools/node_modules/@deno/linux-arm64-glibc/deno"
if [ ! -x "$arm_deno" ]; then
  mkdir -p "$arm_tools"
  (cd "$arm_tools" && npm install --silent --no-save --no-package-lock --force --prefix . \
    "@deno/linux-arm64-glibc@$DENO_VERSION") >/dev/null 2>&1
fi
if [ ! -x "$arm_deno" ]; then
  fail "npm install @deno/linux-arm64-glibc@$DENO_VERSION"
  finish
fi
# A deno on PATH that is the arm64 binary under qemu, with the arm64 C library.
mkdir -p "$work/arm-bin"
cat >"$work/arm-bin/deno" <<EOF
#!/bin/sh
exec /usr/bin/qemu-aarch64-static -L /usr/aarch64-linux-gnu "$arm_deno" "\$@"
EOF
chmod +x "$work/arm-bin/deno"
rm "$work/bin/deno"
ln -s "$work/arm-bin/deno" "$work/bin/deno"
if ! user "$work/app" deno --version >"$work/arm.log" 2>&1 || ! grep -q aarch64 "$work/arm.log"; then
  fail "Deno's arm64 binary does not run under qemu" "$work/arm.log"
  finish
fi
# The cache deno add filled is the same for every architecture: run from it, offline.
t0=$(date +%s)
if user "$work/app" deno run --cached-only --allow-ffi main.ts >"$work/arm-run.log" 2>&1 &&
  expect_handle "$work/arm-run.log" linux-aarch64; then
  pass "aarch64 (qemu, $(($(date +%s) - t0)) s): create, clone, describe, release with only --allow-ffi"
else
  fail "aarch64 under qemu" "$work/arm-run.log"
fi

finish
