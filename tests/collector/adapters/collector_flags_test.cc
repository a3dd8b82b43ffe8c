#include "trainscope/collector/adapters/collector_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<CollectorCommandLine> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "trainscope-collector");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return ParseCollectorCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(CollectorFlagsTest, DefaultsMatchTheServerOptions) {
  absl::StatusOr<CollectorCommandLine> line = Parse({});
  ASSERT_TRUE(line.ok()) << line.status();
  const CollectorServerOptions defaults;
  EXPECT_EQ(line->server.listen, defaults.listen);
  EXPECT_EQ(line->server.feed, defaults.feed);
  EXPECT_EQ(line->server.snapshot, defaults.snapshot);
  EXPECT_EQ(line->server.data_dir, defaults.data_dir);
  EXPECT_TRUE(line->server.fsync);
  EXPECT_TRUE(line->server.analysis);
  EXPECT_TRUE(line->server.metrics.empty());
  EXPECT_EQ(line->server.segment_bytes, defaults.segment_bytes);
  EXPECT_EQ(line->server.max_message_bytes, defaults.max_message_bytes);
  EXPECT_EQ(line->server.probe_interval, defaults.probe_interval);
  EXPECT_EQ(line->server.halt_lead, defaults.halt_lead);
  EXPECT_EQ(line->server.lost_device_grace, defaults.lost_device_grace);
  EXPECT_EQ(line->server.release_finished_after, defaults.release_finished_after);
  EXPECT_EQ(line->server.max_queued_bytes, defaults.max_queued_bytes);
  EXPECT_EQ(line->server.analyzer.strings.max_names, defaults.analyzer.strings.max_names);
  EXPECT_EQ(line->server.analyzer.strings.max_bytes, defaults.analyzer.strings.max_bytes);
  EXPECT_EQ(line->server.analyzer.max_stored_operators, defaults.analyzer.max_stored_operators);
  EXPECT_EQ(line->retention.max_age, absl::Hours(24 * 30));
  EXPECT_EQ(line->retention.max_bytes, 0u);
  EXPECT_FALSE(line->server.halt_policy.enabled());
}

