// Constants of the wire protocol that both ends must agree on.
#ifndef TRAINSCOPE_PROTO_PROTOCOL_H_
#define TRAINSCOPE_PROTO_PROTOCOL_H_

#include <cstdint>

namespace trainscope {

// The newest protocol version this build speaks (Hello.protocol_version),
// and the oldest it still speaks (Hello.min_protocol_version): an agent and
// a collector use the highest version both speak (protocol_version.h). Raise
// kProtocolVersion with each wire change; raise kMinProtocolVersion only when
// the code for an old version is removed.
//  1: the Hello carries the job's token or secret in clear (Hello.job_token).
//  2: membership by challenge: the collector answers the Hello with a
//     MembershipChallenge, the agent with a MembershipProof; no secret is
//     sent (docs/security.md).
inline constexpr uint32_t kProtocolVersion = 2;
inline constexpr uint32_t kMinProtocolVersion = 1;
// The first version that proves membership by challenge.
inline constexpr uint32_t kMembershipChallengeVersion = 2;

// Largest gRPC message either end accepts. An agent sizes its batches well
// below it; a larger message is refused by gRPC before it is decoded.
inline constexpr int kMaxMessageBytes = 16 << 20;

// Version of the trainscope binaries, reported in Hello and --version.
inline constexpr char kTrainscopeVersion[] = "0.1.0";

}  // namespace trainscope

#endif  // TRAINSCOPE_PROTO_PROTOCOL_H_
