#include "trainscope/proto/protocol_version.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::protocol {
namespace {

std::string Describe(VersionRange range) {
  if (range.min == range.max) return absl::StrCat("protocol version ", range.max);
  return absl::StrCat("protocol versions ", range.min, " to ", range.max);
}

}  // namespace

VersionRange OwnVersionRange() { return {kMinProtocolVersion, kProtocolVersion}; }

VersionRange AgentVersionRange(const v1::Hello& hello) {
  const uint32_t max = hello.protocol_version();
  const uint32_t min = hello.min_protocol_version() == 0 ? max : hello.min_protocol_version();
  return {min, max};
}

absl::StatusOr<uint32_t> NegotiateProtocolVersion(VersionRange agent, VersionRange collector,
                                                  absl::string_view agent_version) {
  const std::string agent_name = agent_version.empty()
                                     ? std::string("the agent")
                                     : absl::StrCat("the agent (trainscope ", agent_version, ")");
  const std::string both =
      absl::StrCat(agent_name, " speaks ", Describe(agent), ", this collector (trainscope ",
                   kTrainscopeVersion, ") speaks ", Describe(collector));
  if (agent.max == 0 || agent.min > agent.max) {
    return absl::FailedPreconditionError(absl::StrCat(
        "hello.protocol_version: ", agent.max, " with hello.min_protocol_version ", agent.min,
        " is not a range of versions; expected 1 <= min_protocol_version <= "
        "protocol_version (this collector speaks ",
        Describe(collector), ")"));
  }
  const uint32_t low = std::max(agent.min, collector.min);
  const uint32_t high = std::min(agent.max, collector.max);
  if (low > high) {
    const char* upgrade = agent.max < collector.min ? "upgrade the agent (the trainscope plugin "
                                                      "or library the job loads)"
                                                    : "upgrade the collector";
    return absl::FailedPreconditionError(
        absl::StrCat("hello.protocol_version: ", both, "; no version in common: ", upgrade));
  }
  return high;
}

absl::StatusOr<uint32_t> CheckAckedProtocolVersion(uint32_t acked) {
  if (acked == 0) return kProtocolVersion;
  if (acked < kMinProtocolVersion || acked > kProtocolVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("HelloAck.protocol_version: the collector chose protocol version ", acked,
                     ", which this agent (trainscope ", kTrainscopeVersion, ") does not speak (",
                     Describe(OwnVersionRange()), ")"));
  }
  return acked;
}

}  // namespace trainscope::protocol
