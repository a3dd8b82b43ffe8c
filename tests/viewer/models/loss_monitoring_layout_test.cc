#include "trainscope/viewer/loss_monitoring_layout.h"

#include <gtest/gtest.h>

#include "trainscope/viewer/loss_drawing.h"

namespace trainscope::viewer {
namespace {

bool HasTextStartingWith(const DrawList& list, const std::string& prefix) {
  for (const Text& t : list.texts) {
    if (t.text.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

LossFrame TwoLayerFrame() {
  LossFrame frame;
  frame.item = 1432;
  frame.place = 2;
  frame.count = 3;
  frame.index = 1;
  frame.iteration = 300;
  frame.label = 4;
  frame.prediction = 9;
  LossColumn conv1;
  conv1.layer = "conv1";
  conv1.height = conv1.width = 8;
  conv1.present = true;
  conv1.contribution.assign(64, 1.0f);
  conv1.reduction.assign(64, 0.5f);
  LossColumn conv2;
  conv2.layer = "conv2";  // not in this snapshot
  frame.columns = {conv1, conv2};
  frame.scale_max = 2;
  frame.frame_max = 1;
  return frame;
}

TEST(LossMonitoringLayoutTest, WithoutAFrameItShowsThePlaceholder) {
  LossMonitoringLayout layout;
  layout.Lay({.width = 800, .height = 400});
  EXPECT_TRUE(HasTextStartingWith(layout.list(), loss_drawing::kNoDataText));
  EXPECT_TRUE(layout.geometry().columns.empty());
}

TEST(LossMonitoringLayoutTest, OneColumnPerLayerWithCAboveRAndOneColourBar) {
  LossStateRecord state;
  state.items.resize(12);
  LossMonitoringLayout layout;
  layout.Lay({.width = 1200, .height = 520, .frame = TwoLayerFrame(), .state = &state});
  const LossMonitoringGeometry& geometry = layout.geometry();
  ASSERT_EQ(geometry.columns.size(), 2u);
  const LossColumn& conv1 = geometry.columns[0];
  EXPECT_GT(conv1.reduction_rect.y, conv1.contribution_rect.y);
  EXPECT_EQ(conv1.contribution_rect.w, conv1.reduction_rect.w);
  EXPECT_GT(geometry.columns[1].contribution_rect.x, conv1.contribution_rect.x);
  EXPECT_GT(geometry.colorbar_contribution.x, geometry.columns[1].contribution_rect.x);
  EXPECT_GT(geometry.colorbar_reduction.x, geometry.colorbar_contribution.x);
  EXPECT_TRUE(HasTextStartingWith(layout.list(),
                                  "Monitoring view \xE2\x80\x94 item 1432 (#2 of "
                                  "the top 12)"));
  EXPECT_TRUE(HasTextStartingWith(layout.list(), "iteration 300"));
  EXPECT_TRUE(HasTextStartingWith(layout.list(), "no map"));  // conv2's place
  // Both maps of conv1 plus the two colour bar strips; the input has no image.
  EXPECT_EQ(layout.list().images.size(), 4u);
}

TEST(LossMonitoringLayoutTest, WhileFetchingTheSubtitleSaysSo) {
  LossFrame frame = TwoLayerFrame();
  frame.count = 0;
  LossMonitoringLayout layout;
  layout.Lay({.width = 1000, .height = 500, .frame = frame, .fetching = true});
  EXPECT_TRUE(HasTextStartingWith(layout.list(), "fetching item 1432's map snapshots"));
}

}  // namespace
}  // namespace trainscope::viewer
