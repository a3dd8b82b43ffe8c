#include "trainscope/viewer/marey_view.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(MareyViewTest, ThePlotIsWhatTheMarginsLeaveAndTimesMapBothWays) {
  MareyView view;
  view.Resize(1200, 700);
  EXPECT_FLOAT_EQ(view.plot.x, MareyView::kLeftMargin);
  EXPECT_FLOAT_EQ(view.plot.w, 1200 - MareyView::kLeftMargin - MareyView::kRightMargin);
  EXPECT_FLOAT_EQ(view.plot.h, 700 - MareyView::kTopMargin - MareyView::kBottomMargin);
  view.start = 1'000'000;
  view.end = 2'000'000;
  EXPECT_FLOAT_EQ(view.TimeToX(1'000'000), view.plot.x);
  EXPECT_FLOAT_EQ(view.TimeToX(2'000'000), view.plot.x + view.plot.w);
  EXPECT_NEAR(static_cast<double>(view.XToTime(view.TimeToX(1'250'000))), 1'250'000.0, 1000.0);
  // The pixel map sits right of the plot.
  EXPECT_GT(view.PixelMapX(0), view.plot.x + view.plot.w);
  EXPECT_FLOAT_EQ(view.PixelMapX(2) - view.PixelMapX(1), MareyView::kPixelMapColumn);
}

TEST(MareyViewTest, TinyWidgetsKeepAMinimumPlot) {
  MareyView view;
  view.Resize(10, 10);
  EXPECT_EQ(view.width, 320);
  EXPECT_EQ(view.height, 200);
  EXPECT_GT(view.plot.w, 0);
  EXPECT_GT(view.plot.h, 0);
}

}  // namespace
}  // namespace trainscope::viewer
