#!/usr/bin/env bash
# Reliability (docs/reliability.md says what each check proves):
#   - the C tests built with gcc -fsanitize=address,undefined
#     -fno-sanitize-recover=all (build-asan/), leak detection on;
#   - the C tests under valgrind memcheck (build-memcheck/): no error, and no
#     leak (definitely, indirectly or possibly lost);
#   - test_threads built with clang -fsanitize=thread (build-tsan/): 8 threads
#     x 1M clone/release pairs on one shared handle, exact final counts, the
#     keep-alive run exactly once;
#   - the libFuzzer target native/fuzz/fuzz_create.c (build-fuzz/): every
#     saved regression input once, then fuzzing for a bounded time from the
#     saved corpus;
#   - the libFuzzer target native/fuzz/fuzz_channel.c (build-fuzz/): a peer's
#     datagrams and attached fds through gpures_channel_receive, fuzzed for
#     the same bound from native/fuzz/corpus_channel;
#   - the libFuzzer target native/fuzz/fuzz_session.c (build-fuzz/): a hostile
#     peer of a receiving session and of a sending one with pooled frames in
#     flight; its saved regressions once, then fuzzed for the same bound from
#     native/fuzz/corpus_session;
#   - the libFuzzer target native/fuzz/fuzz_demux.c (build-fuzz/): a file's
#     bytes through gpures_demuxer_* and the decoders of its video tracks,
#     from native/fuzz/corpus_demux (1 million executions in the full mode);
#   - in the full mode only, bench/frames_soak.ts: 60 s of 1000 frames/s from
#     a FramePool to 4 consumer processes; no fd, mapping or RSS growth, every
#     frame intact; then 60 s through a FrameFanout to 8 consumers under the
#     three policies.
# One check per test executable and tool; the last line is "N passed, N failed"
# and the exit status is non-zero when anything failed. Installs what it needs
# with apt-get (only what is missing). Logs go to build-reliability/.
#
# GPURES_RELIABILITY_FULL=1 (deno task reliability) runs the long versions:
# fuzz_create and fuzz_channel for 10 million executions instead of 30
# seconds, fuzz_session for 1 million (it runs about 15 times slower),
# test_threads under valgrind with 50000 instead of 2000 iterations per
# thread, and the frame soak. The TSan run is 8 x 1M in both (about 11 s on 2
# cores).
set -uo pipefail
. "$(dirname "$0")/lib.sh" # cd to the root; root, sudo, step, pass, fail, install_missing
full=${GPURES_RELIABILITY_FULL:-0}
jobs=${GPURES_JOBS:-2}
logs="$root/build-reliability"
mkdir -p "$logs"
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started)) s"; }

step "install packages"
if ! install_missing "$logs/apt.log" cmake make gcc libc6-dev clang libclang-rt-14-dev valgrind; then
  echo "0 passed, 1 failed"
  exit 1
fi
echo "gcc $(gcc -dumpversion), $(clang --version | head -n1), $(valgrind --version)"

# build NAME DIR CC CFLAGS [TARGET...]: configures and builds; one check.
build() {
  local name=$1 dir=$2 cc=$3 cflags=$4
  shift 4
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  if CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$cflags" \
    -DGPURES_BUILD_TEST_HELPERS=OFF -DGPURES_BUILD_BENCH=OFF "${extra_cmake[@]}" \
    >"$logs/$name-build.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" "${targets[@]}" >>"$logs/$name-build.log" 2>&1; then
    pass "$name: build ($(elapsed))"
    return 0
  fi
  fail "$name: build" "$logs/$name-build.log"
  return 1
}

# The C test executables ctest knows, by name (they live in <dir>/native/tests/).
c_tests() { ctest --test-dir "$1" -N 2>/dev/null | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p'; }

# fuzz_run NAME LOG ARTIFACTS CORPUS WHAT LIMIT...: fuzzes build-fuzz/NAME from CORPUS for LIMIT
# (libFuzzer flags; WHAT says it in words), crash inputs into ARTIFACTS/; one check, whose pass
# line has the executions and coverage libFuzzer reports.
fuzz_run() {
  local name=$1 log=$2 artifacts=$3 corpus=$4 what=$5 execs cov
  shift 5
  if timeout 3600 "build-fuzz/$name" "$@" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1; then
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log")
    cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+).*/\1 edges, \2 features/p')
    pass "fuzz: $name for $what: ${execs:-?} executions, ${cov:-?}, no crash"
  else
    fail "fuzz: $name for $what (exit $?; see $artifacts/)" "$log"
  fi
}

