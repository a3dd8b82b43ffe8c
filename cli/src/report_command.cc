// `trainscope report JOB --out DIR`: a report without a display. One HTML
// page (DIR/index.html) with the viewer's views rendered offscreen (the
// trainscope-viewer binary beside this one, run as a child: Qt stays out of
// the CLI), the job's alerts, a per-rank summary, for GPU jobs the device
// time per rank and the top kernels, and the per-step table.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "job_queries.h"
#include "subcommand_support.h"
#include "trainscope/cli/child_process.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::cli {
namespace {

namespace v1 = trainscope::v1;

// The views the report shows, as trainscope-viewer --render names them; the
// loss-contribution ones only for a job that measured it.
constexpr const char* kViews[] = {"overview", "marey", "alerts", "jobs"};
constexpr const char* kLossViews[] = {"selection", "monitoring"};
// Rows of the per-step table at most (the newest steps).
constexpr size_t kMaxStepRows = 500;

std::string Html(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The per-rank samples are integer nanoseconds; the median is the analysis' one.
double Median(const std::vector<int64_t>& v) {
  return ::trainscope::collector::Median(std::vector<double>(v.begin(), v.end()));
}

// trainscope-viewer next to this executable, else on PATH.
std::string ViewerPath() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside = self.parent_path() / "trainscope-viewer";
    if (std::filesystem::exists(beside, ec)) return beside.string();
  }
  return "trainscope-viewer";
}

// Renders every view into DIR/view-<name>.png; returns the names written, or
// why none could be.
absl::StatusOr<std::vector<std::string>> RenderViews(
    const std::string& viewer, const std::string& job, const std::optional<std::string>& data_dir,
    const client::ConnectionOptions& conn, const std::filesystem::path& dir, bool with_loss) {
  if (!ProgramOnPath(viewer)) {
    return absl::NotFoundError(
        absl::StrCat(viewer, " not found (built without Qt?); the report has no views"));
  }
  std::vector<std::string> argv = {
      "env",   "QT_QPA_PLATFORM=offscreen", viewer, "--job", job, "--render", "each",
      "--out", (dir / "view.png").string()};
  if (data_dir) {
    argv.insert(argv.end(), {"--data-dir", *data_dir});
  } else {
    argv.insert(argv.end(), {"--feed", conn.feed, "--snapshot", conn.snapshot});
  }
  absl::StatusOr<ChildProcess> child = ChildProcess::Start(argv);
  if (!child.ok()) return child.status();
  const ChildResult result = child->Wait(absl::Now() + absl::Minutes(2));
  if (result.timed_out || result.exit_code != 0) {
    return absl::InternalError(absl::StrCat("trainscope-viewer could not render the views: ",
                                            result.timed_out ? "timed out" : result.output));
  }
  std::vector<std::string> written;
  auto keep = [&](const char* view) {
    if (std::filesystem::exists(dir / absl::StrCat("view-", view, ".png"))) written.push_back(view);
  };
  for (const char* view : kViews) keep(view);
  if (with_loss) {
    for (const char* view : kLossViews) keep(view);
  }
  return written;
}

std::string AlertsTable(const std::vector<v1::Alert>& alerts) {
  if (alerts.empty()) return "<p>No alerts: the collector's rules found nothing to report.</p>\n";
  std::string html =
      "<table><tr><th>#</th><th>state</th><th>rule</th><th>step</th><th>since</th>"
      "<th>cause</th><th>message</th></tr>\n";
  for (const v1::Alert& a : alerts) {
    const bool raised = a.state() == v1::ALERT_STATE_RAISED;
    absl::StrAppend(&html, "<tr class=\"", raised ? "raised" : "cleared", "\"><td>", a.alert_id(),
                    "</td><td>", raised ? "raised" : "cleared", a.halted_job() ? " (halted)" : "",
                    "</td><td>", Html(a.rule()), "</td><td>", a.step(), "</td><td>", a.onset_step(),
                    "</td><td>", a.cause_rank() >= 0 ? absl::StrCat("rank ", a.cause_rank()) : "",
                    "</td><td>", Html(a.message()), "</td></tr>\n");
  }
  return html + "</table>\n";
}

