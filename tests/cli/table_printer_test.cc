#include "trainscope/cli/table_printer.h"

#include <gtest/gtest.h>

namespace trainscope::cli {
namespace {

TEST(TablePrinterTest, AlignsColumnsAndRightAlignsNumbers) {
  TablePrinter table({{"JOB"}, {"EVENTS", TablePrinter::kRight}, {"STATE"}});
  table.AddRow({"resnet-50", "12,345", "running"});
  table.AddRow({"a", "7", "idle"});
  EXPECT_EQ(table.Render(),
            "JOB        EVENTS  STATE\n"
            "resnet-50  12,345  running\n"
            "a               7  idle\n");
  EXPECT_EQ(table.rows(), 2u);
}

TEST(TablePrinterTest, ShortRowsArePaddedAndNoTrailingSpaces) {
  TablePrinter table({{"A"}, {"B"}});
  table.AddRow({"x"});
  EXPECT_EQ(table.Render(), "A  B\nx\n");
}

TEST(TablePrinterTest, HeaderOnly) {
  TablePrinter table({{"A", TablePrinter::kRight}});
  EXPECT_EQ(table.Render(), "A\n");
}

}  // namespace
}  // namespace trainscope::cli
