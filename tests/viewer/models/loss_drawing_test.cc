#include "trainscope/viewer/loss_drawing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace trainscope::viewer {
namespace {

TEST(LossDrawingTest, ImagesScaleByWholeMultiples) {
  EXPECT_EQ(loss_drawing::FitSide(100, 8), 96);
  EXPECT_EQ(loss_drawing::FitSide(5, 8), 5);  // below one pixel per pixel
  EXPECT_EQ(loss_drawing::FitSide(-3, 8), 0);
  // A 28 x 14 image in a 100 px square: 3 px per pixel, centred on x = 50.
  const RectF rect = loss_drawing::FitImage(28, 14, 100, 50, 10);
  EXPECT_EQ(rect.w, 84);
  EXPECT_EQ(rect.h, 42);
  EXPECT_EQ(rect.x, 8);
  EXPECT_EQ(rect.y, 10);
}

TEST(LossDrawingTest, TextsHaveThreeSignificantDigitsAndUnknownClassesAQuestionMark) {
  EXPECT_EQ(loss_drawing::FormatValue(0.012345), "0.0123");
  EXPECT_EQ(loss_drawing::FormatValue(1250), "1.25e+03");
  EXPECT_EQ(loss_drawing::ClassText(-1), "?");
  EXPECT_EQ(loss_drawing::ClassText(7), "7");
}

TEST(LossDrawingTest, RampsRunFromWhiteToTheirDarkestAndClampOutsideTheScale) {
  EXPECT_EQ(loss_drawing::ContributionColor(0), Rgba(255, 255, 255));
  EXPECT_EQ(loss_drawing::ContributionColor(1), Rgba(103, 0, 13));
  EXPECT_EQ(loss_drawing::ReductionColor(2), Rgba(8, 48, 107));
  EXPECT_EQ(loss_drawing::ReductionColor(std::nanf("")), Rgba(255, 255, 255));
}

TEST(LossDrawingTest, MapsGoThroughTheRampAndBrokenValuesShowGrey) {
  const std::vector<float> values = {0, 2, 4, std::numeric_limits<float>::quiet_NaN()};
  const PixelImage image =
      loss_drawing::MapImage(values, 2, 2, 4, &loss_drawing::ContributionColor, {0, 0, 20, 20});
  ASSERT_EQ(image.pixels.size(), 4u);
  EXPECT_EQ(image.pixels[0], loss_drawing::ContributionColor(0));
  EXPECT_EQ(image.pixels[1], loss_drawing::ContributionColor(0.5f));
  EXPECT_EQ(image.pixels[2], loss_drawing::ContributionColor(1));
  EXPECT_EQ(image.pixels[3], Rgba(160, 160, 160));
}

TEST(LossDrawingTest, ThumbnailsKeepGreyAndColourPixels) {
  ThumbnailRecord grey{.height = 1, .width = 2, .channels = 1, .pixels = {10, 200}};
  PixelImage image = loss_drawing::ThumbnailImage(grey, {});
  EXPECT_EQ(image.pixels, (std::vector<Color>{Rgba(10, 10, 10), Rgba(200, 200, 200)}));
  ThumbnailRecord broken{.height = 2, .width = 2, .channels = 1, .pixels = {1}};
  EXPECT_TRUE(loss_drawing::ThumbnailImage(broken, {}).pixels.empty());
}

TEST(LossDrawingTest, ThePlaceholderSaysWhatIsMissingInTheMiddle) {
  DrawList list;
  loss_drawing::AddPlaceholder(&list, 400, 200, "Selection view", loss_drawing::kNoDataText);
  ASSERT_EQ(list.texts.size(), 2u);
  EXPECT_EQ(list.texts[0].text, "Selection view");
  EXPECT_EQ(list.texts[1].x, 200);
  EXPECT_EQ(list.texts[1].text, loss_drawing::kNoDataText);
}

}  // namespace
}  // namespace trainscope::viewer
