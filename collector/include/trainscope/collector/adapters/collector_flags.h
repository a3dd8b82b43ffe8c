// The command line of trainscope-collector: its flags (declared once, so
// `trainscope-collector --help` lists every one with its default), their
// checks, and the CollectorServerOptions they make. Parsed with trainscope's
// one flag parser (trainscope/base/arg_parser.h), which accepts what the
// collector's Abseil flags did: `--data-dir` or `--data_dir`, `--flag=value`
// or `--flag value`, `--fsync=false` or `--nofsync`, `-flag`, and `--for`
// (also `--for_steps`, its Abseil name).
//
// Usage:
//   absl::StatusOr<CollectorCommandLine> line = ParseCollectorCommandLine(argc, argv);
//   if (!line.ok()) { print line.status().message(); exit 2; }
//   if (line->help) { print CollectorUsage(); exit 0; }
//   ... CollectorServer::Start(line->server) ...
//
// Threading: pure functions (ParseCollectorCommandLine reads the --rules file).
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_COLLECTOR_FLAGS_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_COLLECTOR_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "trainscope/collector/adapters/collector_server.h"
#include "trainscope/collector/store/stored_jobs.h"
#include "trainscope/tier/tier_role.h"

namespace trainscope::collector {

struct CollectorCommandLine {
  bool help = false;                 // --help: print CollectorUsage()
  bool version = false;              // --version
  bool print_default_rules = false;  // only the flags' values were checked
  CollectorServerOptions server;
  RetentionPolicy retention;   // --retain-days, --retain-gb
  std::string port_file;       // --port-file; empty: none
  std::string metrics_host;    // --metrics-host, for the port file's metrics line
  tier::TierRoleOptions tier;  // --publish, --upstream, --nats-*: the collector tier
};

// Errors name the flag and say what was expected.
absl::StatusOr<CollectorCommandLine> ParseCollectorCommandLine(int argc, const char* const* argv);

// The --help text: what the collector does, then every flag with its default.
std::string CollectorUsage();

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_COLLECTOR_FLAGS_H_
