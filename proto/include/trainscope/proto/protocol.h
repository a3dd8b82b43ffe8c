// Constants of the wire protocol that both ends must agree on.
#ifndef TRAINSCOPE_PROTO_PROTOCOL_H_
#define TRAINSCOPE_PROTO_PROTOCOL_H_

#include <cstdint>

namespace trainscope {

// Sent in Hello.protocol_version; the collector refuses any other value.
inline constexpr uint32_t kProtocolVersion = 1;

// Largest gRPC message either end accepts. An agent sizes its batches well
// below it; a larger message is refused by gRPC before it is decoded.
inline constexpr int kMaxMessageBytes = 16 << 20;

// Version of the trainscope binaries, reported in Hello and --version.
inline constexpr char kTrainscopeVersion[] = "0.1.0";

}  // namespace trainscope

#endif  // TRAINSCOPE_PROTO_PROTOCOL_H_
