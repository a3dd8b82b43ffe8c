#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the release suite
# (unit, integration with real processes) and the agent's lock-free recording
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
ctest --preset tsan -R '^(SpscRingTest|AgentTest|StringTableTest|BatchEncoderTest)\.' --timeout 600