std::string RankSummary(const std::vector<v1::StepReport>& steps) {
  struct Rank {
    std::vector<int64_t> step, wait, data, compute;
    double flops = 0;
    uint64_t memory = 0;
    int waited_for = 0;  // steps in which the others waited for it
  };
  std::map<uint32_t, Rank> ranks;
  for (const v1::StepReport& s : steps) {
    for (const v1::DeviceStep& d : s.devices()) {
      if (!d.complete()) continue;
      Rank& r = ranks[d.rank()];
      r.step.push_back(d.step_time_ns());
      r.wait.push_back(d.wait_ns());
      r.data.push_back(d.data_wait_ns());
      r.compute.push_back(d.compute_ns());
      r.flops = std::max(r.flops, d.flops_per_second());
      r.memory = std::max(r.memory, d.peak_memory_bytes());
      if (d.waited_for_rank() >= 0 && d.wait_ns() > 0) ++ranks[d.waited_for_rank()].waited_for;
    }
  }
  std::string html =
      "<table><tr><th>rank</th><th>steps</th><th>median step ms</th><th>median compute ms</th>"
      "<th>median wait ms</th><th>median data wait ms</th><th>others waited for it "
      "(device-steps)</th>"
      "<th>best GFLOP/s</th><th>peak memory MiB</th></tr>\n";
  for (const auto& [rank, r] : ranks) {
    absl::StrAppend(
        &html, absl::StrFormat("<tr><td>%u</td><td>%u</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                               "<td>%.2f</td><td>%d</td><td>%.2f</td><td>%.1f</td></tr>\n",
                               rank, r.step.size(), Median(r.step) / 1e6, Median(r.compute) / 1e6,
                               Median(r.wait) / 1e6, Median(r.data) / 1e6, r.waited_for,
                               r.flops / 1e9, static_cast<double>(r.memory) / (1 << 20)));
  }
  return html + "</table>\n";
}

// Per rank, the medians of its steps' device time (DeviceStep.has_gpu):
// where the GPU's time went. Empty when no step has GPU work.
std::string DeviceTimeSummary(const std::vector<v1::StepReport>& steps) {
  struct Rank {
    std::vector<int64_t> step, busy, nccl_wait, nccl_transfer, copies, launch_bound, host_sync,
        data_wait, overlap, kernels;
    uint32_t streams = 0;
  };
  std::map<uint32_t, Rank> ranks;
  for (const v1::StepReport& s : steps) {
    for (const v1::DeviceStep& d : s.devices()) {
      if (!d.complete() || !d.has_gpu()) continue;
      Rank& r = ranks[d.rank()];
      r.step.push_back(d.step_time_ns());
      r.busy.push_back(d.gpu_busy_ns());
      r.nccl_wait.push_back(d.wait_ns());
      r.nccl_transfer.push_back(d.transfer_ns());
      r.copies.push_back(d.h2d_copy_ns() + d.d2h_copy_ns() + d.other_copy_ns());
      r.launch_bound.push_back(d.gpu_idle_launch_bound_ns());
      r.host_sync.push_back(d.gpu_idle_host_sync_ns());
      r.data_wait.push_back(d.gpu_idle_data_wait_ns());
      r.overlap.push_back(d.comm_compute_overlap_ns());
      r.kernels.push_back(d.kernels());
      r.streams = std::max(r.streams, d.gpu_streams());
    }
  }
  if (ranks.empty()) return "";
  std::string html =
      "<p>Medians over each rank's steps, in device time: GPU busy is the union of its compute "
      "kernels over its streams; NCCL wait and transfer come from its NCCL kernels; idle time is "
      "split by what the host was doing.</p>\n"
      "<table><tr><th>rank</th><th>steps</th><th>step ms</th><th>GPU busy ms</th>"
      "<th>GPU busy %</th><th>NCCL wait ms</th><th>NCCL transfer ms</th>"
      "<th>overlapped with compute ms</th><th>copies ms</th><th>idle: launch-bound ms</th>"
      "<th>idle: host sync ms</th><th>idle: data wait ms</th><th>kernels</th><th>streams</th>"
      "</tr>\n";
  for (const auto& [rank, r] : ranks) {
    const double step = Median(r.step);
    absl::StrAppend(
        &html, absl::StrFormat("<tr><td>%u</td><td>%u</td><td>%.2f</td><td>%.2f</td><td>%.1f</td>"
                               "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                               "<td>%.2f</td><td>%.2f</td><td>%.0f</td><td>%u</td></tr>\n",
                               rank, r.step.size(), step / 1e6, Median(r.busy) / 1e6,
                               step > 0 ? 100 * Median(r.busy) / step : 0.0,
                               Median(r.nccl_wait) / 1e6, Median(r.nccl_transfer) / 1e6,
                               Median(r.overlap) / 1e6, Median(r.copies) / 1e6,
                               Median(r.launch_bound) / 1e6, Median(r.host_sync) / 1e6,
                               Median(r.data_wait) / 1e6, Median(r.kernels), r.streams));
  }
  return html + "</table>\n";
}

