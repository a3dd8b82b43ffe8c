// Protocol version negotiation between an agent and a collector: each end
// speaks a range of versions, the Hello carries the agent's, the collector
// picks the highest version both speak and sends it back in the HelloAck.
// Only when the ranges do not meet is the stream refused, with a message
// naming both ends' versions and which one to upgrade.
//
// Usage (the collector, on a Hello):
//   absl::StatusOr<uint32_t> version = NegotiateProtocolVersion(
//       AgentVersionRange(hello), CollectorVersionRange(), hello.agent_version());
//   if (!version.ok()) refuse the stream with version.status();
//   else ack.set_protocol_version(*version);
//
// A Hello of an agent from before negotiation carries only
// protocol_version (min_protocol_version 0): it speaks that one version.
// The agent checks the HelloAck's version against its own range; 0 there is
// a collector from before negotiation, which accepted the agent's version.
//
// Threading: pure functions.
#ifndef TRAINSCOPE_PROTO_PROTOCOL_VERSION_H_
#define TRAINSCOPE_PROTO_PROTOCOL_VERSION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::protocol {

struct VersionRange {
  uint32_t min = 0;
  uint32_t max = 0;
};

// The versions this build speaks: [kMinProtocolVersion, kProtocolVersion].
VersionRange OwnVersionRange();

// The agent's range as its Hello states it.
VersionRange AgentVersionRange(const v1::Hello& hello);

// The highest version in both ranges. FAILED_PRECONDITION naming
// hello.protocol_version, both ranges, both trainscope versions and which
// end to upgrade when they do not meet, or when the agent's range is empty.
absl::StatusOr<uint32_t> NegotiateProtocolVersion(VersionRange agent, VersionRange collector,
                                                  absl::string_view agent_version);

// The agent's check of HelloAck.protocol_version (0: a collector from before
// negotiation, taken as the agent's own kProtocolVersion).
absl::StatusOr<uint32_t> CheckAckedProtocolVersion(uint32_t acked);

}  // namespace trainscope::protocol

#endif  // TRAINSCOPE_PROTO_PROTOCOL_VERSION_H_
