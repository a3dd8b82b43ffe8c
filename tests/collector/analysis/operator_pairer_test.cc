#include "trainscope/collector/analysis/operator_pairer.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

DeviceEvent Mark(v1::EventKind kind, uint32_t thread, int64_t at, uint32_t name) {
  DeviceEvent e;
  e.kind = kind;
  e.thread = thread;
  e.start_ns = e.end_ns = at;
  e.name = name;
  return e;
}
DeviceEvent Begin(uint32_t thread, int64_t at, uint32_t name = 0) {
  return Mark(v1::EVENT_KIND_OPERATOR_BEGIN, thread, at, name);
}
DeviceEvent End(uint32_t thread, int64_t at, uint32_t name = 0) {
  return Mark(v1::EVENT_KIND_OPERATOR_END, thread, at, name);
}

TEST(OperatorPairerTest, AnEndClosesTheInnermostBeginOfItsThread) {
  OperatorPairer pairer;
  ASSERT_TRUE(pairer.Begin(Begin(1, 100, 10)));  // outer, thread 1
  ASSERT_TRUE(pairer.Begin(Begin(2, 110, 20)));  // thread 2
  ASSERT_TRUE(pairer.Begin(Begin(1, 120, 11)));  // inner, thread 1
  std::optional<DeviceEvent> inner = pairer.End(End(1, 150));
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(inner->kind, v1::EVENT_KIND_OPERATOR);
  EXPECT_EQ(inner->name, 11u);
  EXPECT_EQ(inner->start_ns, 120);
  EXPECT_EQ(inner->end_ns, 150);
  std::optional<DeviceEvent> outer = pairer.End(End(1, 200));
  ASSERT_TRUE(outer.has_value());
  EXPECT_EQ(outer->name, 10u);
  EXPECT_EQ(outer->end_ns, 200);
  EXPECT_EQ(pairer.open(), 1u);  // thread 2's
}

TEST(OperatorPairerTest, TheEndNamesAnUnnamedBeginAndNeverEndsBeforeIt) {
  OperatorPairer pairer;
  ASSERT_TRUE(pairer.Begin(Begin(1, 100)));
  std::optional<DeviceEvent> op = pairer.End(End(1, 90, 7));  // clocks disagree
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->name, 7u);
  EXPECT_EQ(op->end_ns, 100);  // not before its start
}

TEST(OperatorPairerTest, AnEndWithoutABeginIsNotAnOperator) {
  OperatorPairer pairer;
  EXPECT_FALSE(pairer.End(End(1, 10)).has_value());
  ASSERT_TRUE(pairer.Begin(Begin(2, 5)));
  EXPECT_FALSE(pairer.End(End(1, 10)).has_value());  // another thread's
  EXPECT_EQ(pairer.open(), 1u);
}

TEST(OperatorPairerTest, HoldsAtMostKMaxOpenBeginsAndClearForgetsThem) {
  OperatorPairer pairer;
  for (size_t i = 0; i < OperatorPairer::kMaxOpen; ++i) {
    ASSERT_TRUE(pairer.Begin(Begin(1, static_cast<int64_t>(i))));
  }
  EXPECT_FALSE(pairer.Begin(Begin(1, 1'000)));
  EXPECT_EQ(pairer.open(), OperatorPairer::kMaxOpen);
  pairer.Clear();
  EXPECT_EQ(pairer.open(), 0u);
  EXPECT_FALSE(pairer.End(End(1, 2'000)).has_value());
}

}  // namespace
}  // namespace trainscope::collector