// The kernels that took the most device time over the job's steps and
// devices (each step's DeviceStep.top_kernels summed by name).
std::string TopKernelsTable(const std::vector<v1::StepReport>& steps) {
  struct Kernel {
    v1::OperatorClass op_class = v1::OPERATOR_CLASS_UNSPECIFIED;
    uint64_t count = 0;
    int64_t total_ns = 0;
    std::map<std::string, int64_t> launchers;  // launching operator -> its share
    std::set<uint64_t> steps;
  };
  std::map<std::string, Kernel> kernels;
  for (const v1::StepReport& s : steps) {
    for (const v1::DeviceStep& d : s.devices()) {
      for (const v1::KernelSummary& k : d.top_kernels()) {
        Kernel& kernel = kernels[k.name()];
        kernel.op_class = k.op_class();
        kernel.count += k.count();
        kernel.total_ns += k.total_ns();
        if (!k.launch_op().empty()) kernel.launchers[k.launch_op()] += k.total_ns();
        kernel.steps.insert(s.step());
      }
    }
  }
  if (kernels.empty()) return "";
  std::vector<std::pair<std::string, const Kernel*>> sorted;
  for (const auto& [name, k] : kernels) sorted.emplace_back(name, &k);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second->total_ns != b.second->total_ns ? a.second->total_ns > b.second->total_ns
                                                    : a.first < b.first;
  });
  constexpr size_t kMaxKernelRows = 20;
  if (sorted.size() > kMaxKernelRows) sorted.resize(kMaxKernelRows);
  std::string html =
      "<p>Summed over every device and step from each step's top kernels (at most 10 per device "
      "and step).</p>\n<table><tr><th>#</th><th>kernel</th><th>class</th><th>count</th>"
      "<th>total ms</th><th>ms per step</th><th>launched by</th></tr>\n";
  int place = 0;
  for (const auto& [name, k] : sorted) {
    std::string launcher;
    int64_t most = -1;
    for (const auto& [op, ns] : k->launchers) {
      if (ns > most) most = ns, launcher = op;
    }
    const char* cls = k->op_class == v1::OPERATOR_CLASS_GPU_COLLECTIVE ? "NCCL"
                      : k->op_class == v1::OPERATOR_CLASS_GPU_COPY     ? "copy"
                                                                       : "compute";
    absl::StrAppend(
        &html, "<tr><td>", ++place, "</td><td style=\"text-align:left\">", Html(name), "</td><td>",
        cls, "</td><td>", k->count, "</td><td>", FormatMs(k->total_ns), "</td><td>",
        FormatMs(k->total_ns / static_cast<int64_t>(std::max<size_t>(1, k->steps.size()))),
        "</td><td>", Html(launcher), "</td></tr>\n");
  }
  return html + "</table>\n";
}

