// Whether an address a server binds is reachable only from this machine:
// the rule behind the collector's refusal to serve the network without
// encryption (and without gating reads) unless --insecure says so.
//
// Loopback: 127.0.0.0/8, ::1, "localhost", the "lo" interface; gRPC's
// "unix:" targets and ZeroMQ's ipc:// and inproc:// (protected by the file
// system or the process). Anything else (0.0.0.0, *, a host name, an
// interface) counts as the network: a name is not resolved, since what it
// resolves to may change after the check.
//
// Usage:
//   if (!IsLoopbackGrpcAddress("0.0.0.0:7070")) ...   // false
//   if (!IsLoopbackZmqEndpoint("tcp://127.0.0.1:*")) ...  // true
//
// Threading: pure functions.
#ifndef TRAINSCOPE_SECURITY_LISTEN_EXPOSURE_H_
#define TRAINSCOPE_SECURITY_LISTEN_EXPOSURE_H_

#include "absl/strings/string_view.h"

namespace trainscope::security {

// A bare host: "127.0.0.1", "[::1]", "::1", "localhost", "lo".
bool IsLoopbackHost(absl::string_view host);

// A gRPC listen address: "HOST:PORT", "[v6]:PORT", "unix:/path".
bool IsLoopbackGrpcAddress(absl::string_view address);

// A ZeroMQ endpoint: "tcp://HOST:PORT", "tcp://[v6]:*", "ipc://...", "inproc://...".
bool IsLoopbackZmqEndpoint(absl::string_view endpoint);

}  // namespace trainscope::security

#endif  // TRAINSCOPE_SECURITY_LISTEN_EXPOSURE_H_
