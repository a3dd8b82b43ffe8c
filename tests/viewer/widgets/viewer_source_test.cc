#include "trainscope/viewer/widgets/viewer_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainscope/viewer/widgets/viewer_flags.h"

namespace trainscope::viewer {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<ViewerSource> Load(std::vector<std::string> arguments) {
  absl::StatusOr<base::ParsedArgs> args = ViewerFlags().Parse(arguments);
  if (!args.ok()) return args.status();
  return LoadViewerSource(*args);
}

TEST(ViewerSourceTest, ExactlyOneSourceMustBeChosen) {
  for (const std::vector<std::string>& arguments :
       {std::vector<std::string>{}, {"--synthetic", "--data-dir=/tmp", "--job=j"}}) {
    absl::StatusOr<ViewerSource> source = Load(arguments);
    ASSERT_FALSE(source.ok());
    EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(source.status().message(), HasSubstr("choose one source"));
  }
}

TEST(ViewerSourceTest, ASyntheticJobHasTheAskedShape) {
  absl::StatusOr<ViewerSource> source =
      Load({"--synthetic", "--synthetic-devices=8", "--synthetic-stages=2", "--synthetic-steps=5",
            "--job=shape"});
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(source->source, "synthetic");
  EXPECT_FALSE(source->live);
  EXPECT_EQ(source->data.job.job_id, "shape");
  EXPECT_EQ(source->data.devices.size(), 8u);
  EXPECT_FALSE(source->data.steps.empty());
}

TEST(ViewerSourceTest, BadSyntheticShapesNameTheFlagAndTheJob) {
  struct Case {
    std::vector<std::string> arguments;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--synthetic", "--synthetic-devices=6", "--synthetic-stages=4"},
            "--synthetic-stages 4 must divide --synthetic-devices 6"},
           {{"--synthetic", "--synthetic-devices=4", "--straggler=4"},
            "--straggler 4 is not a rank of the 4-device synthetic job"},
           {{"--synthetic", "--synthetic-devices=4", "--slow-link=1:1"},
            "--slow-link 1:1: expected SRC:DST"},
       }) {
    absl::StatusOr<ViewerSource> source = Load(c.arguments);
    ASSERT_FALSE(source.ok()) << c.message;
    EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(source.status().message(), HasSubstr(c.message));
  }
}

TEST(ViewerSourceTest, StoredAndLiveSourcesNeedTheirFlags) {
  absl::StatusOr<ViewerSource> no_job = Load({"--feed=tcp://127.0.0.1:1"});
  ASSERT_FALSE(no_job.ok());
  EXPECT_THAT(no_job.status().message(), HasSubstr("--job JOB is required"));

  absl::StatusOr<ViewerSource> steps_live =
      Load({"--feed=tcp://127.0.0.1:1", "--job=j", "--steps=1-2"});
  ASSERT_FALSE(steps_live.ok());
  EXPECT_THAT(steps_live.status().message(), HasSubstr("--steps: only with --data-dir"));

  absl::StatusOr<ViewerSource> missing = Load({"--data-dir=/nonexistent/trainscope", "--job=j"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/trainscope"));
}

TEST(ViewerSourceTest, ALiveSourceWithoutRenderOnlyNamesItsJob) {
  absl::StatusOr<ViewerSource> source = Load({"--feed=tcp://127.0.0.1:1", "--job=live"});
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE(source->live);
  EXPECT_EQ(source->source, "tcp://127.0.0.1:1");
  EXPECT_EQ(source->data.job.job_id, "live");
  EXPECT_TRUE(source->data.steps.empty());
}

}  // namespace
}  // namespace trainscope::viewer
