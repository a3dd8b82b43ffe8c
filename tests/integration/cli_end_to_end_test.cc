// The trainscope CLI against the real collector with real agent processes:
// jobs/status/tail see the job, a wrong token is refused, halt reaches every
// rank, and replay re-publishes a stored job event for event.
#include <signal.h>

#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "collector_process.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace trainscope::testing {
namespace {

constexpr int kWorldSize = 4;

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class CliEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("run");
    collector_ = std::make_unique<CollectorProcess>(dir_);
    ASSERT_TRUE(collector_->Start().ok()) << collector_->Output();
  }

  CliResult Cli(std::vector<std::string> args) { return Run(CliArgv(std::move(args))); }

  // The CLI as a user who holds no job secret: no token in the environment
  // and no job key it can read (its config directories are empty), so it
  // cannot derive the secret the way the collector's own user does
  // (docs/security.md, "How a rank proves membership").
  CliResult CliWithoutSecret(std::vector<std::string> args) {
    const std::filesystem::path empty = dir_ / "no-secret-home";
    std::filesystem::create_directories(empty);
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-u",
                                     "TRAINSCOPE_TOKEN",
                                     "-u",
                                     "TRAINSCOPE_JOB_SECRET",
                                     "-u",
                                     "TRAINSCOPE_JOB_SECRET_FILE",
                                     "-u",
                                     "TRAINSCOPE_JOB_KEY_FILE",
                                     "HOME=" + empty.string(),
                                     "XDG_CONFIG_HOME=" + empty.string()};
    for (std::string& arg : CliArgv(std::move(args))) argv.push_back(std::move(arg));
    return Run(argv);
  }

  // The job's secret, derived like every rank of the test does: from the
  // job key the collector made for this user (`trainscope job-secret JOB`).
  std::string JobSecret(const std::string& job) {
    CliResult r = Run({TRAINSCOPE_CLI_BIN, "job-secret", job});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::string(absl::StripAsciiWhitespace(r.out));
  }

  std::vector<std::string> CliArgv(std::vector<std::string> args) {
    std::vector<std::string> argv = {TRAINSCOPE_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--collector=" + collector_->agents_address());
    return argv;
  }

  CliResult Run(const std::vector<std::string>& argv) {
    Subprocess cli(argv, dir_ / absl::StrCat("cli-", ++cli_runs_));
    EXPECT_TRUE(cli.Start().ok());
    auto code = cli.Wait(absl::Seconds(60));
    EXPECT_TRUE(code.ok()) << code.status();
    return {code.value_or(-1), cli.Stdout(), cli.Stderr()};
  }

  std::unique_ptr<Subprocess> StartLoadgen(const std::string& job, int rank, int events, int rate) {
    auto p = std::make_unique<Subprocess>(
        std::vector<std::string>{TRAINSCOPE_LOADGEN_BIN, "--collector",
                                 collector_->agents_address(), "--job", job, "--rank",
                                 absl::StrCat(rank), "--world-size", absl::StrCat(kWorldSize),
                                 "--events", absl::StrCat(events), "--rate", absl::StrCat(rate)},
        dir_ / absl::StrCat("loadgen-", job, "-", rank));
    EXPECT_TRUE(p->Start().ok());
    return p;
  }

  // Polls `trainscope status` until every rank is connected.
  void WaitForRanks(const std::string& job) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      CliResult r = Cli({"status", job, "--json"});
      if (r.exit_code == 0 && absl::StrContains(absl::StrReplaceAll(r.out, {{" ", ""}}),
                                                absl::StrCat("\"ranks_connected\":", kWorldSize))) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    FAIL() << "job " << job << " never had " << kWorldSize << " ranks connected";
  }

  std::filesystem::path dir_;
  std::unique_ptr<CollectorProcess> collector_;
  int cli_runs_ = 0;
};

TEST_F(CliEndToEndTest, JobsStatusTailThenHaltReachesEveryRank) {
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < kWorldSize; ++r) ranks.push_back(StartLoadgen("live", r, 100000000, 20000));
  WaitForRanks("live");

  CliResult jobs = Cli({"jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_TRUE(absl::StrContains(jobs.out, "live")) << jobs.out;

  CliResult status = Cli({"status", "live"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  for (int r = 0; r < kWorldSize; ++r) {
    EXPECT_TRUE(absl::StrContains(status.out, absl::StrCat(r))) << status.out;
  }

  CliResult tail =
      Cli({"tail", "live", "--count", "3", "--for", "20", "--feed=" + collector_->feed_endpoint(),
           "--snapshot=" + collector_->snapshot_endpoint()});
  EXPECT_EQ(tail.exit_code, 0) << tail.err;
  EXPECT_TRUE(absl::StrContains(tail.out, "rank")) << tail.out;

  CliResult unknown = Cli({"status", "no-such-job"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(unknown.err, "no-such-job")) << unknown.err;

  CliResult no_token = CliWithoutSecret({"halt", "live", "--reason", "test"});
  EXPECT_NE(no_token.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(no_token.err, "token")) << no_token.err;

  CliResult wrong = Cli({"halt", "live", "--reason", "test", "--token", "not-the-token"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(wrong.err, "token")) << wrong.err;
  for (auto& rank : ranks) EXPECT_TRUE(rank->running()) << "a wrong token must not halt anything";

  const auto token_file = collector_->job_dir("live") / "token";
  ASSERT_TRUE(std::filesystem::exists(token_file));
  CliResult halt =
      Cli({"halt", "live", "--reason", "integration test", "--token-file", token_file.string()});
  EXPECT_EQ(halt.exit_code, 0) << halt.err;
  EXPECT_TRUE(absl::StrContains(halt.out, absl::StrCat(kWorldSize))) << halt.out;

  for (auto& rank : ranks) {
    auto code = rank->Wait(absl::Seconds(30));
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 3) << rank->Stderr();
    EXPECT_TRUE(absl::StrContains(rank->Stdout() + rank->Stderr(), "halted: integration test"));
  }
}

TEST_F(CliEndToEndTest, ReplayRepublishesAStoredJobEventForEvent) {
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < kWorldSize; ++r) ranks.push_back(StartLoadgen("orig", r, 50000, 0));
  for (auto& rank : ranks) {
    auto code = rank->Wait(absl::Seconds(60));
    ASSERT_TRUE(code.ok());
    ASSERT_EQ(*code, 0) << rank->Stderr();
  }
  auto original = ReadJobLog(collector_->job_dir("orig"));
  ASSERT_TRUE(original.ok()) << original.status();

  // The copy is a job like any other: its ranks present its secret.
  CliResult replay = Cli({"replay", collector_->job_dir("orig").string(), "--as-job", "copy",
                          "--token", JobSecret("copy")});
  ASSERT_EQ(replay.exit_code, 0) << replay.out << replay.err;

  auto copy = ReadJobLog(collector_->job_dir("copy"));
  ASSERT_TRUE(copy.ok()) << copy.status();
  ASSERT_EQ(copy->size(), original->size());
  for (auto& [rank, stream] : *original) {
    EXPECT_EQ(copy->at(rank).events, stream.events) << "rank " << rank;
    EXPECT_EQ(copy->at(rank).batches, stream.batches) << "rank " << rank;
  }

  CliResult bad = Cli({"replay", (dir_ / "nowhere").string()});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(bad.err, "nowhere")) << bad.err;
}

}  // namespace
}  // namespace trainscope::testing
