#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the release suite
# (unit, integration with real processes), the agent's lock-free recording
# path again under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh

echo "== release suite"
ctest --preset release -j "$(nproc)" --timeout 600

echo "== agent under ThreadSanitizer"
[ -f build-tsan/build.ninja ] || cmake --preset tsan >/dev/null
cmake --build --preset tsan --target agent_tests -j "$(nproc)"
ctest --preset tsan -R '^(SpscRingTest|AgentTest|StringTableTest|BatchEncoderTest|ClockPerturbationTest|AgentClockPerturbationTest)\.' --timeout 600

echo "== PyTorch plugin and example jobs (pytest, Debian's /usr/bin/python3)"
TRAINSCOPE_BUILD_DIR="$PWD/build" /usr/bin/python3 -m pytest tests/python -q -m "not slow" -p no:cacheprovider

echo "== scenario suite: real faulty jobs and the alerts they raise (pytest)"
# Its own run: both suites' tests import helpers from a module named conftest.
TRAINSCOPE_BUILD_DIR="$PWD/build" /usr/bin/python3 -m pytest tests/scenarios -q -m "not slow" -p no:cacheprovider