# The long mode's Deno checks: they need deno and the library they load (build/libgpures.so).
full_deno() { [ "$full" = 1 ] && command -v deno >/dev/null && [ -f build/libgpures.so ]; }

# ---------------------------------------------------------------- ASan+UBSan
step "C tests under gcc ASan+UBSan (build-asan)"
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
extra_cmake=(-DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined")
if build asan build-asan gcc "$san"; then
  for t in $(c_tests build-asan); do
    log="$logs/asan-$t.log"
    if ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      timeout 120 "build-asan/native/tests/$t" >"$log" 2>&1; then
      pass "asan+ubsan: $t"
    else
      fail "asan+ubsan: $t (exit $?)" "$log"
    fi
  done
fi

# ---------------------------------------------------------------- valgrind
step "C tests under valgrind memcheck (build-memcheck)"
extra_cmake=()
iterations=2000
[ "$full" = 1 ] && iterations=50000
if build memcheck build-memcheck gcc "-O1 -g"; then
  for t in $(c_tests build-memcheck); do
    log="$logs/valgrind-$t.log"
    # --fair-sched=yes: valgrind runs one thread at a time, and by default a thread that spins on
    # a lock (sched_yield) can keep the holder from ever running again.
    if GPURES_TEST_ITERATIONS=$iterations timeout 300 valgrind -q --fair-sched=yes --error-exitcode=99 \
      --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
      --show-leak-kinds=definite,indirect,possible --track-fds=no \
      "build-memcheck/native/tests/$t" >"$log" 2>&1; then
      pass "valgrind: $t"
    else
      rc=$?
      # valgrind 3.19 cannot run AVX-512 code; FFmpeg's libjxl brings libhwy, which runs some at
      # load on CPUs that have it. That run proves nothing either way; the ASan run above covers it.
      lib=$(sed -nE 's/.*Illegal opcode.*|.*: [^ ]+ \(in (\/[^)]+)\).*/\1/p' "$log" | grep -m1 . || true)
      if [ "$rc" = 132 ] && grep -q "Illegal opcode" "$log" && [[ "$lib" != *gpures* ]]; then
        echo "skip valgrind: $t (valgrind cannot run an instruction of ${lib:-a system library} on this CPU)"
      else
        fail "valgrind: $t (exit $rc)" "$log"
      fi
    fi
  done
fi

# ---------------------------------------------------------------- TSan
step "test_threads under clang TSan (build-tsan): 8 threads x 1M clone/release"
if build tsan build-tsan clang "-fsanitize=thread -fno-omit-frame-pointer" test_threads; then
  log="$logs/tsan-test_threads.log"
  if GPURES_TEST_ITERATIONS=1000000 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    timeout 300 build-tsan/native/tests/test_threads >"$log" 2>&1; then
    pass "tsan: test_threads, 8 threads x 1000000 ($(elapsed))"
  else
    fail "tsan: test_threads (exit $?)" "$log"
  fi
fi

# ---------------------------------------------------------------- libFuzzer
step "libFuzzer: fuzz_create, fuzz_channel, fuzz_session and fuzz_demux (build-fuzz)"
extra_cmake=(-DGPURES_BUILD_FUZZ=ON -DGPURES_BUILD_TESTS=OFF)
if build fuzz build-fuzz clang "" fuzz_create fuzz_channel fuzz_session fuzz_demux; then
  # clang's runtime may leave llvm-symbolizer behind after a crash: output goes to files only.
  export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  log="$logs/fuzz-regressions.log"
  if timeout 120 build-fuzz/fuzz_create native/fuzz/regressions/* >"$log" 2>&1; then
    pass "fuzz: every saved regression input ($(ls native/fuzz/regressions | wc -l))"
  else
    fail "fuzz: saved regression inputs (exit $?)" "$log"
  fi
  # Fuzz from a copy of the saved corpus, so that the run never writes into the source tree.
  corpus=build-fuzz/corpus-run
  mkdir -p "$corpus" build-fuzz/artifacts
  cp -n native/fuzz/corpus/* native/fuzz/regressions/* "$corpus"/ 2>/dev/null
  if [ "$full" = 1 ]; then
    limit=(-runs=10000000)
    what="10000000 executions"
  else
    limit=(-max_total_time=30)
    what="30 s"
  fi
  fuzz_run fuzz_create "$logs/fuzz.log" build-fuzz/artifacts "$corpus" "$what" "${limit[@]}"
  # The channel receive path, from a copy of its own corpus, with the same bound.
  corpus=build-fuzz/corpus-channel-run
  mkdir -p "$corpus" build-fuzz/artifacts-channel
  cp -n native/fuzz/corpus_channel/* "$corpus"/ 2>/dev/null
  fuzz_run fuzz_channel "$logs/fuzz-channel.log" build-fuzz/artifacts-channel "$corpus" "$what" \
    "${limit[@]}"
  # Frame sessions: the saved regressions once, then fuzzing from a copy of the corpus, same bound.
  log="$logs/fuzz-session-regressions.log"
  if timeout 120 build-fuzz/fuzz_session native/fuzz/regressions_session/* >"$log" 2>&1; then
    pass "fuzz: fuzz_session's saved regression inputs ($(ls native/fuzz/regressions_session | wc -l))"
  else
    fail "fuzz: fuzz_session's saved regression inputs (exit $?)" "$log"
  fi
  # One input is a conversation that waits on the service thread (about 2000 per second, not
  # 30000): the long run is 1 million executions (about 9 minutes), the short one the same 30 s.
  session_limit=("${limit[@]}")
  session_what=$what
  if [ "$full" = 1 ]; then
    session_limit=(-runs=1000000)
    session_what="1000000 executions"
  fi
  corpus=build-fuzz/corpus-session-run
  mkdir -p "$corpus" build-fuzz/artifacts-session
  cp -n native/fuzz/corpus_session/* native/fuzz/regressions_session/* "$corpus"/ 2>/dev/null
  fuzz_run fuzz_session "$logs/fuzz-session.log" build-fuzz/artifacts-session "$corpus" \
    "$session_what" "${session_limit[@]}"
  # A file's bytes through a demuxer and its tracks' decoders (FFmpeg opened at run time; skipped
  # without it). One input opens, probes and decodes: about 140 per second here, so the long run's
  # 1 million executions take about two hours; the short one the same 30 s.
  if ls /usr/lib/*/libavformat.so.* >/dev/null 2>&1; then
    demux_limit=("${limit[@]}")
    demux_what=$what
    if [ "$full" = 1 ]; then
      demux_limit=(-runs=1000000)
      demux_what="1000000 executions"
    fi
    corpus=build-fuzz/corpus-demux-run
    mkdir -p "$corpus" build-fuzz/artifacts-demux
    cp -n native/fuzz/corpus_demux/* "$corpus"/ 2>/dev/null
    fuzz_run fuzz_demux "$logs/fuzz-demux.log" build-fuzz/artifacts-demux "$corpus" "$demux_what" \
      -max_len=8192 "${demux_limit[@]}"
  else
    echo "skipped: fuzz_demux needs FFmpeg's libavformat (apt install libavformat59)"
  fi
fi

# ---------------------------------------------------------- Worker lifetimes
# Every isolate's native resources come back when its thread ends: in the long
# run, 5000 Worker lifetimes on a nearly full table of event queues (CI runs 12).
if full_deno; then
  step "Worker lifetimes: 5000 on a nearly full event-queue table"
  log="$logs/worker-lifetimes.log"
  if GPURES_WORKER_LIFETIMES=5000 timeout 3600 deno test --allow-ffi --allow-read --allow-env \
    --allow-run tests/hostile/workers_test.ts >"$log" 2>&1; then
    pass "workers: 5000 lifetimes, then the main isolate still works ($(elapsed))"
  else
    fail "workers: 5000 lifetimes (exit $?)" "$log"
  fi
fi

# ---------------------------------------------------------------- frame soak
# A minute of pooled frames to consumer processes: nothing grows, every frame intact.
if full_deno; then
  step "frame soak: 60 s, 1000 frames/s, 4 consumer processes"
  log="$logs/frames-soak.log"
  if timeout 300 deno run --allow-all --v8-flags=--expose-gc bench/frames_soak.ts --seconds 60 --fps 1000 --consumers 4 \
    >"$log" 2>&1; then
    pass "soak: $(grep -o '"frames":{[^}]*}' "$log" | head -n1), no growth ($(elapsed))"
  else
    fail "soak: frames_soak (exit $?)" "$log"
  fi
  step "fan-out soak: 60 s, 1000 frames/s, 8 consumer processes, block / dropOldest / latest"
  log="$logs/fanout-soak.log"
  if timeout 300 deno run --allow-all --v8-flags=--expose-gc bench/frames_soak.ts --seconds 60 --fps 1000 \
    --consumers 8 --slots 24 --fanout 1 >"$log" 2>&1; then
    pass "fan-out soak: $(grep -o '"frames":{[^}]*}' "$log" | head -n1), no growth ($(elapsed))"
  else
    fail "soak: frames_soak --fanout (exit $?)" "$log"
  fi
fi

echo
echo "reliability checks took $(elapsed); logs in build-reliability/"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
