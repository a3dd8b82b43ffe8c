// trainscope-collector: gathers the agents of distributed training jobs,
// logs everything durably before acknowledging it, and serves the live feed.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "trainscope/collector/adapters/collector_server.h"
#include "trainscope/collector/adapters/grpc_agent_service.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/store/data_dir_files.h"
#include "trainscope/collector/store/stored_jobs.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/tier/tier_role.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7070",
          "HOST:PORT for agent streams and commands (gRPC); port 0 picks a free one. "
          "Loopback by default: bind elsewhere only on a trusted network");
ABSL_FLAG(std::string, feed, "tcp://127.0.0.1:7071",
          "ZeroMQ endpoint of the live feed (PUB); tcp://127.0.0.1:* picks a free port");
ABSL_FLAG(std::string, snapshot, "tcp://127.0.0.1:7072",
          "ZeroMQ endpoint answering snapshot requests (REP); tcp://127.0.0.1:* picks a free port");
ABSL_FLAG(int, metrics_port, -1,
          "serve Prometheus metrics (GET /metrics) on this port: per job and rank step time, "
          "waits, FLOPS, memory, events, drops, alerts, and the collector's health; 0 picks a "
          "free port; default: off");
ABSL_FLAG(std::string, metrics_host, "127.0.0.1",
          "the address the Prometheus endpoint binds (loopback unless told otherwise)");
ABSL_FLAG(std::string, data_dir, "./trainscope-data",
          "directory of the durable job logs (<data-dir>/jobs/<job>) and the index");
ABSL_FLAG(bool, fsync, true,
          "fdatasync each group commit before acknowledging (off only for tests)");
ABSL_FLAG(int, segment_mb, 64, "rotate a job's log segment past this many MiB");
ABSL_FLAG(int, max_message_bytes, trainscope::kMaxMessageBytes,
          "largest message accepted from an agent; larger ones are refused by gRPC");
ABSL_FLAG(int, probe_interval_ms, 1000, "clock probe period per agent stream; 0 disables probes");
ABSL_FLAG(int, halt_step_margin, 2,
          "a halt stops every rank at the highest step any rank reported plus at least this "
          "many steps, so ranks that lag behind reach the same boundary");
ABSL_FLAG(int, halt_lead_ms, 1000,
          "... and at least as many steps as run in this time (from the ranks' recent step "
          "times), so that a rank that reads the halt late has not passed the boundary");
ABSL_FLAG(double, lost_device_grace_s, 10,
          "a rank whose stream closed without goodbye is raised as lost_device once a peer is "
          "still connected this many seconds later (or reported --lost-device-grace-steps past "
          "it); ranks that all end together (a job's end) raise nothing");
ABSL_FLAG(int, lost_device_grace_steps, 3,
          "lost_device at once when a peer reports this many steps past a vanished rank's last");
ABSL_FLAG(bool, analysis, true,
          "align clocks and assemble steps live (steps, clocks and aligned operators on the "
          "feed); false: only log and publish counters");
// Per-job analysis budgets (issue 21.2): what one job may hold in memory.
ABSL_FLAG(uint64_t, max_job_names, 200'000,
          "distinct operator/group names a job's analysis keeps; past it new names read as "
          "\"(name budget exceeded)\", counted in trainscope status; 0: no limit");
ABSL_FLAG(uint64_t, max_job_name_mb, 32,
          "MiB of name text a job's analysis keeps (same overflow as --max-job-names); 0: no limit");
ABSL_FLAG(uint64_t, max_stored_operators, 4'000'000,
          "aligned operators a job keeps for Marey queries (about 100 bytes each); past it the "
          "oldest steps' operators are evicted, counted in trainscope status");
ABSL_FLAG(int, release_finished_after_s, 600,
          "free a finished job's operators this many seconds after it ended (steps, clocks "
          "and alerts stay; `trainscope export` and the viewer read them from the log after "
          "that, through --data-dir)");
ABSL_FLAG(std::string, rules, "",
          "alert thresholds, a protobuf text file (see --print-default-rules); unset fields "
          "keep their defaults");
ABSL_FLAG(bool, print_default_rules, false,
          "print the default rules file (every rule and threshold) and exit");
ABSL_FLAG(std::string, halt_when, "",
          "halt a job when any of these rules (comma-separated, e.g. straggler,slow_link) holds "
          "for --for consecutive steps; a job's own policy (trainscope run --halt-when) wins");
ABSL_FLAG(int, for_steps, 0,
          "consecutive steps a --halt-when rule or --halt-below-efficiency must hold (--for)");
