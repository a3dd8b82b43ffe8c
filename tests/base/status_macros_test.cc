#include "trainscope/base/status_macros.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace trainscope {
namespace {

absl::Status FailIf(bool fail, int* calls) {
  ++*calls;
  return fail ? absl::NotFoundError("missing") : absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> MakeOrFail(bool fail, int value) {
  if (fail) return absl::InvalidArgumentError("bad value");
  return std::make_unique<int>(value);
}

absl::Status TwoSteps(bool fail_first, bool fail_second, int* calls) {
  RETURN_IF_ERROR(FailIf(fail_first, calls));
  RETURN_IF_ERROR(FailIf(fail_second, calls));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheFirstErrorAndEvaluatesOnce) {
  int calls = 0;
  EXPECT_TRUE(TwoSteps(false, false, &calls).ok());
  EXPECT_EQ(calls, 2);
  calls = 0;
  const absl::Status s = TwoSteps(true, false, &calls);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "missing");
  EXPECT_EQ(calls, 1);
}

absl::StatusOr<int> Sum(bool fail_first, bool fail_second) {
  // A declaration, a move-only value and an expression with commas.
  ASSIGN_OR_RETURN(std::unique_ptr<int> first, MakeOrFail(fail_first, 2));
  int second = 0;
  ASSIGN_OR_RETURN(second, [](bool fail, int v) -> absl::StatusOr<int> {
    if (fail) return absl::OutOfRangeError("second");
    return v;
  }(fail_second, 3));
  return *first + second;
}

TEST(StatusMacrosTest, AssignOrReturnDeclaresAssignsAndPropagates) {
  absl::StatusOr<int> ok = Sum(false, false);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, 5);
  EXPECT_EQ(Sum(true, false).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Sum(false, true).status().message(), "second");
}

absl::Status StatusFunction(bool fail) {
  ASSIGN_OR_RETURN(auto value, MakeOrFail(fail, 1));
  return *value == 1 ? absl::OkStatus() : absl::InternalError("wrong value");
}

TEST(StatusMacrosTest, AssignOrReturnWorksInAFunctionReturningStatus) {
  EXPECT_TRUE(StatusFunction(false).ok());
  EXPECT_EQ(StatusFunction(true).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trainscope
