// The search on a real GPU trace (rank 0 of a 2-rank NCCL job, 3 steps,
// 2.7 k kernels; /work/shared/data/kineto-gpu), imported as a user would and
// opened from the data dir: its counts are the trace's own, its matches are
// walked in time order, and a jump to an NCCL kernel zooms the Marey graph
// to it on its GPU stream, outlined (issue 23.5).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "trainscope/viewer/search_model.h"
#include "trainscope/viewer/viewer_state.h"
#include "widgets/kineto_trace.h"

namespace trainscope::viewer {
namespace {

TEST(SearchRealTraceTest, FindsTheTracesNcclKernelsAndWalksThemInTimeOrder) {
  absl::StatusOr<JobData> data =
      testing::LoadKinetoTrace("nccl_parser_config__nccl_data.json.gz", "nccl");
  ASSERT_TRUE(data.ok()) << data.status();

  // What the trace holds, counted here from the loaded records: operators
  // whose name contains "nccl" in any case ("ncclDevKernel_...", "nccl:...").
  std::map<std::string, uint64_t> expected;
  for (const OperatorRecord& op : data->operators.operators) {
    const std::string& name = data->operators.strings[op.name];
    if (absl::AsciiStrToLower(name).find("nccl") != std::string::npos) ++expected[name];
  }
  ASSERT_GE(expected.size(), 2u) << "the trace should hold NCCL kernels and NCCL CPU operators";

  ViewerState state;
  state.Load(*data);
  state.search.SetQuery("NCCL");
  ASSERT_EQ(state.search.results().size(), expected.size());
  uint64_t most = 0;
  for (const SearchModel::Result& result : state.search.results()) {
    ASSERT_TRUE(expected.count(result.label)) << result.label;
    EXPECT_EQ(result.matches, expected[result.label]) << result.label;
    EXPECT_EQ(result.ranks, 1u) << result.label;  // one rank's trace
    EXPECT_LE(result.matches, most == 0 ? result.matches : most) << "most matches first";
    most = result.matches;
  }

  // The most frequent name's matches, by F3: each once, in time order.
  const uint64_t count = state.search.results()[0].matches;
  int64_t previous = INT64_MIN;
  for (uint64_t i = 0; i < count; ++i) {
    std::optional<SearchModel::Match> m = state.search.Step(1);
    ASSERT_TRUE(m.has_value());
    EXPECT_GE(m->start_ns, previous) << i;
    previous = m->start_ns;
  }
  EXPECT_EQ(state.search.current(), count - 1);
  EXPECT_EQ(state.search.Step(1)->start_ns, state.search.matches()[0].start_ns);  // wraps

  // A GPU kernel's jump: zoomed to it, its step pinned, outlined on its row.
  std::optional<size_t> kernel;
  for (size_t i = 0; i < state.search.results().size(); ++i) {
    if (state.search.results()[i].label.rfind("ncclDevKernel", 0) == 0 ||
        state.search.results()[i].label.rfind("ncclKernel", 0) == 0) {
      kernel = i;
    }
  }
  ASSERT_TRUE(kernel.has_value()) << "no NCCL kernel among the results";
  state.search.SetActive(*kernel);
  state.marey.SetViewport(1400, 800);
  ASSERT_TRUE(state.search.Jump(1, &state.selection, &state.marey));
  state.SyncSelection();
  const SearchModel::Match& m = state.search.matches()[0];
  EXPECT_EQ(state.selection.selected_step(), m.step);
  const DrawList& list = state.marey.Draw();
  EXPECT_LE(state.marey.view_start(), m.start_ns);
  EXPECT_GE(state.marey.view_end(), m.end_ns);
  // The red outline around it (the selected device's blue mark is another
  // overlay).
  bool outlined = false;
  for (const FilledRect& r : list.overlay_rects) {
    outlined =
        outlined || (r.stroke == kAlertColor && r.rect.x <= state.marey.TimeToX(m.start_ns) &&
                     r.rect.x + r.rect.w >= state.marey.TimeToX(m.end_ns));
  }
  EXPECT_TRUE(outlined) << "the kernel is not outlined";
}

}  // namespace
}  // namespace trainscope::viewer
