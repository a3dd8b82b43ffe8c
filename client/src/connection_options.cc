#include "trainscope/client/connection_options.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace trainscope::client {
namespace {

// "host:port" -> "host"; "[::1]:7070" -> "[::1]"; "host" -> "host".
std::string HostOf(const std::string& target) {
  if (!target.empty() && target.front() == '[') {
    size_t close = target.find(']');
    return close == std::string::npos ? target : target.substr(0, close + 1);
  }
  size_t colon = target.rfind(':');
  return colon == std::string::npos ? target : target.substr(0, colon);
}

std::string FlagOrEnv(const base::ParsedArgs& args, const EnvLookup& env, const char* flag,
                      const char* variable, std::string fallback) {
  if (args.Has(flag)) return *args.Value(flag);
  if (std::optional<std::string> value = env(variable); value.has_value()) return *value;
  return fallback;
}

}  // namespace

void ConnectionOptions::AddFlags(base::ArgParser* parser, bool with_feed) {
  parser->AddFlag("collector", "HOST:PORT",
                  "the collector's gRPC address (env TRAINSCOPE_COLLECTOR)", kDefaultCollector);
  if (with_feed) {
    parser->AddFlag("feed", "ENDPOINT",
                    "the live feed, a ZeroMQ endpoint (env TRAINSCOPE_FEED; default "
                    "tcp://<collector host>:7071)");
    parser->AddFlag("snapshot", "ENDPOINT",
                    "the snapshot server, a ZeroMQ endpoint (env TRAINSCOPE_SNAPSHOT; default "
                    "tcp://<collector host>:7072)");
  }
  parser->AddFlag("timeout", "SECONDS", "deadline for each request to the collector",
                  absl::StrCat(kDefaultTimeoutSeconds));
  parser->AddBoolFlag("json", "print machine-readable JSON instead of text");
  ClientSecurity::AddFlags(parser);
}

absl::StatusOr<ConnectionOptions> ConnectionOptions::Resolve(const base::ParsedArgs& args,
                                                             const EnvLookup& env) {
  ConnectionOptions options;
  options.collector = FlagOrEnv(args, env, "collector", "TRAINSCOPE_COLLECTOR", kDefaultCollector);
  if (options.collector.empty()) {
    return absl::InvalidArgumentError("--collector expects HOST:PORT, got an empty value");
  }
  const std::string host = HostOf(options.collector);
  options.feed = FlagOrEnv(args, env, "feed", "TRAINSCOPE_FEED",
                           absl::StrCat("tcp://", host, ":", kDefaultFeedPort));
  options.snapshot = FlagOrEnv(args, env, "snapshot", "TRAINSCOPE_SNAPSHOT",
                               absl::StrCat("tcp://", host, ":", kDefaultSnapshotPort));
  absl::StatusOr<std::optional<double>> timeout = args.Double("timeout", 0.001, 86400);
  if (!timeout.ok()) return timeout.status();
  if (timeout->has_value()) options.timeout = absl::Seconds(**timeout);
  options.json = args.Bool("json");
  absl::StatusOr<ClientSecurity> security = ClientSecurity::Resolve(args, env);
  if (!security.ok()) return security.status();
  options.security = std::move(*security);
  return options;
}

std::string ConnectionOptions::SnapshotNextToFeed(const std::string& feed) {
  const size_t colon = feed.rfind(':');
  if (colon == std::string::npos) return feed;
  return absl::StrCat(feed.substr(0, colon), ":", kDefaultSnapshotPort);
}

std::string ConnectionOptions::CollectorNextToFeed(const std::string& feed) {
  const size_t scheme = feed.find("://");
  const size_t colon = feed.rfind(':');
  if (scheme == std::string::npos || colon == std::string::npos || colon <= scheme + 3) return "";
  return absl::StrCat(feed.substr(scheme + 3, colon - scheme - 3), ":", kDefaultCollectorPort);
}

}  // namespace trainscope::client
