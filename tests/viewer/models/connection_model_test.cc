#include "trainscope/viewer/connection_model.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;  // an injected wall clock

using State = ConnectionModel::State;
using Phase = LinkReport::Phase;

LinkReport Following(int64_t contact, int64_t update) {
  LinkReport report;
  report.phase = Phase::kFollowing;
  report.last_contact_ns = contact;
  report.last_update_ns = update;
  return report;
}

TEST(ConnectionModelTest, ConnectingUntilTheFirstContact) {
  ConnectionModel model;
  model.Observe({}, kT0);
  EXPECT_EQ(model.state(), State::kConnecting);
  EXPECT_FALSE(model.data_stale());
  EXPECT_EQ(model.Text(), "connecting");
}

TEST(ConnectionModelTest, ViewerStartedBeforeItsCollectorRetriesThenGoesLive) {
  ConnectionModel model;
  LinkReport report;
  report.phase = Phase::kRetrying;
  report.attempts = 3;
  report.error = "no snapshot within 10s";
  model.Observe(report, kT0);
  EXPECT_EQ(model.state(), State::kRetrying);
  EXPECT_EQ(model.Text(), "retrying (attempt 4): no snapshot within 10s \xC2\xB7 no update yet");
  EXPECT_FALSE(model.data_stale());  // nothing shown yet, nothing to grey
  model.Observe(Following(kT0 + 60 * kS, kT0 + 60 * kS), kT0 + 61 * kS);
  EXPECT_EQ(model.state(), State::kLive);
  EXPECT_EQ(model.Text(), "live \xC2\xB7 last update 1 s ago");
  EXPECT_TRUE(model.outages().empty());  // no data was drawn before: no gap to mark
}

TEST(ConnectionModelTest, SilentFeedGoesStaleThenDisconnectedAndMarksTheOutage) {
  ConnectionModel model({.stale_after_ns = 5 * kS, .disconnected_after_ns = 15 * kS});
  model.Observe(Following(kT0, kT0), kT0);
  ASSERT_EQ(model.state(), State::kLive);
  model.Observe(Following(kT0, kT0), kT0 + 5 * kS);
  EXPECT_EQ(model.state(), State::kLive);  // at the threshold still live
  model.Observe(Following(kT0, kT0), kT0 + 6 * kS);
  EXPECT_EQ(model.state(), State::kStale);
  EXPECT_TRUE(model.data_stale());
  EXPECT_EQ(model.Text(), "stale \xC2\xB7 last update 6 s ago");
  ASSERT_EQ(model.outages().size(), 1u);
  EXPECT_EQ(model.outages()[0].start_ns, kT0);
  EXPECT_EQ(model.outages()[0].end_ns, 0);  // still going on
  model.Observe(Following(kT0, kT0), kT0 + 40 * kS);
  EXPECT_EQ(model.state(), State::kDisconnected);
  EXPECT_EQ(model.Text(), "disconnected \xC2\xB7 last update 40 s ago");
  EXPECT_EQ(model.outages().size(), 1u);  // one outage, not one per state

  // The feed thread gives up on the link and retries.
  LinkReport retry = Following(kT0, kT0);
  retry.phase = Phase::kRetrying;
  retry.error = "collector not answering";
  model.Observe(retry, kT0 + 41 * kS);
  EXPECT_EQ(model.state(), State::kRetrying);
  EXPECT_TRUE(model.data_stale());

  // Back: the outage closes at the first contact after it.
  model.Observe(Following(kT0 + 50 * kS, kT0 + 50 * kS), kT0 + 50 * kS);
  EXPECT_EQ(model.state(), State::kLive);
  EXPECT_FALSE(model.data_stale());
  ASSERT_EQ(model.outages().size(), 1u);
  EXPECT_EQ(model.outages()[0].start_ns, kT0);
  EXPECT_EQ(model.outages()[0].end_ns, kT0 + 50 * kS);
}

TEST(ConnectionModelTest, AnsweredProbesKeepAQuietJobLiveButTheUpdateAgeGrows) {
  ConnectionModel model;
  // The collector answers probes, no feed message for 30 s: live, and says how old the data is.
  model.Observe(Following(kT0 + 29 * kS, kT0), kT0 + 30 * kS);
  EXPECT_EQ(model.state(), State::kLive);
  EXPECT_EQ(model.update_age_s(), 30);
}

TEST(ConnectionModelTest, VersionChangesOnlyWhenWhatIsShownChanges) {
  ConnectionModel model;
  model.Observe(Following(kT0, kT0), kT0);
  const uint64_t version = model.version();
  model.Observe(Following(kT0, kT0), kT0 + kS / 2);  // same second, same state
  EXPECT_EQ(model.version(), version);
  model.Observe(Following(kT0, kT0), kT0 + 2 * kS);  // the age shown changes
  EXPECT_GT(model.version(), version);
}

}  // namespace
}  // namespace trainscope::viewer