ABSL_FLAG(double, halt_below_efficiency, 0,
          "halt a job whose efficiency (useful compute / step time) stays below this for --for "
          "steps; 0: off");
ABSL_FLAG(std::string, port_file, "",
          "write 'agents=HOST:PORT', 'feed=ENDPOINT', 'snapshot=ENDPOINT' lines here (atomically) "
          "once everything listens");
// Retention (docs/collector.md). 30 days keeps a month of runs to compare
// against; no size cap by default, because the right one depends on the disk
// (and a full disk no longer stops a job: it resumes when space returns).
ABSL_FLAG(double, retain_days, 30,
          "remove a stored job (its <data-dir>/jobs/<job> and index rows) last written more "
          "than this many days ago, at start and every hour; never a job with a rank "
          "connected; 0: keep jobs forever");
ABSL_FLAG(double, retain_gb, 0,
          "keep the stored jobs under this many GiB together: past it the oldest jobs without "
          "a rank connected are removed, at start and every hour; 0 (default): no size cap");
ABSL_FLAG(int, max_queued_mb, 256,
          "bound on received batches not yet durable, over all streams (memory bound)");
// Transport security (docs/security.md).
ABSL_FLAG(std::string, tls_cert, "", "TLS on the gRPC port: the collector's certificate (PEM)");
ABSL_FLAG(std::string, tls_key, "", "TLS on the gRPC port: its private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "mutual TLS: agents and clients must show a certificate this CA (PEM) signed");
ABSL_FLAG(std::string, curve_secret_key, "",
          "CURVE on the feed and snapshot ports: the collector's secret key file "
          "(trainscope-curve-keygen writes one)");
ABSL_FLAG(std::string, curve_client_keys, "",
          "CURVE: only the clients whose public keys this file lists (one per line) may connect");
ABSL_FLAG(std::string, read_token_file, "",
          "ListJobs and GetJobStatus need this token (the CLI's --read-token-file)");
ABSL_FLAG(std::string, job_key_file, "",
          "admit only ranks presenting their job's secret, derived from the key in this file "
          "(trainscope job-secret JOB --job-key-file FILE; run/attach --job-key-file pass it "
          "on): no job id is first-come-first-served; default: none, the first rank of a job "
          "fixes its token (docs/security.md)");
ABSL_FLAG(bool, insecure, false,
          "serve beyond loopback without encryption and without gating reads (trusted "
          "networks only); without it a non-loopback --listen, --feed, --snapshot or "
          "--metrics-host needs the flags above");

// The collector tier on NATS JetStream (docs/scale.md).
ABSL_FLAG(std::string, publish, "",
          "be a node collector: publish this collector's ranks to NATS JetStream at this URL "
          "(nats://HOST:4222) for a job-level collector; buffered and caught up from the log "
          "while NATS is away");
ABSL_FLAG(std::string, upstream, "",
          "be the job-level collector: consume the node collectors' records from NATS "
          "JetStream at this URL (durable consumer) and serve the job-wide view and halt");
ABSL_FLAG(std::string, node_name, "",
          "this collector's name in the tier (subjects, commands); default: the host name");
ABSL_FLAG(std::string, publish_events, "all",
          "what --publish sends of each batch: all (every event) or summary (step marks, "
          "collectives, loss reports: what cross-host alignment, steps and rules need)");
ABSL_FLAG(uint64_t, publish_buffer_mb, 256,
          "MiB of records --publish holds in memory while NATS is away; past it they are "
          "read back from the log once it is back");
ABSL_FLAG(std::string, nats_durable, "trainscope-job-level",
          "--upstream: the durable JetStream consumer's name (a restart resumes from it)");
ABSL_FLAG(std::string, upstream_job, "",
          "--upstream: consume this job's records only (one job-level collector per job)");
ABSL_FLAG(int, nats_ack_wait_s, 10,
          "--upstream: JetStream redelivers a record not acknowledged (durable here) in this time");
ABSL_FLAG(int, nats_max_age_s, 86400,
          "JetStream keeps the tier's records this long (stream retention); 0: no limit");
ABSL_FLAG(int, nats_duplicate_window_ms, 120000,
          "JetStream drops a record published again within this time (Nats-Msg-Id); set when "
          "the tier's streams are first made");
ABSL_FLAG(std::string, nats_tls_ca, "", "NATS over TLS: verify the server against this CA file");
ABSL_FLAG(std::string, nats_tls_cert, "",
          "NATS mutual TLS: this collector's certificate file (with --nats-tls-key)");
ABSL_FLAG(std::string, nats_tls_key, "", "NATS mutual TLS: the key of --nats-tls-cert");
ABSL_FLAG(std::string, nats_creds, "", "NATS credentials file (.creds: JWT and NKey seed)");

namespace {

constexpr int kBadFlags = 2;

int Fail(const std::string& message) {
  std::fprintf(stderr, "trainscope-collector: %s\n", message.c_str());
  return kBadFlags;
}

// Abseil flag names cannot hold '-', but the documented spelling is
// --data-dir: accept both by normalising the name part of each flag.
std::vector<char*> NormaliseFlagNames(int argc, char** argv, std::vector<std::string>* storage) {
  storage->reserve(argc);
  std::vector<char*> out;
  bool flags_done = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && !flags_done && arg == "--") flags_done = true;
    // --for is the documented name; Abseil cannot define a flag named "for".
    if (i > 0 && !flags_done && (arg == "--for" || absl::StartsWith(arg, "--for="))) {
      arg.replace(0, 5, "--for_steps");
    }
    if (i > 0 && !flags_done && arg.size() > 2 && arg[0] == '-') {
      const size_t start = arg[1] == '-' ? 2 : 1;
      const size_t end = std::min(arg.find('='), arg.size());
      for (size_t j = start; j < end; ++j) {
        if (arg[j] == '-') arg[j] = '_';
      }
    }
    storage->push_back(std::move(arg));
    out.push_back(storage->back().data());
  }
  out.push_back(nullptr);
  return out;
}

