// End to end: a LiveFeedClient and the ConnectionModel the window feeds from
// it, against a real trainscope-collector process that is killed and
// restarted on the same ports. The viewer must say the feed is gone within
// a bound and recover on its own once the collector is back, also when it
// was started before its collector. Waits poll with wide bounds; nothing
// asserts how fast.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "trainscope/security/curve_keys.h"
#include "trainscope/viewer/connection_model.h"
#include "trainscope/viewer/feed_coalescer.h"
#include "trainscope/viewer/live_feed_client.h"
#include "trainscope/viewer/viewer_state.h"

#ifdef TRAINSCOPE_COLLECTOR_BIN  // built with the collector

extern char** environ;

namespace trainscope::viewer {
namespace {

namespace fs = std::filesystem;

// Starts `args` with stdout and stderr appended to `log`; the pid, or -1.
pid_t Spawn(std::vector<std::string> args, const fs::path& log) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string path = log.string();
  posix_spawn_file_actions_addopen(&actions, 1, path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// A trainscope-collector child process; the first start picks free ports
// (written to its --port-file), later starts reuse them.
class CollectorProcess {
 public:
  explicit CollectorProcess(fs::path dir, std::vector<std::string> extra = {})
      : dir_(std::move(dir)), extra_(std::move(extra)) {}
  ~CollectorProcess() { Kill(); }

  bool Start() {
    const fs::path ports = dir_ / "ports";
    fs::remove(ports);
    std::vector<std::string> args = {
        TRAINSCOPE_COLLECTOR_BIN,
        "--listen=" + (agents_.empty() ? std::string("127.0.0.1:0") : agents_),
        "--feed=" + (feed_.empty() ? std::string("tcp://127.0.0.1:*") : feed_),
        "--snapshot=" + (snapshot_.empty() ? std::string("tcp://127.0.0.1:*") : snapshot_),
        "--data-dir=" + (dir_ / "data").string(),
        "--port-file=" + ports.string(),
        "--fsync=false"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    pid_ = Spawn(args, dir_ / "collector.log");
    if (pid_ <= 0) return false;
    // Ready once it wrote its ports (after binding them).
    for (auto deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;) {
      std::ifstream in(ports);
      std::map<std::string, std::string> found;
      for (std::string line; std::getline(in, line);) {
        const size_t eq = line.find('=');
        if (eq != std::string::npos) found[line.substr(0, eq)] = line.substr(eq + 1);
      }
      if (found.count("agents") && found.count("feed") && found.count("snapshot")) {
        agents_ = found["agents"];
        feed_ = found["feed"];
        snapshot_ = found["snapshot"];
        return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  // SIGKILL: no goodbye on the feed, as when the collector's machine dies.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  std::string Log() const {
    std::ifstream in(dir_ / "collector.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  const std::string& agents() const { return agents_; }
  const std::string& feed() const { return feed_; }
  const std::string& snapshot() const { return snapshot_; }

 private:
  fs::path dir_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  std::string agents_, feed_, snapshot_;
};

class LiveFeedReconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("viewer-reconnect-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LiveFeedClient::Options ClientOptions(const CollectorProcess& collector) {
    LiveFeedClient::Options options;
    options.feed = collector.feed();
    options.snapshot = collector.snapshot();
    options.job_id = "reconnect-job";
    options.history.timeout = absl::Seconds(5);
    options.max_backoff = absl::Milliseconds(500);
    return options;
  }

  // Feeds the model from the client's link with the wall clock, as the
  // window's frame timer does, until `done` holds or `bound` passes.
  bool WaitFor(LiveFeedClient* client, ConnectionModel* model,
               const std::function<bool()>& done, absl::Duration bound = absl::Seconds(90)) {
    for (absl::Time deadline = absl::Now() + bound; absl::Now() < deadline;) {
      model->Observe(client->link(), absl::ToUnixNanos(absl::Now()));
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  fs::path dir_;
};

bool ShowsTheFeedGone(const ConnectionModel& model) {
  const ConnectionModel::State s = model.state();
  return model.data_stale() && (s == ConnectionModel::State::kStale ||
                                s == ConnectionModel::State::kDisconnected ||
                                s == ConnectionModel::State::kRetrying);
}

TEST_F(LiveFeedReconnectTest, KilledCollectorIsShownGoneAndTheViewerRecoversWhenItRestarts) {
  CollectorProcess collector(dir_);
  ASSERT_TRUE(collector.Start()) << collector.Log();
  FeedCoalescer coalescer;
  LiveFeedClient client(ClientOptions(collector), &coalescer);
  // Short thresholds so that the test waits less; the bounds stay wide.
  ConnectionModel model({.stale_after_ns = 3'000'000'000, .disconnected_after_ns = 8'000'000'000});
  client.Start();
  ASSERT_TRUE(WaitFor(&client, &model,
                      [&] { return model.state() == ConnectionModel::State::kLive; }))
      << model.Text() << "\n" << collector.Log();
  EXPECT_FALSE(model.data_stale());

  collector.Kill();
  ASSERT_TRUE(WaitFor(&client, &model, [&] { return ShowsTheFeedGone(model); }))
      << "still " << model.Text();
  EXPECT_NE(model.Text().find("last update"), std::string::npos) << model.Text();
  ASSERT_EQ(model.outages().size(), 1u);
  EXPECT_EQ(model.outages()[0].end_ns, 0);  // still going on

  // Same ports: the viewer finds it again by itself.
  ASSERT_TRUE(collector.Start()) << collector.Log();
  ASSERT_TRUE(WaitFor(&client, &model,
                      [&] { return model.state() == ConnectionModel::State::kLive; }))
      << "still " << model.Text() << "\n" << collector.Log();
  EXPECT_FALSE(model.data_stale());
  EXPECT_GE(client.connections(), 2u);
  ASSERT_EQ(model.outages().size(), 1u);
  EXPECT_GT(model.outages()[0].end_ns, model.outages()[0].start_ns);
  client.Stop();
}

TEST_F(LiveFeedReconnectTest, ViewerStartedBeforeItsCollectorGoesLiveWhenItComesUp) {
  // Learn free ports, then take the collector away before the viewer starts.
  CollectorProcess collector(dir_);
  ASSERT_TRUE(collector.Start()) << collector.Log();
  collector.Kill();
  FeedCoalescer coalescer;
  LiveFeedClient client(ClientOptions(collector), &coalescer);
  ConnectionModel model;
  client.Start();
  ASSERT_TRUE(WaitFor(&client, &model, [&] {
    return model.state() == ConnectionModel::State::kRetrying && client.link().attempts >= 2;
  })) << model.Text();
  EXPECT_EQ(client.connections(), 0u);

  ASSERT_TRUE(collector.Start()) << collector.Log();
  ASSERT_TRUE(WaitFor(&client, &model,
                      [&] { return model.state() == ConnectionModel::State::kLive; }))
      << "still " << model.Text() << "\n" << collector.Log();
  EXPECT_EQ(client.connections(), 1u);
  // The views learn it from a history fetch after the connection.
  bool history = false;
  for (absl::Time deadline = absl::Now() + absl::Seconds(60); !history && absl::Now() < deadline;) {
    if (std::optional<FeedCoalescer::Delta> delta = coalescer.Take()) {
      history = delta->reset || !delta->notices.empty();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(history);
  client.Stop();
}

TEST_F(LiveFeedReconnectTest, CurveCollectorIsFollowedWithTheViewersSecurityAndNotWithout) {
  absl::StatusOr<security::CurveKeyPair> server = security::GenerateCurveKeyPair();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(security::WriteCurveKeyPair(*server, (dir_ / "server").string()).ok());
  CollectorProcess collector(dir_, {"--curve_secret_key=" + (dir_ / "server.key").string()});
  ASSERT_TRUE(collector.Start()) << collector.Log();

  // Without the collector's key: never live, it keeps retrying.
  {
    FeedCoalescer coalescer;
    LiveFeedClient plain(ClientOptions(collector), &coalescer);
    ConnectionModel model;
    bool ever_live = false;
    plain.Start();
    ASSERT_TRUE(WaitFor(&plain, &model, [&] {
      ever_live |= model.state() == ConnectionModel::State::kLive;
      return plain.link().attempts >= 2;
    })) << model.Text();
    EXPECT_FALSE(ever_live);
    EXPECT_EQ(plain.connections(), 0u);
    plain.Stop();
  }

  // With it (what --curve-server-key resolves to): live.
  LiveFeedClient::Options options = ClientOptions(collector);
  options.security.curve_server_key = server->public_key;
  absl::StatusOr<security::CurveKeyPair> mine = security::GenerateCurveKeyPair();
  ASSERT_TRUE(mine.ok()) << mine.status();
  options.security.curve_client = *mine;
  FeedCoalescer coalescer;
  LiveFeedClient secured(options, &coalescer);
  ConnectionModel model;
  secured.Start();
  EXPECT_TRUE(WaitFor(&secured, &model,
                      [&] { return model.state() == ConnectionModel::State::kLive; }))
      << model.Text() << "\n" << collector.Log();
  secured.Stop();
}

#ifdef TRAINSCOPE_LOADGEN_BIN  // built with the load generator

// trainscope-loadgen's two ranks of "reconnect-job" streaming to
// `collector`, killed and reaped however the test ends (a failed ASSERT
// returns early).
class JobRanks {
 public:
  JobRanks(const CollectorProcess& collector, const fs::path& dir)
      : pid_(Spawn({TRAINSCOPE_LOADGEN_BIN, "--collector", collector.agents(), "--job",
                    "reconnect-job", "--streams", "2", "--rate", "400", "--run-for-ms", "300000"},
                   dir / "loadgen.log")) {}
  ~JobRanks() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_;
};

// The whole chain the window runs, without a window: each tick feeds the
// client's deltas into a ViewerState and its link into the ConnectionModel,
// which the state shows (MainWindow's frame timer does the same).
class ViewerModels {
 public:
  explicit ViewerModels(LiveFeedClient::Options options)
      : client_(std::move(options), &coalescer_),
        model_({.stale_after_ns = 3'000'000'000, .disconnected_after_ns = 8'000'000'000}) {
    client_.Start();
  }
  ~ViewerModels() { client_.Stop(); }

  // Ticks until `done` holds (true) or 90 s pass (false).
  bool Follow(const std::function<bool()>& done) {
    for (absl::Time deadline = absl::Now() + absl::Seconds(90); absl::Now() < deadline;) {
      model_.Observe(client_.link(), absl::ToUnixNanos(absl::Now()));
      if (std::optional<FeedCoalescer::Delta> delta = coalescer_.Take()) {
        state_.Apply(std::move(*delta));
      }
      state_.ShowConnection(model_);
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }
  bool Live() const { return model_.state() == ConnectionModel::State::kLive; }
  // The job's row in the Jobs table (empty before it is known).
  JobsModel::Row Row() const {
    for (const JobsModel::Row& row : state_.jobs.Rows()) {
      if (row.job_id == "reconnect-job") return row;
    }
    return {};
  }
  uint64_t NewestStep() const { return Row().newest_step.value_or(0); }
  std::string Describe() const {
    return model_.Text() + ", newest step " + std::to_string(NewestStep()) + ", job " + Row().state;
  }

  const ConnectionModel& model() const { return model_; }
  const ViewerState& state() const { return state_; }
  const LiveFeedClient& client() const { return client_; }

 private:
  FeedCoalescer coalescer_;
  LiveFeedClient client_;
  ConnectionModel model_;
  ViewerState state_;
};

// Under a real job the collector is killed: the job is greyed with the age
// of its data and the overview has an open outage; it restarts on the same
// ports and data: the viewer is live again by itself, the outage is closed,
// and the job's new steps reach the views.
TEST_F(LiveFeedReconnectTest, AViewerFollowingARealJobShowsTheOutageAndCatchesUpAfterARestart) {
  CollectorProcess collector(dir_);
  ASSERT_TRUE(collector.Start()) << collector.Log();
  JobRanks ranks(collector, dir_);
  ASSERT_TRUE(ranks.started());
  ViewerModels viewer(ClientOptions(collector));

  ASSERT_TRUE(viewer.Follow([&] { return viewer.Live() && viewer.NewestStep() >= 5; }))
      << viewer.Describe() << "\n"
      << collector.Log();
  EXPECT_EQ(viewer.Row().state, "running");
  EXPECT_FALSE(viewer.Row().stale);
  EXPECT_GE(viewer.state().overview.step_count(), 1u);
  EXPECT_TRUE(viewer.state().overview.gaps().empty());

  collector.Kill();
  ASSERT_TRUE(viewer.Follow([&] { return ShowsTheFeedGone(viewer.model()) && viewer.Row().stale; }))
      << "still " << viewer.Describe();
  const uint64_t before = viewer.NewestStep();
  EXPECT_EQ(viewer.Row().state.rfind("last seen running ", 0), 0u) << viewer.Row().state;
  EXPECT_FALSE(viewer.Row().steps_per_second.has_value());
  ASSERT_EQ(viewer.state().overview.gaps().size(), 1u);
  EXPECT_EQ(viewer.state().overview.gaps()[0].end_ns, 0);  // still going on

  ASSERT_TRUE(collector.Start()) << collector.Log();
  ASSERT_TRUE(viewer.Follow([&] { return viewer.Live() && viewer.NewestStep() >= before + 5; }))
      << "still " << viewer.Describe() << " (" << before << " before the kill)\n"
      << collector.Log();
  EXPECT_FALSE(viewer.Row().stale) << viewer.Row().state;
  EXPECT_EQ(viewer.Row().state, "running");
  ASSERT_EQ(viewer.state().overview.gaps().size(), 1u);
  EXPECT_GT(viewer.state().overview.gaps()[0].end_ns, viewer.state().overview.gaps()[0].start_ns);
  EXPECT_GE(viewer.client().connections(), 2u);
}

// Issue 23.1: a viewer started before its collector said "no snapshot
// within 10s" and, a whole job later, still "No steps yet". Now it retries
// until the collector is up and the job's steps reach the views.
TEST_F(LiveFeedReconnectTest, AViewerStartedBeforeItsCollectorShowsTheJobOnceItRuns) {
  CollectorProcess collector(dir_);
  ASSERT_TRUE(collector.Start()) << collector.Log();  // learns free ports
  collector.Kill();
  ViewerModels viewer(ClientOptions(collector));
  ASSERT_TRUE(viewer.Follow([&] {
    return viewer.model().state() == ConnectionModel::State::kRetrying &&
           viewer.client().link().attempts >= 2;
  })) << viewer.Describe();
  EXPECT_EQ(viewer.NewestStep(), 0u);

  ASSERT_TRUE(collector.Start()) << collector.Log();
  JobRanks ranks(collector, dir_);
  ASSERT_TRUE(ranks.started());
  ASSERT_TRUE(viewer.Follow([&] { return viewer.Live() && viewer.NewestStep() >= 5; }))
      << "still " << viewer.Describe() << "\n"
      << collector.Log();
  EXPECT_EQ(viewer.Row().state, "running");
  EXPECT_GE(viewer.state().overview.step_count(), 1u);
}

#endif  // TRAINSCOPE_LOADGEN_BIN

}  // namespace
}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_COLLECTOR_BIN