// The command lines of tests/python/conftest.py, deploy/ and docs/, as typed.
TEST(CollectorFlagsTest, CommandLinesUsersTypeStillParse) {
  absl::StatusOr<CollectorCommandLine> line = Parse({"--listen=127.0.0.1:0",
                                                     "--feed=tcp://127.0.0.1:*",
                                                     "--snapshot",
                                                     "tcp://h:1",
                                                     "--data-dir=/tmp/d",
                                                     "--port-file=/tmp/p",
                                                     "--fsync=false",
                                                     "--probe_interval_ms=200",
                                                     "--max-message-bytes=65536",
                                                     "--segment-mb=1",
                                                     "--metrics-port",
                                                     "9464",
                                                     "--metrics-host=0.0.0.0",
                                                     "--lost_device_grace_s=1",
                                                     "--max-job-names=0",
                                                     "--retain-days",
                                                     "0.5",
                                                     "--retain-gb=100",
                                                     "--insecure",
                                                     "--halt-when",
                                                     "straggler",
                                                     "--for",
                                                     "5",
                                                     "--job_key_file=/k"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->server.listen, "127.0.0.1:0");
  EXPECT_EQ(line->server.feed, "tcp://127.0.0.1:*");
  EXPECT_EQ(line->server.snapshot, "tcp://h:1");
  EXPECT_EQ(line->server.data_dir, "/tmp/d");
  EXPECT_EQ(line->port_file, "/tmp/p");
  EXPECT_FALSE(line->server.fsync);
  EXPECT_EQ(line->server.probe_interval, absl::Milliseconds(200));
  EXPECT_EQ(line->server.max_message_bytes, 65536);
  EXPECT_EQ(line->server.segment_bytes, 1u << 20);
  EXPECT_EQ(line->server.metrics, "0.0.0.0:9464");
  EXPECT_EQ(line->server.lost_device_grace, absl::Seconds(1));
  EXPECT_EQ(line->server.analyzer.strings.max_names, 0u);
  EXPECT_EQ(line->retention.max_age, absl::Hours(12));
  EXPECT_EQ(line->retention.max_bytes, 100ull << 30);
  EXPECT_TRUE(line->server.insecure);
  EXPECT_TRUE(line->server.halt_policy.enabled());
  EXPECT_EQ(line->server.halt_policy.for_steps(), 5u);
  EXPECT_EQ(line->server.job_key_file, "/k");
}

// Restores an environment variable at scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Issue 21: membership proof is the default, not opt-in.
TEST(CollectorFlagsTest, AJobKeyIsTheDefaultAndOnlyAnExplicitFlagTurnsItOff) {
  ScopedEnv config("XDG_CONFIG_HOME", "/cfg-test");
  ScopedEnv key_env("TRAINSCOPE_JOB_KEY_FILE", nullptr);
  absl::StatusOr<CollectorCommandLine> line = Parse({});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->server.job_key_file, "/cfg-test/trainscope/job.key");
  EXPECT_TRUE(line->server.create_job_key_file);

  line = Parse({"--job-key-file=/etc/k"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->server.job_key_file, "/etc/k");
  EXPECT_FALSE(line->server.create_job_key_file);  // a given key must exist

  line = Parse({"--allow-unauthenticated-jobs"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->server.job_key_file, "");

  line = Parse({"--allow-unauthenticated-jobs", "--job-key-file=/etc/k"});
  ASSERT_FALSE(line.ok());
  EXPECT_THAT(line.status().message(), HasSubstr("contradict"));

  ScopedEnv from_env("TRAINSCOPE_JOB_KEY_FILE", "/srv/k");
  line = Parse({});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->server.job_key_file, "/srv/k");
  EXPECT_FALSE(line->server.create_job_key_file);
}

TEST(CollectorFlagsTest, WithoutAHomeTheDefaultKeyHasNoPlaceAndTheErrorSaysWhatToGive) {
  ScopedEnv config("XDG_CONFIG_HOME", nullptr);
  ScopedEnv home("HOME", nullptr);
  ScopedEnv key_env("TRAINSCOPE_JOB_KEY_FILE", nullptr);
  absl::StatusOr<CollectorCommandLine> line = Parse({});
  ASSERT_FALSE(line.ok());
  EXPECT_THAT(line.status().message(), HasSubstr("--job-key-file FILE"));
  EXPECT_THAT(line.status().message(), HasSubstr("--allow-unauthenticated-jobs"));
}

TEST(CollectorFlagsTest, AbseilSpellingsStillParse) {
  absl::StatusOr<CollectorCommandLine> line =
      Parse({"--nofsync", "--analysis=false", "-data_dir=/d", "--for_steps=3",
             "--halt_below_efficiency", "0.5", "--metrics-port=-1"});
  // A halt policy needs the analysis: the refusal shows every flag was read.
  ASSERT_FALSE(line.ok());
  EXPECT_THAT(line.status().message(), HasSubstr("drop --analysis=false"));
  line = Parse({"--nofsync", "--noanalysis", "-data_dir=/d", "--metrics-port=-1"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_FALSE(line->server.fsync);
  EXPECT_FALSE(line->server.analysis);
  EXPECT_EQ(line->server.data_dir, "/d");
  EXPECT_TRUE(line->server.metrics.empty());
  line = Parse({"--for_steps=3", "--halt_when=straggler"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->server.halt_policy.for_steps(), 3u);
}

TEST(CollectorFlagsTest, TierFlagsReachTheTierOptions) {
  absl::StatusOr<CollectorCommandLine> line = Parse(
      {"--data-dir=/d", "--publish", "nats://h:4222", "--node_name=n1", "--publish-events=summary",
       "--publish-buffer-mb", "8", "--nats-ack-wait-s=3", "--nats_creds=/c"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->tier.publish, "nats://h:4222");
  EXPECT_EQ(line->tier.node, "n1");
  EXPECT_EQ(line->tier.publish_events, "summary");
  EXPECT_EQ(line->tier.publish_buffer_mb, 8u);
  EXPECT_EQ(line->tier.ack_wait_s, 3);
  EXPECT_EQ(line->tier.max_age_s, 86400);
  EXPECT_EQ(line->tier.durable, "trainscope-job-level");
  EXPECT_EQ(line->tier.nats.creds, "/c");
  EXPECT_EQ(line->tier.data_dir, "/d");
  EXPECT_TRUE(line->tier.upstream.empty());
}

TEST(CollectorFlagsTest, BadValuesNameTheFlagAndTheRange) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--segment-mb=0"}, "--segment-mb: 0 is out of range; expected 1 to 4096"},
      {{"--segment_mb=many"}, "--segment-mb expects a whole number"},
      {{"--max-message-bytes", "10"}, "--max-message-bytes: 10 is out of range"},
      {{"--metrics-port=70000"}, "--metrics-port: 70000 is not a port"},
      {{"--retain-days", "-1"}, "expected numbers >= 0"},
      {{"--probe-interval-ms=-5"}, "--probe-interval-ms: -5 is negative"},
      {{"--fsync=perhaps"}, "--fsync takes no value (or =true / =false), got 'perhaps'"},
      {{"--data-dri=/d"},
       "unknown flag --data-dri for 'trainscope-collector' (did you mean "
       "--data-dir?)"},
      {{"--listen"}, "flag --listen needs a value"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"--halt-when", "nonsense", "--for", "2"}, "nonsense"},
      {{"--rules=/nonexistent/rules.textproto"}, "--rules: "},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CollectorCommandLine> line = Parse(c.args);
    ASSERT_FALSE(line.ok()) << c.args[0];
    EXPECT_TRUE(absl::IsInvalidArgument(line.status())) << line.status();
    EXPECT_THAT(line.status().message(), HasSubstr(c.message)) << c.args[0];
  }
}

TEST(CollectorFlagsTest, RulesFileIsLoaded) {
  const std::filesystem::path path =
      std::filesystem::path(testing::TempDir()) / "collector_flags_rules.textproto";
  std::ofstream(path) << "straggler { window_steps: 7 }\n";
  absl::StatusOr<CollectorCommandLine> line = Parse({"--rules", path.string()});
  std::filesystem::remove(path);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->server.rules.straggler().window_steps(), 7u);
}

TEST(CollectorFlagsTest, HelpVersionAndPrintDefaultRulesStopEarly) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h", "--segment-mb=0"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
  absl::StatusOr<CollectorCommandLine> line = Parse({"--print-default-rules"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_TRUE(line->print_default_rules);
}

TEST(CollectorFlagsTest, UsageListsEveryFlagWithItsDefault) {
  const std::string usage = CollectorUsage();
  for (const char* flag : {"--listen HOST:PORT",
                           "--feed ENDPOINT",
                           "--snapshot ENDPOINT",
                           "--metrics-port PORT",
                           "--metrics-host HOST",
                           "--data-dir DIR",
                           "--fsync\n",
                           "--segment-mb MIB",
                           "--max-message-bytes BYTES",
                           "--probe-interval-ms MS",
                           "--halt-step-margin STEPS",
                           "--halt-lead-ms MS",
                           "--lost-device-grace-s SECONDS",
                           "--lost-device-grace-steps STEPS",
                           "--analysis\n",
                           "--max-job-names N",
                           "--max-job-name-mb MIB",
                           "--max-stored-operators N",
                           "--release-finished-after-s SECONDS",
                           "--rules FILE",
                           "--print-default-rules\n",
                           "--halt-when RULES",
                           "--for STEPS",
                           "--halt-below-efficiency FRACTION",
                           "--port-file FILE",
                           "--retain-days DAYS",
                           "--retain-gb GIB",
                           "--max-queued-mb MIB",
                           "--tls-cert PEM",
                           "--tls-key PEM",
                           "--tls-client-ca PEM",
                           "--curve-secret-key FILE",
                           "--curve-client-keys FILE",
                           "--read-token-file FILE",
                           "--job-key-file FILE",
                           "--allow-unauthenticated-jobs\n",
                           "--publish URL",
                           "--upstream URL",
                           "--node-name NAME",
                           "--publish-events all|summary",
                           "--publish-buffer-mb MIB",
                           "--nats-durable NAME",
                           "--upstream-job JOB",
                           "--nats-ack-wait-s SECONDS",
                           "--nats-max-age-s SECONDS",
                           "--nats-duplicate-window-ms MS",
                           "--nats-tls-ca FILE",
                           "--nats-tls-cert FILE",
                           "--nats-tls-key FILE",
                           "--nats-creds FILE",
                           "--insecure\n",
                           "--version\n"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  EXPECT_THAT(usage, HasSubstr("(default: ./trainscope-data)"));
  EXPECT_THAT(usage, HasSubstr("(default: true; --nofsync turns it off)"));
  EXPECT_THAT(usage, HasSubstr("(also --for_steps)"));
  EXPECT_THAT(usage, HasSubstr("the collector of trainscope"));
}

}  // namespace
}  // namespace trainscope::collector
