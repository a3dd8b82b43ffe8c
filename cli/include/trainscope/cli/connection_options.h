// Where the collector is and how long to wait for it: the flags every
// subcommand that talks to the collector shares, resolved flag > environment
// variable > default.
//
// Usage:
//   ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);
//   ASSIGN_OR_RETURN(ConnectionOptions conn, ConnectionOptions::Resolve(args, ctx.env));
//
// Threading: a plain value.
#ifndef TRAINSCOPE_CLI_CONNECTION_OPTIONS_H_
#define TRAINSCOPE_CLI_CONNECTION_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/cli/arg_parser.h"
#include "trainscope/cli/command_context.h"

namespace trainscope::cli {

inline constexpr char kDefaultCollector[] = "127.0.0.1:7070";
inline constexpr int kDefaultFeedPort = 7071;
inline constexpr int kDefaultSnapshotPort = 7072;
inline constexpr int kDefaultTimeoutSeconds = 10;

struct ConnectionOptions {
  std::string collector;  // gRPC target, HOST:PORT
  std::string feed;       // ZeroMQ endpoint of the live feed (PUB)
  std::string snapshot;   // ZeroMQ endpoint of the snapshot server (REP)
  absl::Duration timeout = absl::Seconds(kDefaultTimeoutSeconds);
  bool json = false;

  // Adds --collector, --timeout, --json and, with `with_feed`, --feed and --snapshot.
  static void AddFlags(ArgParser* parser, bool with_feed);
  // Without --feed/TRAINSCOPE_FEED the feed is tcp://<collector host>:7071
  // (and the snapshot server :7072), so pointing --collector at another host
  // is enough for the default ports.
  static absl::StatusOr<ConnectionOptions> Resolve(const ParsedArgs& args, const EnvLookup& env);
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_CONNECTION_OPTIONS_H_