// The job-wide top-N by loss contribution (trainscope.LossContribution).
std::string ItemsTable(const v1::LossState& state) {
  std::string html = absl::StrCat(
      "<p>Epoch ", state.epoch(), ", top ", state.top_n(), " items by loss contribution at layer ",
      Html(state.selection_layer()),
      "; IN_TOP: completed epochs running in the top (difficult_item raises at 3).</p>\n"
      "<table><tr><th>#</th><th>item</th><th>contribution</th><th>label</th><th>prediction</th>"
      "<th>rank</th><th>in top</th><th>epoch:place</th></tr>\n");
  int place = 0;
  for (const v1::DifficultItem& item : state.items()) {
    std::string history;
    for (const v1::EpochScore& e : item.history()) {
      absl::StrAppend(&history, history.empty() ? "" : " ", e.epoch(), ":#", e.position());
    }
    absl::StrAppend(&html, item.label() != item.prediction() ? "<tr class=\"raised\">" : "<tr>",
                    "<td>", ++place, "</td><td>", item.item(), "</td><td>",
                    absl::StrFormat("%.4g", item.contribution()), "</td><td>", item.label(),
                    "</td><td>", item.prediction(), "</td><td>", item.rank(), "</td><td>",
                    item.epochs_in_top(), "</td><td>", history, "</td></tr>\n");
  }
  return absl::StrCat(html, "</table>\n");
}

std::string StepsTable(const std::vector<v1::StepReport>& steps) {
  std::vector<uint32_t> ranks;
  for (const v1::StepReport& s : steps) {
    for (const v1::DeviceStep& d : s.devices()) ranks.push_back(d.rank());
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string html = "<table><tr><th>step</th>";
  for (uint32_t r : ranks) absl::StrAppend(&html, "<th>rank ", r, " ms</th>");
  html += "<th>max wait ms</th><th>waited for</th></tr>\n";
  const size_t from = steps.size() > kMaxStepRows ? steps.size() - kMaxStepRows : 0;
  for (size_t i = from; i < steps.size(); ++i) {
    const v1::StepReport& s = steps[i];
    std::map<uint32_t, const v1::DeviceStep*> by_rank;
    int64_t max_wait = 0;
    int32_t waited_for = -1;
    for (const v1::DeviceStep& d : s.devices()) {
      by_rank[d.rank()] = &d;
      if (d.wait_ns() > max_wait) {
        max_wait = d.wait_ns();
        waited_for = d.waited_for_rank();
      }
    }
    absl::StrAppend(&html, "<tr><td>", s.step(), "</td>");
    for (uint32_t r : ranks) {
      auto it = by_rank.find(r);
      absl::StrAppend(&html, "<td>",
                      it == by_rank.end() ? "" : FormatMs(it->second->step_time_ns()), "</td>");
    }
    absl::StrAppend(&html, "<td>", FormatMs(max_wait), "</td><td>",
                    waited_for >= 0 ? absl::StrCat("rank ", waited_for) : "", "</td></tr>\n");
  }
  return html + "</table>\n";
}

}  // namespace

int RunReportCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope report",
      "Write a report of a job without a display: DIR/index.html with the viewer's "
      "views rendered offscreen, the alerts, a per-rank summary, the device time and "
      "top kernels of GPU jobs and the per-step table (open it in any browser).");
  parser.AddPositional("JOB", "the job's id");
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);
  parser.AddFlag("data-dir", "DIR",
                 "report on the job's stored log in DIR (the collector's --data-dir) instead of "
                 "asking the live collector");
  parser.AddFlag("out", "DIR", "the report's directory (created; required)");
  parser.AddFlag("viewer", "PATH",
                 "the trainscope-viewer that renders the views (default: the one beside this "
                 "trainscope, else on PATH)");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "report", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "report", conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "report", s.message());
  }
  const std::optional<std::string> out = parsed.Value("out");
  if (!out || out->empty()) return UsageError(ctx, "report", "--out DIR is required");
  const std::optional<std::string> data_dir = parsed.Value("data-dir");

  v1::SnapshotRequest request;
  request.set_job_id(job);
  request.mutable_steps()->set_max_steps(UINT32_MAX);
  request.mutable_loss();
  absl::StatusOr<v1::FeedSnapshot> reply = AskAnalysis(data_dir, *conn, request);
  if (!reply.ok()) return Fail(ctx, "report", reply.status());
  const std::vector<v1::StepReport> steps(reply->steps().begin(), reply->steps().end());
  absl::StatusOr<std::vector<v1::Alert>> alerts;
  if (data_dir) {
    alerts = AskAlertIndex(*data_dir, job, v1::AlertQuery());
  } else {
    client::ZmqFeedSource source(conn->feed, conn->snapshot, nullptr, conn->security);
    alerts = AskLiveAlerts(source, job, v1::AlertQuery(), conn->timeout);
  }
  if (!alerts.ok()) return Fail(ctx, "report", alerts.status());

  const std::filesystem::path dir(*out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Fail(
        ctx, "report",
        absl::PermissionDeniedError(absl::StrCat("cannot create ", *out, ": ", ec.message())));
  }
  *ctx.err << "rendering the views with trainscope-viewer..." << std::endl;
  absl::StatusOr<std::vector<std::string>> views =
      RenderViews(parsed.Value("viewer").value_or(ViewerPath()), job, data_dir, *conn, dir,
                  !reply->loss().state().items().empty());
  if (!views.ok()) *ctx.err << "warning: " << views.status().message() << std::endl;

  std::string html = absl::StrCat(
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>trainscope report: ", Html(job),
      "</title>\n<style>body{font:14px sans-serif;margin:24px;color:#222}"
      "table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;"
      "padding:3px 8px;text-align:right}th{background:#f3f3f3}td:last-child{text-align:left}"
      "tr.raised td{background:#fdecec}img{max-width:100%;border:1px solid #ddd;"
      "margin:8px 0}</style></head><body>\n<h1>trainscope report: ",
      Html(job), "</h1>\n<p>", steps.size(), " closed steps, ", alerts->size(),
      " alert changes; from ",
      data_dir ? absl::StrCat("the stored log in ", Html(*data_dir))
               : absl::StrCat("the live collector (", Html(conn->feed), ")"),
      "; written ", absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::Now(), absl::LocalTimeZone()),
      ".</p>\n<h2>Alerts</h2>\n", AlertsTable(*alerts));
  if (!reply->loss().state().items().empty()) {
    absl::StrAppend(&html, "<h2>Difficult items</h2>\n", ItemsTable(reply->loss().state()));
  }
  absl::StrAppend(&html, "<h2>Views</h2>\n");
  if (views.ok() && !views->empty()) {
    for (const std::string& view : *views) {
      absl::StrAppend(&html, "<h3>", view, "</h3><img src=\"view-", view, ".png\" alt=\"", view,
                      "\">\n");
    }
  } else {
    absl::StrAppend(&html, "<p>No views: ",
                    Html(views.ok() ? "nothing rendered" : std::string(views.status().message())),
                    "</p>\n");
  }
  absl::StrAppend(&html, "<h2>Ranks</h2>\n", RankSummary(steps));
  if (const std::string device = DeviceTimeSummary(steps); !device.empty()) {
    absl::StrAppend(&html, "<h2>Device time</h2>\n", device, "<h2>Top kernels</h2>\n",
                    TopKernelsTable(steps));
  }
  absl::StrAppend(&html, "<h2>Steps</h2>\n",
                  steps.size() > kMaxStepRows ? absl::StrCat("<p>The newest ", kMaxStepRows, " of ",
                                                             steps.size(), " steps.</p>\n")
                                              : "",
                  StepsTable(steps), "</body></html>\n");
  std::ofstream file(dir / "index.html", std::ios::trunc);
  file << html;
  file.close();
  if (!file) {
    return Fail(ctx, "report",
                absl::DataLossError(absl::StrCat("cannot write ", (dir / "index.html").string())));
  }
  *ctx.out << "wrote " << (dir / "index.html").string() << ": " << steps.size() << " steps, "
           << alerts->size() << " alert changes, " << (views.ok() ? views->size() : 0) << " views"
           << std::endl;
  return kExitOk;
}

}  // namespace trainscope::cli
