#include "trainscope/collector/adapters/collector_flags.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/base/status_macros.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/security/job_secret_source.h"

namespace trainscope::collector {

namespace {

constexpr int64_t kIntMin = std::numeric_limits<int>::min();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr double kDoubleMax = std::numeric_limits<double>::max();

base::ArgParser MakeParser() {
  base::ArgParser parser(
      "trainscope-collector",
      absl::StrCat(
          "trainscope-collector ", kTrainscopeVersion,
          ": the collector of trainscope, the in-situ profiler for distributed training.\n"
          "Agents inside training processes stream their events here over gRPC; every batch is\n"
          "appended to the job's durable log before it is acknowledged. Viewers follow jobs live "
          "on\nthe ZeroMQ feed (snapshot + deltas); the trainscope CLI lists, halts and switches "
          "jobs.\n\n"
          "Flag names may be written with '-' or '_' (--data-dir or --data_dir)."));
  parser.AddFlag("listen", "HOST:PORT",
                 "HOST:PORT for agent streams and commands (gRPC); port 0 picks a free one. "
                 "Loopback by default: bind elsewhere only on a trusted network",
                 "127.0.0.1:7070");
  parser.AddFlag("feed", "ENDPOINT",
                 "ZeroMQ endpoint of the live feed (PUB); tcp://127.0.0.1:* picks a free port",
                 "tcp://127.0.0.1:7071");
  parser.AddFlag(
      "snapshot", "ENDPOINT",
      "ZeroMQ endpoint answering snapshot requests (REP); tcp://127.0.0.1:* picks a free port",
      "tcp://127.0.0.1:7072");
  parser.AddFlag("metrics-port", "PORT",
                 "serve Prometheus metrics (GET /metrics) on this port: per job and rank step "
                 "time, waits, FLOPS, memory, events, drops, alerts, and the collector's health; "
                 "0 picks a free port; default: off (-1)");
  parser.AddFlag("metrics-host", "HOST",
                 "the address the Prometheus endpoint binds (loopback unless told otherwise)",
                 "127.0.0.1");
  parser.AddFlag("data-dir", "DIR",
                 "directory of the durable job logs (<data-dir>/jobs/<job>) and the index",
                 "./trainscope-data");
  parser.AddBoolFlag("fsync",
                     "fdatasync each group commit before acknowledging (off only for "
                     "tests)",
                     /*default_value=*/true);
  parser.AddFlag("segment-mb", "MIB", "rotate a job's log segment past this many MiB (1 to 4096)",
                 "64");
  parser.AddFlag("max-message-bytes", "BYTES",
                 "largest message accepted from an agent (1024 to 1073741824); larger ones are "
                 "refused by gRPC",
                 absl::StrCat(kMaxMessageBytes));
  parser.AddFlag("probe-interval-ms", "MS",
                 "clock probe period per agent stream; 0 disables probes", "1000");
  parser.AddFlag("halt-step-margin", "STEPS",
                 "a halt stops every rank at the highest step any rank reported plus at least "
                 "this many steps, so ranks that lag behind reach the same boundary",
                 "2");
  parser.AddFlag("halt-lead-ms", "MS",
                 "... and at least as many steps as run in this time (from the ranks' recent "
                 "step times), so that a rank that reads the halt late has not passed the "
                 "boundary",
                 "1000");
  parser.AddFlag("lost-device-grace-s", "SECONDS",
                 "a rank whose stream closed without goodbye is raised as lost_device once a "
                 "peer is still connected this many seconds later (or reported "
                 "--lost-device-grace-steps past it); ranks that all end together (a job's end) "
                 "raise nothing",
                 "10");
  parser.AddFlag("lost-device-grace-steps", "STEPS",
                 "lost_device at once when a peer reports this many steps past a vanished "
                 "rank's last",
                 "3");
  parser.AddBoolFlag("analysis",
                     "align clocks and assemble steps live (steps, clocks and aligned operators "
                     "on the feed); false: only log and publish counters",
                     /*default_value=*/true);
  // Per-job analysis budgets (issue 21.2): what one job may hold in memory.
  parser.AddFlag("max-job-names", "N",
                 "distinct operator/group names a job's analysis keeps; past it new names read "
                 "as \"(name budget exceeded)\", counted in trainscope status; 0: no limit",
                 "200000");
  parser.AddFlag("max-job-name-mb", "MIB",
                 "MiB of name text a job's analysis keeps (same overflow as --max-job-names); "
                 "0: no limit",
                 "32");
  parser.AddFlag("max-stored-operators", "N",
                 "aligned operators a job keeps for Marey queries (about 100 bytes each); past "
                 "it the oldest steps' operators are evicted, counted in trainscope status",
                 "4000000");
  parser.AddFlag("release-finished-after-s", "SECONDS",
                 "free a finished job's operators this many seconds after it ended (steps, "
                 "clocks and alerts stay; `trainscope export` and the viewer read them from the "
                 "log after that, through --data-dir)",
                 "600");
  parser.AddFlag("rules", "FILE",
                 "alert thresholds, a protobuf text file (see --print-default-rules); unset "
                 "fields keep their defaults");
  parser.AddBoolFlag("print-default-rules",
                     "print the default rules file (every rule and threshold) and exit");
  parser.AddFlag("halt-when", "RULES",
                 "halt a job when any of these rules (comma-separated, e.g. straggler,slow_link) "
                 "holds for --for consecutive steps; a job's own policy (trainscope run "
                 "--halt-when) wins");
  parser.AddFlag("for", "STEPS",
                 "consecutive steps a --halt-when rule or --halt-below-efficiency must hold", "0");
  parser.AddAlias("for_steps", "for");  // its name as an Abseil flag
  parser.AddFlag("halt-below-efficiency", "FRACTION",
                 "halt a job whose efficiency (useful compute / step time) stays below this for "
                 "--for steps; 0: off",
                 "0");
  parser.AddFlag("port-file", "FILE",
                 "write 'agents=HOST:PORT', 'feed=ENDPOINT', 'snapshot=ENDPOINT' lines here "
                 "(atomically) once everything listens");
  // Retention (docs/collector.md). 30 days keeps a month of runs to compare
  // against; no size cap by default, because the right one depends on the disk
  // (and a full disk no longer stops a job: it resumes when space returns).
  parser.AddFlag("retain-days", "DAYS",
                 "remove a stored job (its <data-dir>/jobs/<job> and index rows) last written "
                 "more than this many days ago, at start and every hour; never a job with a "
                 "rank connected; 0: keep jobs forever",
                 "30");
  parser.AddFlag("retain-gb", "GIB",
                 "keep the stored jobs under this many GiB together: past it the oldest jobs "
                 "without a rank connected are removed, at start and every hour; 0: no size cap",
                 "0");
  parser.AddFlag("max-queued-mb", "MIB",
                 "bound on received batches not yet durable, over all streams (memory bound)",
                 "256");
  parser.AddFlag("memory-limit-mib", "MIB",
                 "process memory limit: batches are refused (counted per rank as refused) while "
                 "the collector's resident memory is over 80% of this, and freed memory is "
                 "returned over it; 0: no limit",
                 "0");
  // Transport security (docs/security.md).
  parser.AddFlag("tls-cert", "PEM", "TLS on the gRPC port: the collector's certificate (PEM)");
  parser.AddFlag("tls-key", "PEM", "TLS on the gRPC port: its private key (PEM)");
  parser.AddFlag("tls-client-ca", "PEM",
                 "mutual TLS: agents and clients must show a certificate this CA (PEM) signed");
  parser.AddFlag("curve-secret-key", "FILE",
                 "CURVE on the feed and snapshot ports: the collector's secret key file "
                 "(trainscope-curve-keygen writes one)");
  parser.AddFlag("curve-client-keys", "FILE",
                 "CURVE: only the clients whose public keys this file lists (one per line) may "
                 "connect");
  parser.AddFlag("read-token-file", "FILE",
                 "ListJobs and GetJobStatus need this token (the CLI's --read-token-file)");
  parser.AddFlag("job-key-file", "FILE",
                 "admit only ranks presenting their job's secret, derived from the key in this "
                 "file (trainscope job-secret JOB; run/attach pass it on): no job id is "
                 "first-come-first-served (docs/security.md); default: TRAINSCOPE_JOB_KEY_FILE, "
                 "else $XDG_CONFIG_HOME/trainscope/job.key or ~/.config/trainscope/job.key, "
                 "made (mode 0600) if missing");
  parser.AddBoolFlag("allow-unauthenticated-jobs",
                     "no job key: the first rank of a job fixes its token and a job id is "
                     "first-come-first-served (only where every local user is trusted)",
                     /*default_value=*/false);
  parser.AddBoolFlag("insecure",
                     "serve beyond loopback without encryption and without gating reads "
                     "(trusted networks only); without it a non-loopback --listen, --feed, "
                     "--snapshot or --metrics-host needs the flags above");
  // The collector tier on NATS JetStream (docs/scale.md).
  parser.AddFlag("publish", "URL",
                 "be a node collector: publish this collector's ranks to NATS JetStream at this "
                 "URL (nats://HOST:4222) for a job-level collector; buffered and caught up from "
                 "the log while NATS is away");
  parser.AddFlag("upstream", "URL",
                 "be the job-level collector: consume the node collectors' records from NATS "
                 "JetStream at this URL (durable consumer) and serve the job-wide view and halt");
  parser.AddFlag("node-name", "NAME",
                 "this collector's name in the tier (subjects, commands); default: the host name");
  parser.AddFlag("publish-events", "all|summary",
                 "what --publish sends of each batch: all (every event) or summary (step marks, "
                 "collectives, loss reports: what cross-host alignment, steps and rules need)",
                 "all");
  parser.AddFlag("publish-buffer-mb", "MIB",
                 "MiB of records --publish holds in memory while NATS is away; past it they are "
                 "read back from the log once it is back",
                 "256");
  parser.AddFlag("nats-durable", "NAME",
                 "--upstream: the durable JetStream consumer's name (a restart resumes from it)",
                 "trainscope-job-level");
  parser.AddFlag("upstream-job", "JOB",
                 "--upstream: consume this job's records only (one job-level collector per job)");
  parser.AddFlag("nats-ack-wait-s", "SECONDS",
                 "--upstream: JetStream redelivers a record not acknowledged (durable here) in "
                 "this time",
                 "10");
  parser.AddFlag("nats-max-age-s", "SECONDS",
                 "JetStream keeps the tier's records this long (stream retention); 0: no limit",
                 "86400");
  parser.AddFlag("nats-duplicate-window-ms", "MS",
                 "JetStream drops a record published again within this time (Nats-Msg-Id); set "
                 "when the tier's streams are first made",
                 "120000");
  parser.AddFlag("nats-tls-ca", "FILE", "NATS over TLS: verify the server against this CA file");
  parser.AddFlag("nats-tls-cert", "FILE",
                 "NATS mutual TLS: this collector's certificate file (with --nats-tls-key)");
  parser.AddFlag("nats-tls-key", "FILE", "NATS mutual TLS: the key of --nats-tls-cert");
  parser.AddFlag("nats-creds", "FILE", "NATS credentials file (.creds: JWT and NKey seed)");
  parser.AddBoolFlag("version", "print the version and exit");
  parser.AddEpilog(
      "Example: trainscope-collector --listen=127.0.0.1:7070 --data-dir=/var/lib/trainscope");
  return parser;
}

// A flag's value as an int (Abseil's type for most of them); range checks
// with their own words follow in ParseCollectorCommandLine.
absl::StatusOr<int64_t> IntFlag(const base::ParsedArgs& args, const char* name, int64_t min,
                                int64_t max) {
  ASSIGN_OR_RETURN(std::optional<int64_t> value, args.Int(name, min, max));
  return value.value_or(0);
}

absl::StatusOr<double> DoubleFlag(const base::ParsedArgs& args, const char* name) {
  ASSIGN_OR_RETURN(std::optional<double> value, args.Double(name, -kDoubleMax, kDoubleMax));
  return value.value_or(0);
}

}  // namespace

std::string CollectorUsage() { return MakeParser().Usage(); }

// Where the job key comes from: membership proof is the default, so without
// --allow-unauthenticated-jobs there is always a key (docs/security.md).
struct JobKeyChoice {
  std::string path;     // empty: no key, the first rank of a job fixes its token
  bool create = false;  // the default key: made on first start
};

absl::StatusOr<JobKeyChoice> ChooseJobKey(const base::ParsedArgs& args,
                                          const security::JobSecretSource::EnvLookup& env) {
  std::optional<std::string> path = args.Value("job-key-file");
  if (args.Bool("allow-unauthenticated-jobs")) {
    if (path.has_value()) {
      return absl::InvalidArgumentError(
          "--allow-unauthenticated-jobs and --job-key-file contradict each other: give one");
    }
    return JobKeyChoice{};
  }
  if (path.has_value()) {
    if (path->empty()) return absl::InvalidArgumentError("--job-key-file: empty path");
    return JobKeyChoice{*path, false};
  }
  if (std::optional<std::string> from_env = env("TRAINSCOPE_JOB_KEY_FILE"); from_env.has_value()) {
    return JobKeyChoice{*from_env, false};
  }
  std::optional<std::string> fallback = security::JobSecretSource::DefaultKeyPath(env);
  if (!fallback.has_value()) {
    return absl::InvalidArgumentError(
        "no place for the default job key (neither XDG_CONFIG_HOME nor HOME is set): give "
        "--job-key-file FILE (trainscope job-secret --new-key FILE makes one), or "
        "--allow-unauthenticated-jobs where every local user is trusted");
  }
  return JobKeyChoice{*fallback, true};
}

absl::StatusOr<CollectorCommandLine> ParseCollectorCommandLine(int argc, const char* const* argv) {
  ASSIGN_OR_RETURN(base::ParsedArgs args, MakeParser().Parse(argc, argv));
  CollectorCommandLine line;
  if (args.help_requested()) {
    line.help = true;
    return line;
  }
  if (args.Bool("version")) {
    line.version = true;
    return line;
  }
  if (!args.positionals().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", args.positionals()[0],
                                                   "': every setting is a --flag (see --help)"));
  }
  auto bad = [](std::string message) { return absl::InvalidArgumentError(std::move(message)); };

  ASSIGN_OR_RETURN(const int64_t segment_mb, IntFlag(args, "segment-mb", kIntMin, kIntMax));
  if (segment_mb < 1 || segment_mb > 4096) {
    return bad(absl::StrCat("--segment-mb: ", segment_mb, " is out of range; expected 1 to 4096"));
  }
  ASSIGN_OR_RETURN(const int64_t probe_ms, IntFlag(args, "probe-interval-ms", kIntMin, kIntMax));
  if (probe_ms < 0) return bad(absl::StrCat("--probe-interval-ms: ", probe_ms, " is negative"));
  ASSIGN_OR_RETURN(const int64_t halt_margin, IntFlag(args, "halt-step-margin", kIntMin, kIntMax));
  if (halt_margin < 0 || halt_margin > 1000000) {
    return bad(absl::StrCat("--halt-step-margin: ", halt_margin,
                            " is out of range; expected 0 to 1000000"));
  }
  ASSIGN_OR_RETURN(const int64_t halt_lead_ms, IntFlag(args, "halt-lead-ms", kIntMin, kIntMax));
  if (halt_lead_ms < 0 || halt_lead_ms > 3'600'000) {
    return bad(absl::StrCat("--halt-lead-ms: ", halt_lead_ms,
                            " is out of range; expected 0 to 3600000 (one hour)"));
  }
  ASSIGN_OR_RETURN(const double lost_grace_s, DoubleFlag(args, "lost-device-grace-s"));
  if (!(lost_grace_s >= 0 && lost_grace_s <= 86400)) {
    return bad(absl::StrCat("--lost-device-grace-s: ", lost_grace_s,
                            " is out of range; expected 0 to 86400"));
  }
  ASSIGN_OR_RETURN(const int64_t lost_grace_steps,
                   IntFlag(args, "lost-device-grace-steps", kIntMin, kIntMax));
  if (lost_grace_steps < 1) {
    return bad(
        absl::StrCat("--lost-device-grace-steps: ", lost_grace_steps, " must be at least 1"));
  }
  ASSIGN_OR_RETURN(const double retain_days, DoubleFlag(args, "retain-days"));
  ASSIGN_OR_RETURN(const double retain_gb, DoubleFlag(args, "retain-gb"));
  if (!(retain_days >= 0) || !(retain_gb >= 0)) {
    return bad(absl::StrCat("--retain-days ", retain_days, ", --retain-gb ", retain_gb,
                            ": expected numbers >= 0 (0: no limit)"));
  }
  line.retention = {
      .max_age = absl::Hours(24 * retain_days),
      .max_bytes = static_cast<uint64_t>(retain_gb * static_cast<double>(1ull << 30))};
  ASSIGN_OR_RETURN(const int64_t queued_mb, IntFlag(args, "max-queued-mb", kIntMin, kIntMax));
  if (queued_mb < 1)
    return bad(absl::StrCat("--max-queued-mb: ", queued_mb, " must be at least 1"));
  ASSIGN_OR_RETURN(const int64_t max_message, IntFlag(args, "max-message-bytes", kIntMin, kIntMax));
  if (max_message < 1024 || max_message > (1 << 30)) {
    return bad(absl::StrCat("--max-message-bytes: ", max_message,
                            " is out of range; expected 1024 to 1073741824"));
  }
  ASSIGN_OR_RETURN(const std::optional<int64_t> metrics_port,
                   args.Int("metrics-port", kIntMin, kIntMax));
  ASSIGN_OR_RETURN(const int64_t max_names, IntFlag(args, "max-job-names", 0, kInt64Max));
  ASSIGN_OR_RETURN(const int64_t max_name_mb, IntFlag(args, "max-job-name-mb", 0, kInt64Max >> 20));
  ASSIGN_OR_RETURN(const int64_t max_operators,
                   IntFlag(args, "max-stored-operators", 0, kInt64Max));
  ASSIGN_OR_RETURN(const int64_t release_after_s,
                   IntFlag(args, "release-finished-after-s", kIntMin, kIntMax));
  if (release_after_s < 0) {
    return bad(absl::StrCat("--release-finished-after-s: ", release_after_s,
                            " is negative; expected seconds >= 0"));
  }
  ASSIGN_OR_RETURN(const int64_t for_steps, IntFlag(args, "for", kIntMin, kIntMax));
  ASSIGN_OR_RETURN(const double halt_below, DoubleFlag(args, "halt-below-efficiency"));

  line.print_default_rules = args.Bool("print-default-rules");
  if (line.print_default_rules) return line;

  CollectorServerOptions& options = line.server;
  if (const std::string rules_path = args.Value("rules").value_or(""); !rules_path.empty()) {
    absl::StatusOr<v1::RulesConfig> loaded = LoadRulesFile(rules_path);
    if (!loaded.ok()) return bad(absl::StrCat("--rules: ", loaded.status().message()));
    options.rules = std::move(*loaded);
  }
  absl::StatusOr<v1::HaltPolicy> halt_policy =
      ParseHaltPolicy(args.Value("halt-when").value_or(""), for_steps, halt_below);
  if (!halt_policy.ok()) return bad(std::string(halt_policy.status().message()));
  if (halt_policy->enabled() && !args.Bool("analysis")) {
    return bad("--halt-when/--halt-below-efficiency need the analysis; drop --analysis=false");
  }

  line.metrics_host = *args.Value("metrics-host");
  line.port_file = args.Value("port-file").value_or("");
  options.listen = *args.Value("listen");
  options.feed = *args.Value("feed");
  options.snapshot = *args.Value("snapshot");
  if (metrics_port.has_value() && *metrics_port >= 0) {
    if (*metrics_port > 65535) {
      return bad(absl::StrCat("--metrics-port: ", *metrics_port, " is not a port (0..65535)"));
    }
    options.metrics = absl::StrCat(line.metrics_host, ":", *metrics_port);
  }
  options.data_dir = *args.Value("data-dir");
  options.fsync = args.Bool("fsync");
  options.segment_bytes = static_cast<uint64_t>(segment_mb) << 20;
  options.max_message_bytes = static_cast<int>(max_message);
  options.probe_interval = absl::Milliseconds(probe_ms);
  options.halt_step_margin = static_cast<uint64_t>(halt_margin);
  options.halt_lead = absl::Milliseconds(halt_lead_ms);
  options.lost_device_grace = absl::Seconds(lost_grace_s);
  options.lost_device_grace_steps = static_cast<uint64_t>(lost_grace_steps);
  options.analysis = args.Bool("analysis");
  options.analyzer.strings.max_names = static_cast<uint64_t>(max_names);
  options.analyzer.strings.max_bytes = static_cast<uint64_t>(max_name_mb) << 20;
  options.analyzer.max_stored_operators = static_cast<uint64_t>(max_operators);
  options.release_finished_after = absl::Seconds(release_after_s);
  options.halt_policy = *halt_policy;
  options.max_queued_bytes = static_cast<uint64_t>(queued_mb) << 20;
  options.tls = {args.Value("tls-cert").value_or(""), args.Value("tls-key").value_or(""),
                 args.Value("tls-client-ca").value_or("")};
  options.curve_secret_key_file = args.Value("curve-secret-key").value_or("");
  options.curve_client_keys_file = args.Value("curve-client-keys").value_or("");
  options.read_token_file = args.Value("read-token-file").value_or("");
  ASSIGN_OR_RETURN(const JobKeyChoice job_key,
                   ChooseJobKey(args, security::JobSecretSource::ProcessEnv()));
  options.job_key_file = job_key.path;
  options.create_job_key_file = job_key.create;
  ASSIGN_OR_RETURN(const int64_t memory_limit_mib,
                   IntFlag(args, "memory-limit-mib", 0, int64_t{1} << 30));
  options.memory_limit_bytes = static_cast<uint64_t>(memory_limit_mib) << 20;
  options.insecure = args.Bool("insecure");

  tier::TierRoleOptions& tier = line.tier;
  tier.publish = args.Value("publish").value_or("");
  tier.upstream = args.Value("upstream").value_or("");
  tier.node = args.Value("node-name").value_or("");
  tier.publish_events = *args.Value("publish-events");
  ASSIGN_OR_RETURN(const int64_t publish_buffer_mb,
                   IntFlag(args, "publish-buffer-mb", 0, kInt64Max >> 20));
  tier.publish_buffer_mb = static_cast<uint64_t>(publish_buffer_mb);
  tier.durable = *args.Value("nats-durable");
  tier.upstream_job = args.Value("upstream-job").value_or("");
  ASSIGN_OR_RETURN(const int64_t ack_wait_s, IntFlag(args, "nats-ack-wait-s", kIntMin, kIntMax));
  ASSIGN_OR_RETURN(const int64_t max_age_s, IntFlag(args, "nats-max-age-s", kIntMin, kIntMax));
  ASSIGN_OR_RETURN(const int64_t duplicate_window_ms,
                   IntFlag(args, "nats-duplicate-window-ms", kIntMin, kIntMax));
  tier.ack_wait_s = static_cast<int>(ack_wait_s);
  tier.max_age_s = static_cast<int>(max_age_s);
  tier.duplicate_window_ms = static_cast<int>(duplicate_window_ms);
  tier.nats.tls_ca = args.Value("nats-tls-ca").value_or("");
  tier.nats.tls_cert = args.Value("nats-tls-cert").value_or("");
  tier.nats.tls_key = args.Value("nats-tls-key").value_or("");
  tier.nats.creds = args.Value("nats-creds").value_or("");
  tier.data_dir = options.data_dir;
  return line;
}

}  // namespace trainscope::collector
