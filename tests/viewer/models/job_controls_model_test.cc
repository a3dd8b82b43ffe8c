// What the Controls panel offers per job state, and the token prompt
// (issue 23.5: halt offered on a finished job; a token dialog that suggested
// --data-dir, which opens the viewer offline).
#include "trainscope/viewer/job_controls_model.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "trainscope/viewer/connection_model.h"

namespace trainscope::viewer {
namespace {

TEST(JobControlsModelTest, HaltIsOfferedOnlyWhileTheJobCanStillBeHalted) {
  JobControlsModel controls(/*online=*/true, "digits");
  for (JobStateKind state :
       {JobStateKind::kUnknown, JobStateKind::kRunning, JobStateKind::kIdle, JobStateKind::kLost}) {
    controls.SetJobState(state);
    EXPECT_TRUE(controls.Halt().enabled) << JobStateName(state);
    EXPECT_TRUE(controls.Switch("enable").enabled) << JobStateName(state);
  }
  controls.SetJobState(JobStateKind::kFinished);
  JobControlsModel::Button halt = controls.Halt();
  EXPECT_FALSE(halt.enabled);
  EXPECT_NE(halt.tooltip.find("finished"), std::string::npos) << halt.tooltip;
  EXPECT_NE(halt.tooltip.find("digits"), std::string::npos) << halt.tooltip;
  EXPECT_FALSE(controls.Switch("enable-loss-contribution").enabled);

  controls.SetJobState(JobStateKind::kHalted);
  halt = controls.Halt();
  EXPECT_FALSE(halt.enabled);
  EXPECT_NE(halt.tooltip.find("halted already"), std::string::npos) << halt.tooltip;
  EXPECT_TRUE(controls.Switch("disable").enabled);  // ranks may still run to the halt step
}

TEST(JobControlsModelTest, OfflineOffersNothingAndSaysWhy) {
  JobControlsModel controls(/*online=*/false, "digits");
  controls.SetJobState(JobStateKind::kRunning);
  EXPECT_FALSE(controls.Halt().enabled);
  EXPECT_NE(controls.Halt().tooltip.find("Offline"), std::string::npos);
  EXPECT_FALSE(controls.Switch("enable").enabled);
}

TEST(JobControlsModelTest, TheTokenPromptSaysWhichTokenAndWhereNotDataDir) {
  const std::string prompt = JobControlsModel::TokenPrompt("digits", "halt", "");
  EXPECT_EQ(prompt.find("--data-dir"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("token of job digits"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("jobs/digits/token"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("--token-file"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("TRAINSCOPE_TOKEN"), std::string::npos) << prompt;
  // A source that was given and failed is named.
  const std::string why = JobControlsModel::TokenPrompt(
      "digits", "halt", "token file /tmp/t is empty (expected the token on its first line)");
  EXPECT_NE(why.find("token file /tmp/t is empty"), std::string::npos) << why;
}

// Issue 23.1: with the collector gone the Controls bar kept saying "step N
// (newest)"; the step followed is only the last one seen until the feed is back.
TEST(JobControlsModelTest, TheFollowedStepIsTheLastSeenWhileTheFeedIsGone) {
  constexpr int64_t kS = 1'000'000'000;
  constexpr int64_t kT0 = 1'700'000'000 * kS;
  JobControlsModel controls(/*online=*/true, "digits");
  ConnectionModel connection;
  LinkReport live;
  live.phase = LinkReport::Phase::kFollowing;
  live.last_contact_ns = kT0;
  live.last_update_ns = kT0;
  EXPECT_EQ(controls.SelectionText(std::nullopt, /*following=*/true), "no step yet");

  connection.Observe(live, kT0);
  controls.SetFeedStale(connection.data_stale());
  EXPECT_EQ(controls.SelectionText(41, /*following=*/true), "step 41 (newest)");

  // 40 s without a message: the collector is gone.
  connection.Observe(live, kT0 + 40 * kS);
  ASSERT_EQ(connection.state(), ConnectionModel::State::kDisconnected);
  controls.SetFeedStale(connection.data_stale());
  EXPECT_EQ(controls.SelectionText(41, /*following=*/true), "step 41 (last seen)");
  // A pinned step is the user's choice, whatever the feed does.
  EXPECT_EQ(controls.SelectionText(30, /*following=*/false), "step 30 (pinned)");

  // Back: newest again.
  live.last_contact_ns = live.last_update_ns = kT0 + 50 * kS;
  connection.Observe(live, kT0 + 50 * kS);
  controls.SetFeedStale(connection.data_stale());
  EXPECT_EQ(controls.SelectionText(97, /*following=*/true), "step 97 (newest)");
}

}  // namespace
}  // namespace trainscope::viewer