bool WritePortFile(const std::string& path, const std::string& content, std::string* error) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      *error = "cannot write " + tmp;
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // atomic: readers never see half a file
  if (ec) {
    *error = "cannot rename " + tmp + " to " + path + ": " + ec.message();
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(absl::StrCat(
      "trainscope-collector ", trainscope::kTrainscopeVersion,
      ": the collector of trainscope, the in-situ profiler for distributed training.\n"
      "Agents inside training processes stream their events here over gRPC; every batch is\n"
      "appended to the job's durable log before it is acknowledged. Viewers follow jobs live on\n"
      "the ZeroMQ feed (snapshot + deltas); the trainscope CLI lists, halts and switches jobs.\n\n"
      "Usage: trainscope-collector [--listen=127.0.0.1:7070] [--data-dir=DIR] [flags]\n"
      "Flag names may be written with '-' or '_' (--data-dir or --data_dir)."));
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "collector/src/main.cc");
  };
  usage_config.version_string = [] {
    return absl::StrCat("trainscope-collector ", trainscope::kTrainscopeVersion, "\n");
  };
  absl::SetFlagsUsageConfig(usage_config);
  std::vector<std::string> arg_storage;
  std::vector<char*> args = NormaliseFlagNames(argc, argv, &arg_storage);
  absl::ParseCommandLine(argc, args.data());

  const int segment_mb = absl::GetFlag(FLAGS_segment_mb);
  if (segment_mb < 1 || segment_mb > 4096) {
    return Fail(absl::StrCat("--segment-mb: ", segment_mb, " is out of range; expected 1 to 4096"));
  }
  const int probe_ms = absl::GetFlag(FLAGS_probe_interval_ms);
  if (probe_ms < 0) return Fail(absl::StrCat("--probe-interval-ms: ", probe_ms, " is negative"));
  const int halt_margin = absl::GetFlag(FLAGS_halt_step_margin);
  if (halt_margin < 0 || halt_margin > 1000000) {
    return Fail(absl::StrCat("--halt-step-margin: ", halt_margin,
                             " is out of range; expected 0 to 1000000"));
  }
  const int halt_lead_ms = absl::GetFlag(FLAGS_halt_lead_ms);
  if (halt_lead_ms < 0 || halt_lead_ms > 3'600'000) {
    return Fail(absl::StrCat("--halt-lead-ms: ", halt_lead_ms,
                             " is out of range; expected 0 to 3600000 (one hour)"));
  }
  const double lost_grace_s = absl::GetFlag(FLAGS_lost_device_grace_s);
  if (!(lost_grace_s >= 0 && lost_grace_s <= 86400)) {
    return Fail(absl::StrCat("--lost-device-grace-s: ", lost_grace_s,
                             " is out of range; expected 0 to 86400"));
  }
  const int lost_grace_steps = absl::GetFlag(FLAGS_lost_device_grace_steps);
  if (lost_grace_steps < 1) {
    return Fail(
        absl::StrCat("--lost-device-grace-steps: ", lost_grace_steps, " must be at least 1"));
  }
  const double retain_days = absl::GetFlag(FLAGS_retain_days);
  const double retain_gb = absl::GetFlag(FLAGS_retain_gb);
  if (!(retain_days >= 0) || !(retain_gb >= 0)) {
    return Fail(absl::StrCat("--retain-days ", retain_days, ", --retain-gb ", retain_gb,
                             ": expected numbers >= 0 (0: no limit)"));
  }
  const trainscope::collector::RetentionPolicy retention{
      .max_age = absl::Hours(24 * retain_days),
      .max_bytes = static_cast<uint64_t>(retain_gb * static_cast<double>(1ull << 30))};
  const int queued_mb = absl::GetFlag(FLAGS_max_queued_mb);
  if (queued_mb < 1)
    return Fail(absl::StrCat("--max-queued-mb: ", queued_mb, " must be at least 1"));
  const int max_message = absl::GetFlag(FLAGS_max_message_bytes);
  if (max_message < 1024 || max_message > (1 << 30)) {
    return Fail(absl::StrCat("--max-message-bytes: ", max_message,
                             " is out of range; expected 1024 to 1073741824"));
  }

  if (absl::GetFlag(FLAGS_print_default_rules)) {
    std::fputs(trainscope::collector::DefaultRulesText().c_str(), stdout);
    return 0;
  }
  trainscope::v1::RulesConfig rules;
  if (const std::string rules_path = absl::GetFlag(FLAGS_rules); !rules_path.empty()) {
    auto loaded = trainscope::collector::LoadRulesFile(rules_path);
    if (!loaded.ok()) return Fail(absl::StrCat("--rules: ", loaded.status().message()));
    rules = std::move(*loaded);
  }
  auto halt_policy = trainscope::collector::ParseHaltPolicy(
      absl::GetFlag(FLAGS_halt_when), absl::GetFlag(FLAGS_for_steps),
      absl::GetFlag(FLAGS_halt_below_efficiency));
  if (!halt_policy.ok()) return Fail(std::string(halt_policy.status().message()));
  if (halt_policy->enabled() && !absl::GetFlag(FLAGS_analysis)) {
    return Fail("--halt-when/--halt-below-efficiency need the analysis; drop --analysis=false");
  }

  // Signals are taken synchronously by main; every thread started below inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  trainscope::collector::CollectorServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.feed = absl::GetFlag(FLAGS_feed);
  options.snapshot = absl::GetFlag(FLAGS_snapshot);
  if (const int metrics_port = absl::GetFlag(FLAGS_metrics_port); metrics_port >= 0) {
    if (metrics_port > 65535) {
      return Fail(absl::StrCat("--metrics-port: ", metrics_port, " is not a port (0..65535)"));
    }
    options.metrics = absl::StrCat(absl::GetFlag(FLAGS_metrics_host), ":", metrics_port);
  }
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.fsync = absl::GetFlag(FLAGS_fsync);
  options.segment_bytes = static_cast<uint64_t>(segment_mb) << 20;
  options.max_message_bytes = max_message;
  options.probe_interval = absl::Milliseconds(probe_ms);
  options.halt_step_margin = static_cast<uint64_t>(halt_margin);
  options.halt_lead = absl::Milliseconds(halt_lead_ms);
  options.lost_device_grace = absl::Seconds(lost_grace_s);
  options.lost_device_grace_steps = static_cast<uint64_t>(lost_grace_steps);
  options.analysis = absl::GetFlag(FLAGS_analysis);
  options.analyzer.strings.max_names = absl::GetFlag(FLAGS_max_job_names);
  options.analyzer.strings.max_bytes = absl::GetFlag(FLAGS_max_job_name_mb) << 20;
  options.analyzer.max_stored_operators = absl::GetFlag(FLAGS_max_stored_operators);
  if (absl::GetFlag(FLAGS_release_finished_after_s) < 0) {
    return Fail(absl::StrCat("--release-finished-after-s: ",
                             absl::GetFlag(FLAGS_release_finished_after_s),
                             " is negative; expected seconds >= 0"));
  }
  options.release_finished_after = absl::Seconds(absl::GetFlag(FLAGS_release_finished_after_s));
  options.rules = std::move(rules);
  options.halt_policy = *halt_policy;
  options.max_queued_bytes = static_cast<uint64_t>(queued_mb) << 20;
  options.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                 absl::GetFlag(FLAGS_tls_client_ca)};
  options.curve_secret_key_file = absl::GetFlag(FLAGS_curve_secret_key);
  options.curve_client_keys_file = absl::GetFlag(FLAGS_curve_client_keys);
  options.read_token_file = absl::GetFlag(FLAGS_read_token_file);
  options.job_key_file = absl::GetFlag(FLAGS_job_key_file);
  options.insecure = absl::GetFlag(FLAGS_insecure);

  // Private to the collector's user and group (0750), whatever the umask.
  if (absl::Status created =
          trainscope::collector::CreateDataDirectories(options.data_dir / "jobs");
      !created.ok()) {
    return Fail(absl::StrCat("--data-dir: ", created.message()));
  }
  trainscope::tier::TierRoleOptions tier_options;
  tier_options.publish = absl::GetFlag(FLAGS_publish);
  tier_options.upstream = absl::GetFlag(FLAGS_upstream);
  tier_options.node = absl::GetFlag(FLAGS_node_name);
  tier_options.publish_events = absl::GetFlag(FLAGS_publish_events);
  tier_options.publish_buffer_mb = absl::GetFlag(FLAGS_publish_buffer_mb);
  tier_options.durable = absl::GetFlag(FLAGS_nats_durable);
  tier_options.upstream_job = absl::GetFlag(FLAGS_upstream_job);
  tier_options.ack_wait_s = absl::GetFlag(FLAGS_nats_ack_wait_s);
  tier_options.max_age_s = absl::GetFlag(FLAGS_nats_max_age_s);
  tier_options.duplicate_window_ms = absl::GetFlag(FLAGS_nats_duplicate_window_ms);
  tier_options.nats.tls_ca = absl::GetFlag(FLAGS_nats_tls_ca);
  tier_options.nats.tls_cert = absl::GetFlag(FLAGS_nats_tls_cert);
  tier_options.nats.tls_key = absl::GetFlag(FLAGS_nats_tls_key);
  tier_options.nats.creds = absl::GetFlag(FLAGS_nats_creds);
  tier_options.data_dir = options.data_dir;
  // Before the server: its pipelines hand their records to the publisher.
  auto tier = trainscope::tier::TierRole::Create(tier_options);
  if (!tier.ok()) return Fail(std::string(tier.status().message()));
  options.record_sink = (*tier)->record_sink();
  auto server = trainscope::collector::CollectorServer::Start(options);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  (*tier)->Start(&(*server)->registry(), &(*server)->counters());

  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    std::string error;
    if (!WritePortFile(
            port_file,
            absl::StrCat("agents=", (*server)->agents_address(),
                         "\nfeed=", (*server)->feed_endpoint(),
                         "\nsnapshot=", (*server)->snapshot_endpoint(), "\n",
                         (*server)->metrics_port() > 0
                             ? absl::StrCat("metrics=", absl::GetFlag(FLAGS_metrics_host), ":",
                                            (*server)->metrics_port(), "\n")
                             : ""),
            &error)) {
      (*server)->Shutdown(absl::Seconds(1));
      return Fail("--port-file: " + error);
    }
  }
  std::printf("trainscope-collector ready: agents %s, feed %s, snapshot %s, data %s%s\n",
              (*server)->agents_address().c_str(), (*server)->feed_endpoint().c_str(),
              (*server)->snapshot_endpoint().c_str(), options.data_dir.string().c_str(),
              (*server)->metrics_port() > 0
                  ? absl::StrCat(", metrics http://", absl::GetFlag(FLAGS_metrics_host), ":",
                                 (*server)->metrics_port(), "/metrics")
                        .c_str()
                  : "");
  std::fflush(stdout);

  // Retention at start, then hourly while waiting for a signal.
  (*server)->registry().ApplyRetention(retention, absl::Now());
  int signal_number = 0;
  while (signal_number <= 0) {
    const struct timespec retention_period = {.tv_sec = 3600, .tv_nsec = 0};
    signal_number = sigtimedwait(&signals, nullptr, &retention_period);
    if (signal_number < 0 && errno == EAGAIN) {
      (*server)->registry().ApplyRetention(retention, absl::Now());
    }
  }
  std::fprintf(stderr, "trainscope-collector: %s received, shutting down\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  // A second signal during the shutdown kills at once (default action).
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
  (*tier)->StopIntake();
  (*server)->Shutdown(absl::Seconds(5));
  (*tier)->StopPublishing();
  const auto counts = (*server)->counters().Snapshot();
  if (!counts.empty()) {
    std::string line = "trainscope-collector: bad input seen:";
    for (const auto& [cause, count] : counts) absl::StrAppend(&line, " ", cause, "=", count);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fprintf(stderr,
               "trainscope-collector: stopped; %llu streams served, %llu feed updates "
               "published, %llu dropped\n",
               static_cast<unsigned long long>((*server)->agent_service().streams_served()),
               static_cast<unsigned long long>((*server)->publisher().published()),
               static_cast<unsigned long long>((*server)->publisher().dropped()));
  return 0;
}
