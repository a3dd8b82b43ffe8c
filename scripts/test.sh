#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the release suite
# (unit, integration with real processes), the agent's lock-free recording
# path again under ThreadSanitizer; in CI (CI=true) also clang's
# -Wthread-safety over the C++ libraries (the thread-safety preset); the
# plugin's tests again with a pip PyTorch 2.11 in a venv.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh

echo "== release suite"
ctest --preset release -j "$(nproc)" --timeout 600

if [ "${CI:-}" = "true" ]; then
  # Compile only: clang checks every ABSL_GUARDED_BY against the locks held
  # (base::Mutex, the project's one mutex type) in the libraries, the viewer's
  # models and sources, and the test binaries whose fakes lock (the
  # preset's target list; viewer_tests and the widgets not yet); any
  # thread-safety warning is an error (-Werror=thread-safety) and fails CI.
  echo "== clang -Wthread-safety (the libraries, the viewer models and sources, the tests with locking fakes)"
  # Configured every time: a build-tsa/ from before the preset built the
  # viewer and tests keeps its old cache otherwise.
  cmake --preset thread-safety >/dev/null
  cmake --build --preset thread-safety -j "$(nproc)"

  # The decoders of untrusted bytes (the log's segment frames, agents'
  # EventBatch) under libFuzzer and AddressSanitizer, a bounded time each
  # from an empty corpus: a crash, leak or timeout fails the run and leaves
  # its input in build-fuzz/findings/.
  echo "== fuzz targets, ${TRAINSCOPE_FUZZ_SECONDS:-30} s each"
  [ -f build-fuzz/build.ninja ] || cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$(nproc)"
  mkdir -p build-fuzz/findings
  for fuzzer in segment_frame_fuzzer event_batch_fuzzer; do
    corpus="$(mktemp -d)"
    status=0
    build-fuzz/bin/"$fuzzer" -max_total_time="${TRAINSCOPE_FUZZ_SECONDS:-30}" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/findings/"$fuzzer"- \
      "$corpus" > build-fuzz/findings/"$fuzzer".log 2>&1 || status=$?
    rm -rf "$corpus"
    grep -E "^(Done|==[0-9]+==ERROR|SUMMARY)" build-fuzz/findings/"$fuzzer".log || true
    if [ "$status" -ne 0 ]; then
      tail -40 build-fuzz/findings/"$fuzzer".log >&2
      echo "fuzz: $fuzzer failed (exit $status); its input is in build-fuzz/findings/" >&2
      exit 1
    fi
  done
fi

echo "== agent under ThreadSanitizer"
[ -f build-tsan/build.ninja ] || cmake --preset tsan >/dev/null
cmake --build --preset tsan --target agent_tests -j "$(nproc)"
ctest --preset tsan -R '^(SpscRingTest|AgentTest|StringTableTest|BatchEncoderTest|ClockPerturbationTest|AgentClockPerturbationTest|LossReportInboxTest|RingDrainerTest|RawOperatorTest|BatchQueueTest)\.' --timeout 600

echo "== PyTorch plugin and example jobs (pytest, Debian's /usr/bin/python3)"
TRAINSCOPE_BUILD_DIR="$PWD/build" /usr/bin/python3 -m pytest tests/python -q -m "not slow" -p no:cacheprovider

echo "== PyTorch plugin against a pip PyTorch 2.11 (a CUDA wheel, run on the CPU; scripts/torch_venv.sh)"
# The venv is reused when present (~/.cache/trainscope); `import trainscope`
# builds the extension for its torch into build/torch-ext on first use. The
# bundle (scripts/bundle_agent.sh) is what bench/gpu/run.sh --cpu runs from.
VENV_PYTHON="$(scripts/torch_venv.sh)"
scripts/bundle_agent.sh
TRAINSCOPE_CACHE_DIR="$PWD/build/torch-ext" TRAINSCOPE_BUILD_DIR="$PWD/build" "$VENV_PYTHON" -m pytest \
  tests/python/test_any_torch.py tests/python/test_plugin.py tests/python/test_ddp_job.py \
  tests/python/test_halt_job.py tests/python/test_run.py tests/python/test_gpu_bench_cpu.py \
  -q -m "not slow" -p no:cacheprovider

echo "== scenario suite: real faulty jobs and the alerts they raise (pytest)"
# Its own run: both suites' tests import helpers from a module named conftest.
TRAINSCOPE_BUILD_DIR="$PWD/build" /usr/bin/python3 -m pytest tests/scenarios -q -m "not slow" -p no:cacheprovider
