#include "trainscope/collector/analysis/rules_config.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

TEST(RulesConfigTest, DefaultsFillEveryRule) {
  v1::RulesConfig c = WithDefaults(v1::RulesConfig());
  EXPECT_EQ(c.warmup_steps(), 5u);
  EXPECT_EQ(c.window_steps(), 5u);
  EXPECT_EQ(c.hysteresis().raise_after_steps(), 2u);
  EXPECT_EQ(c.hysteresis().clear_after_steps(), 3u);
  EXPECT_TRUE(c.low_flops().enabled());
  EXPECT_DOUBLE_EQ(c.low_flops().below_mean(), 0.4);
  EXPECT_EQ(c.low_flops().window_steps(), 20u);
  EXPECT_DOUBLE_EQ(c.stage_flops_imbalance().above_mean(), 0.2);
  EXPECT_DOUBLE_EQ(c.straggler().z_threshold(), 2.5);
  EXPECT_EQ(c.straggler().window_steps(), 5u);  // the top-level window
  EXPECT_DOUBLE_EQ(c.straggler().min_excess(), 0.3);
  EXPECT_EQ(c.straggler().hysteresis().raise_after_steps(), 1u);
  EXPECT_DOUBLE_EQ(c.straggler().streak_excess(), 0.6);
  EXPECT_DOUBLE_EQ(c.straggler().streak_wait_fraction(), 0.25);
  EXPECT_EQ(c.straggler().warmup_steps(), 3u);
  EXPECT_DOUBLE_EQ(c.collective_wait().min_wait_fraction(), 0.35);
  EXPECT_EQ(c.collective_wait().streak_steps(), 3u);
  EXPECT_DOUBLE_EQ(c.collective_wait().sustained_wait_fraction(), 0.12);
  EXPECT_EQ(c.collective_wait().sustained_steps(), 20u);
  EXPECT_EQ(c.collective_wait().hysteresis().raise_after_steps(), 1u);
  EXPECT_DOUBLE_EQ(c.collective_wait().late_arrival_reference(), 0.08);
  EXPECT_DOUBLE_EQ(c.collective_wait().late_arrival_threshold(), 0.5);
  EXPECT_DOUBLE_EQ(c.collective_wait().late_arrival_frequency_threshold(), 8);
  EXPECT_EQ(c.collective_wait().late_arrival_clear_steps(), 3u);
  EXPECT_DOUBLE_EQ(c.slow_link().below_median(), 0.5);
  EXPECT_EQ(c.slow_link().min_bytes(), 4096u);
  EXPECT_DOUBLE_EQ(c.slow_link().p2p_below_median(), 0.1);
  EXPECT_DOUBLE_EQ(c.pipeline_bubble().bubble_fraction(), 0.3);
  EXPECT_DOUBLE_EQ(c.pipeline_bubble().compute_above_mean(), 0.4);
  EXPECT_DOUBLE_EQ(c.pipeline_bubble().bubble_above_mean(), 0.5);
  EXPECT_DOUBLE_EQ(c.loader_stall().wait_fraction(), 0.2);
  EXPECT_EQ(c.loader_stall().min_wait_ns(), 5'000'000);
  EXPECT_DOUBLE_EQ(c.step_time_regression().rise(), 0.5);
  EXPECT_DOUBLE_EQ(c.step_time_regression().sustained_rise(), 0.25);
  EXPECT_EQ(c.step_time_regression().sustained_steps(), 20u);
  EXPECT_EQ(c.step_time_regression().baseline_steps(), 20u);
  EXPECT_EQ(c.step_time_regression().warmup_steps(), 5u);
  EXPECT_TRUE(c.lost_device().enabled());
  EXPECT_EQ(c.lost_device().missing_steps(), 1u);
  EXPECT_EQ(c.slow_link().hysteresis().raise_after_steps(), 2u);
  EXPECT_EQ(c.loader_stall().hysteresis().clear_after_steps(), 3u);
}

TEST(RulesConfigTest, ParsesOverridesAndRuleHysteresisFallsBackToTopLevel) {
  absl::StatusOr<v1::RulesConfig> parsed = ParseRulesConfig(
      "# comment\n"
      "straggler { z_threshold: 4 window_steps: 30 hysteresis { clear_after_steps: 7 } }\n"
      "loader_stall { enabled: false }\n"
      "hysteresis { raise_after_steps: 4 }\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  v1::RulesConfig c = WithDefaults(*parsed);
  EXPECT_DOUBLE_EQ(c.straggler().z_threshold(), 4);
  EXPECT_EQ(c.straggler().window_steps(), 30u);
  EXPECT_DOUBLE_EQ(c.straggler().min_excess(), 0.3);
  EXPECT_FALSE(c.loader_stall().enabled());
  EXPECT_TRUE(c.slow_link().enabled());
  EXPECT_EQ(c.straggler().hysteresis().raise_after_steps(), 4u);
  EXPECT_EQ(c.straggler().hysteresis().clear_after_steps(), 7u);
  EXPECT_EQ(c.low_flops().hysteresis().raise_after_steps(), 4u);
  EXPECT_EQ(c.low_flops().hysteresis().clear_after_steps(), 3u);
}

TEST(RulesConfigTest, UnknownFieldNamesLineAndColumn) {
  absl::StatusOr<v1::RulesConfig> parsed =
      ParseRulesConfig("straggler {\n  z_threshold: 4\n  bogus_field: 1\n}\n");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), ::testing::ContainsRegex("^3:[0-9]+: "));
  EXPECT_THAT(parsed.status().message(), HasSubstr("bogus_field"));
}

