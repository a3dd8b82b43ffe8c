#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the release suite
# (unit, integration with real processes), the agent's lock-free recording
# path again under ThreadSanitizer; in CI (CI=true) also clang's
# -Wthread-safety over the C++ libraries (the thread-safety preset).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh

echo "== release suite"
ctest --preset release -j "$(nproc)" --timeout 600

if [ "${CI:-}" = "true" ]; then
  # Compile only: clang checks every ABSL_GUARDED_BY against the locks held
  # (absl::Mutex, and base::Mutex in the agent and plugin); nothing runs.
  echo "== clang -Wthread-safety (the C++ libraries, without the viewer)"
  [ -f build-tsa/build.ninja ] || cmake --preset thread-safety >/dev/null
  cmake --build --preset thread-safety -j "$(nproc)"
fi

echo "== agent under ThreadSanitizer"
[ -f build-tsan/build.ninja ] || cmake --preset tsan >/dev/null
cmake --build --preset tsan --target agent_tests -j "$(nproc)"
ctest --preset tsan -R '^(SpscRingTest|AgentTest|StringTableTest|BatchEncoderTest|ClockPerturbationTest|AgentClockPerturbationTest)\.' --timeout 600

echo "== PyTorch plugin and example jobs (pytest, Debian's /usr/bin/python3)"
TRAINSCOPE_BUILD_DIR="$PWD/build" /usr/bin/python3 -m pytest tests/python -q -m "not slow" -p no:cacheprovider

echo "== scenario suite: real faulty jobs and the alerts they raise (pytest)"
# Its own run: both suites' tests import helpers from a module named conftest.
TRAINSCOPE_BUILD_DIR="$PWD/build" /usr/bin/python3 -m pytest tests/scenarios -q -m "not slow" -p no:cacheprovider
