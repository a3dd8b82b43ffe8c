#include "trainscope/cli/step_table.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/table_printer.h"

namespace trainscope::cli {
namespace {

namespace v1 = trainscope::v1;

// One device's GPU time summed over the steps shown.
struct GpuTotals {
  int64_t step_ns = 0;
  int64_t busy_ns = 0;
  int64_t collective_ns = 0;
  int64_t copy_ns = 0;
  int64_t idle_ns = 0;
  int64_t launch_bound_ns = 0;
  int64_t host_sync_ns = 0;
  int64_t data_wait_ns = 0;
  int steps = 0;
};

int64_t CopyNs(const v1::DeviceStep& d) {
  return d.h2d_copy_ns() + d.d2h_copy_ns() + d.other_copy_ns();
}

std::string Percent(int64_t part, int64_t whole) {
  return absl::StrFormat("%.0f%%", whole > 0 ? 100.0 * static_cast<double>(part) /
                                                   static_cast<double>(whole)
                                             : 0.0);
}

std::string Verdict(uint32_t rank, const GpuTotals& t) {
  std::string line = absl::StrCat("rank ", rank, ": GPU busy ", Percent(t.busy_ns, t.step_ns),
                                  " of ", t.steps, t.steps == 1 ? " step" : " steps");
  if (t.collective_ns > 0) absl::StrAppend(&line, ", NCCL ", Percent(t.collective_ns, t.step_ns));
  if (t.copy_ns > 0) absl::StrAppend(&line, ", copies ", Percent(t.copy_ns, t.step_ns));
  absl::StrAppend(&line, ", idle ", Percent(t.idle_ns, t.step_ns));
  // The reasons, largest first; only those that matter (>= 1 % of the time).
  std::vector<std::pair<int64_t, std::string>> why = {
      {t.launch_bound_ns, "launch-bound (the CPU does not launch work fast enough)"},
      {t.host_sync_ns, "the host waiting in a sync call"},
      {t.data_wait_ns, "waiting for data"},
  };
  std::sort(why.begin(), why.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> parts;
  for (const auto& [ns, what] : why) {
    if (t.step_ns > 0 && ns * 100 >= t.step_ns) parts.push_back(Percent(ns, t.step_ns) + " " + what);
  }
  if (!parts.empty()) absl::StrAppend(&line, ": ", absl::StrJoin(parts, ", "));
  return line;
}

}  // namespace

std::string RenderStepTable(
    const google::protobuf::RepeatedPtrField<v1::StepReport>& steps) {
  bool gpu = false;
  for (const v1::StepReport& step : steps) {
    for (const v1::DeviceStep& d : step.devices()) gpu |= d.has_gpu();
  }
  std::vector<TablePrinter::Column> columns = {{"STEP", TablePrinter::kRight},
                                               {"RANK", TablePrinter::kRight},
                                               {"STAGE", TablePrinter::kRight},
                                               {"STEP_MS", TablePrinter::kRight},
                                               {"DATA_MS", TablePrinter::kRight},
                                               {"COMPUTE_MS", TablePrinter::kRight},
                                               {"WAIT_MS", TablePrinter::kRight},
                                               {"XFER_MS", TablePrinter::kRight},
                                               {"IDLE_MS", TablePrinter::kRight},
                                               {"GFLOPS", TablePrinter::kRight},
                                               {"PEAK_MEM"},
                                               {"WAITED_FOR", TablePrinter::kRight}};
  if (gpu) {
    for (const char* name : {"COPY_MS", "LAUNCH_MS", "SYNC_MS", "KERNELS"}) {
      columns.push_back({name, TablePrinter::kRight});
    }
  }
  TablePrinter table(columns);
  std::map<uint32_t, GpuTotals> totals;
  for (const v1::StepReport& step : steps) {
    for (const v1::DeviceStep& d : step.devices()) {
      std::vector<std::string> row = {
          absl::StrCat(d.step()),       absl::StrCat(d.rank()),
          absl::StrCat(d.stage()),      FormatMs(d.step_time_ns()),
          FormatMs(d.data_wait_ns()),   FormatMs(d.compute_ns()),
          FormatMs(d.wait_ns()),        FormatMs(d.transfer_ns()),
          FormatMs(d.idle_ns()),        absl::StrFormat("%.2f", d.flops_per_second() / 1e9),
          FormatBytes(d.peak_memory_bytes()),
          d.waited_for_rank() < 0 ? "-" : absl::StrCat(d.waited_for_rank())};
      if (gpu) {
        const bool has = d.has_gpu();
        row.push_back(has ? FormatMs(CopyNs(d)) : "-");
        row.push_back(has ? FormatMs(d.gpu_idle_launch_bound_ns()) : "-");
        row.push_back(has ? FormatMs(d.gpu_idle_host_sync_ns()) : "-");
        row.push_back(has ? absl::StrCat(d.kernels()) : "-");
      }
      table.AddRow(std::move(row));
      if (!d.has_gpu()) continue;
      GpuTotals& t = totals[d.rank()];
      t.step_ns += d.step_time_ns();
      t.busy_ns += d.gpu_busy_ns();
      t.collective_ns += d.collective_ns();
      t.copy_ns += CopyNs(d);
      t.idle_ns += d.idle_ns();
      t.launch_bound_ns += d.gpu_idle_launch_bound_ns();
      t.host_sync_ns += d.gpu_idle_host_sync_ns();
      t.data_wait_ns += d.gpu_idle_data_wait_ns();
      ++t.steps;
    }
  }
  std::string out = table.Render();
  if (gpu) {
    absl::StrAppend(&out, "\nDevice time (COMPUTE is GPU busy, the union of compute kernels; "
                          "WAIT/XFER split NCCL kernels):\n");
    for (const auto& [rank, t] : totals) absl::StrAppend(&out, "  ", Verdict(rank, t), "\n");
  }
  return out;
}

}  // namespace trainscope::cli