TEST(RulesConfigTest, WrongValueTypeNamesLineAndColumn) {
  absl::StatusOr<v1::RulesConfig> parsed =
      ParseRulesConfig("slow_link {\n  below_median: \"half\"\n}\n");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()), ::testing::ContainsRegex("^2:[0-9]+: "));
  EXPECT_THAT(parsed.status().message(), HasSubstr("Expected double"));
}

TEST(RulesConfigTest, OutOfRangeValuesNameTheFieldAndWhatWasExpected) {
  struct Case {
    const char* text;
    const char* field;
    const char* expected;
  };
  for (const Case& c : {
           Case{"straggler { window_steps: 1 }", "straggler.window_steps", ">= 2"},
           Case{"low_flops { below_mean: 1.5 }", "low_flops.below_mean", "(0, 1)"},
           Case{"loader_stall { wait_fraction: 0 }", "loader_stall.wait_fraction", "(0, 1]"},
           Case{"loader_stall { min_wait_ns: -5 }", "loader_stall.min_wait_ns", ">= 0"},
           Case{"collective_wait { streak_steps: 0 }", "collective_wait.streak_steps", ">= 1"},
           Case{"hysteresis { raise_after_steps: 0 }", "hysteresis.raise_after_steps", ">= 1"},
           Case{"slow_link { hysteresis { clear_after_steps: 0 } }",
                "slow_link.hysteresis.clear_after_steps", ">= 1"},
           Case{"step_time_regression { rise: -0.1 }", "step_time_regression.rise", "> 0"},
           Case{"slow_link { p2p_below_median: 1 }", "slow_link.p2p_below_median", "(0, 1)"},
           Case{"lost_device { missing_steps: 0 }", "lost_device.missing_steps", ">= 1"},
       }) {
    absl::StatusOr<v1::RulesConfig> parsed = ParseRulesConfig(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.field)) << c.text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.expected)) << c.text;
  }
}

TEST(RulesConfigTest, DefaultTextParsesBackToTheDefaults) {
  const std::string text = DefaultRulesText();
  EXPECT_THAT(text, HasSubstr("straggler {"));
  absl::StatusOr<v1::RulesConfig> parsed = ParseRulesConfig(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(*parsed, WithDefaults(v1::RulesConfig()))) << diff;
}

TEST(RulesConfigTest, KnownRuleNamesListTheBuiltInRules) {
  std::vector<std::string> names = KnownRuleNames();
  EXPECT_EQ(names.size(), 13u);
  EXPECT_THAT(names, ::testing::Contains("difficult_item"));
  EXPECT_THAT(names, ::testing::Contains("launch_bound"));
  EXPECT_THAT(names, ::testing::Contains("copy_stall"));
  EXPECT_THAT(names, ::testing::Contains("slow_kernels"));
  EXPECT_THAT(names, ::testing::Contains("straggler"));
  EXPECT_THAT(names, ::testing::Contains("lost_device"));
  EXPECT_THAT(names, ::testing::Contains("stage_flops_imbalance"));
}

class RulesFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rules_config_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path Write(const std::string& name, const std::string& text) {
    std::filesystem::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(RulesFileTest, LoadsAFile) {
  absl::StatusOr<v1::RulesConfig> c = LoadRulesFile(Write("ok.txt", "warmup_steps: 9\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->warmup_steps(), 9u);
}

TEST_F(RulesFileTest, MissingFileIsNotFoundNamingThePath) {
  absl::StatusOr<v1::RulesConfig> c = LoadRulesFile(dir_ / "absent.txt");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("absent.txt"));
}

TEST_F(RulesFileTest, BadFileNamesPathLineAndColumn) {
  absl::StatusOr<v1::RulesConfig> c = LoadRulesFile(Write("bad.txt", "\nstraggler { z: 1 }\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), ::testing::ContainsRegex("bad.txt:2:[0-9]+: "));
  EXPECT_THAT(c.status().message(), HasSubstr("\"z\""));
}

}  // namespace
}  // namespace trainscope::collector
