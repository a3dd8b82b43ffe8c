// Where the collector is and how long to wait for it: the flags every
// subcommand that talks to the collector shares, resolved flag > environment
// variable > default, and the collector's default ports (one copy for the
// CLI and the viewer).
//
// Usage:
//   ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);
//   ASSIGN_OR_RETURN(ConnectionOptions conn, ConnectionOptions::Resolve(args, ctx.env));
//   std::string snapshot = ConnectionOptions::SnapshotNextToFeed("tcp://node-1:7071");
//
// Threading: a plain value.
#ifndef TRAINSCOPE_CLIENT_CONNECTION_OPTIONS_H_
#define TRAINSCOPE_CLIENT_CONNECTION_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/client/client_security.h"
#include "trainscope/client/environment.h"

namespace trainscope::client {

inline constexpr int kDefaultCollectorPort = 7070;
inline constexpr char kDefaultCollector[] = "127.0.0.1:7070";  // port kDefaultCollectorPort
inline constexpr int kDefaultFeedPort = 7071;
inline constexpr int kDefaultSnapshotPort = 7072;
inline constexpr int kDefaultTimeoutSeconds = 10;

struct ConnectionOptions {
  std::string collector;  // gRPC target, HOST:PORT
  std::string feed;       // ZeroMQ endpoint of the live feed (PUB)
  std::string snapshot;   // ZeroMQ endpoint of the snapshot server (REP)
  absl::Duration timeout = absl::Seconds(kDefaultTimeoutSeconds);
  bool json = false;
  ClientSecurity security;  // TLS, read token, CURVE (client_security.h)

  // Adds --collector, --timeout, --json, the security flags (ClientSecurity)
  // and, with `with_feed`, --feed and --snapshot.
  static void AddFlags(base::ArgParser* parser, bool with_feed);
  // Without --feed/TRAINSCOPE_FEED the feed is tcp://<collector host>:7071
  // (and the snapshot server :7072), so pointing --collector at another host
  // is enough for the default ports.
  static absl::StatusOr<ConnectionOptions> Resolve(const base::ParsedArgs& args, const EnvLookup& env);

  // The snapshot server next to the feed endpoint `feed`: its host, port
  // kDefaultSnapshotPort ("tcp://node-1:7071" -> "tcp://node-1:7072"); an
  // endpoint without a port is returned as it is.
  static std::string SnapshotNextToFeed(const std::string& feed);
  // The Commands service next to the feed endpoint `feed`: HOST:7070 for
  // "tcp://HOST:PORT"; empty when the endpoint names no host and port.
  static std::string CollectorNextToFeed(const std::string& feed);
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_CONNECTION_OPTIONS_H_
