// `trainscope traffic JOB`: the bytes, messages and time between every pair
// of a job's devices over a range of steps (StepReport.traffic: send/recv
// counted, collectives from the backend's algorithm, docs/traffic.md), as a
// matrix and a per-pair table, or one JSON object per pair (--json). Live
// from the collector or from a stored log with --data-dir.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/struct.pb.h"
#include "job_queries.h"
#include "subcommand_support.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/status_printer.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/cli/table_printer.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::cli {
namespace {

namespace v1 = trainscope::v1;

// One directed pair's traffic summed over the steps shown (and over its
// groups unless --group picked one).
struct PairSum {
  std::string src_host;
  std::string dst_host;
  v1::LinkLocality locality = v1::LINK_LOCALITY_UNSPECIFIED;
  uint64_t bytes = 0;
  uint64_t messages = 0;
  int64_t duration_ns = 0;
  uint64_t exact_bytes = 0;  // of bytes: counted send/recv
  uint64_t exact_messages = 0;
  std::set<std::string> groups;
  std::set<std::string> backends;
  std::set<uint64_t> steps;
};

std::string LocalityName(v1::LinkLocality l) {
  switch (l) {
    case v1::LINK_LOCALITY_SAME_DEVICE:
      return "same_device";
    case v1::LINK_LOCALITY_SAME_HOST:
      return "same_host";
    case v1::LINK_LOCALITY_CROSS_HOST:
      return "cross_host";
    default:
      return "unknown";
  }
}

std::string Join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    absl::StrAppend(&out, out.empty() ? "" : ",", n.empty() ? "default" : n);
  return out;
}

google::protobuf::Struct PairJson(uint32_t src, uint32_t dst, const PairSum& p) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  f["src_rank"].set_number_value(src);
  f["dst_rank"].set_number_value(dst);
  f["src_host"].set_string_value(p.src_host);
  f["dst_host"].set_string_value(p.dst_host);
  f["locality"].set_string_value(LocalityName(p.locality));
  f["bytes"].set_number_value(static_cast<double>(p.bytes));
  f["messages"].set_number_value(static_cast<double>(p.messages));
  f["duration_ns"].set_number_value(static_cast<double>(p.duration_ns));
  f["bytes_per_second"].set_number_value(p.duration_ns > 0 ? static_cast<double>(p.bytes) * 1e9 /
                                                                 static_cast<double>(p.duration_ns)
                                                           : 0.0);
  f["exact_bytes"].set_number_value(static_cast<double>(p.exact_bytes));
  f["exact_messages"].set_number_value(static_cast<double>(p.exact_messages));
  f["modelled_bytes"].set_number_value(static_cast<double>(p.bytes - p.exact_bytes));
  f["steps"].set_number_value(static_cast<double>(p.steps.size()));
  for (const std::string& g : p.groups) {
    f["groups"].mutable_list_value()->add_values()->set_string_value(g);
  }
  for (const std::string& b : p.backends) {
    f["backends"].mutable_list_value()->add_values()->set_string_value(b);
  }
  return s;
}

// Rows are senders, columns receivers; "-" where nothing moved.
std::string RenderMatrix(const std::map<std::pair<uint32_t, uint32_t>, PairSum>& pairs) {
  std::set<uint32_t> ranks;
  for (const auto& [key, p] : pairs) {
    ranks.insert(key.first);
    ranks.insert(key.second);
  }
  std::vector<TablePrinter::Column> columns{{"SRC\\DST"}};
  for (uint32_t r : ranks) columns.push_back({absl::StrCat(r), TablePrinter::kRight});
  TablePrinter table(std::move(columns));
  for (uint32_t src : ranks) {
    std::vector<std::string> row{absl::StrCat(src)};
    for (uint32_t dst : ranks) {
      auto it = pairs.find({src, dst});
      row.push_back(it == pairs.end() ? "-" : FormatBytes(it->second.bytes));
    }
    table.AddRow(std::move(row));
  }
  return table.Render();
}

std::string RenderPairs(const std::map<std::pair<uint32_t, uint32_t>, PairSum>& pairs) {
  TablePrinter table({{"SRC", TablePrinter::kRight},
                      {"DST", TablePrinter::kRight},
                      {"WHERE"},
                      {"BYTES", TablePrinter::kRight},
                      {"EXACT", TablePrinter::kRight},
                      {"MESSAGES", TablePrinter::kRight},
                      {"TIME_MS", TablePrinter::kRight},
                      {"RATE", TablePrinter::kRight},
                      {"GROUPS"},
                      {"BACKEND"}});
  for (const auto& [key, p] : pairs) {
    const double rate =
        p.duration_ns > 0 ? static_cast<double>(p.bytes) * 1e9 / static_cast<double>(p.duration_ns)
                          : 0.0;
    std::string where = LocalityName(p.locality);
    if (p.locality == v1::LINK_LOCALITY_CROSS_HOST) {
      where = absl::StrCat(p.src_host, "->", p.dst_host);
    }
    table.AddRow({absl::StrCat(key.first), absl::StrCat(key.second), where, FormatBytes(p.bytes),
                  FormatBytes(p.exact_bytes), FormatCount(p.messages), FormatMs(p.duration_ns),
                  rate > 0 ? absl::StrCat(FormatBytes(static_cast<uint64_t>(rate)), "/s") : "-",
                  Join(p.groups), Join(p.backends)});
  }
  return table.Render();
}

}  // namespace

int RunTrafficCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser("trainscope traffic",
                           "Traffic between every pair of a job's devices over a range of steps: "
                           "bytes, messages and transfer time, summed over the steps.");
  parser.AddPositional("JOB", "the job's id");
  client::ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);
  parser.AddFlag("data-dir", "DIR",
                 "analyse the job's stored log in DIR (the collector's --data-dir) instead of "
                 "asking the live collector");
  parser.AddFlag("first", "N", "first step to count", "0");
  parser.AddFlag("last", "N", "last step to count (0: the newest)", "0");
  parser.AddFlag("group", "NAME",
                 "count only this process group's traffic (\"default\" for the default group)");
  parser.AddEpilog(
      "Send/recv is counted exactly (EXACT); collectives are modelled from the backend's "
      "algorithm (gloo or NCCL ring, tree, chain; docs/traffic.md) over the group's members. "
      "TIME_MS sums the receiver's transfer time of the pair's messages. WHERE says where the "
      "ends live: same_device, same_host, or the two hosts.");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "traffic", args, ctx, &parsed)) return *code;
  absl::StatusOr<client::ConnectionOptions> conn =
      client::ConnectionOptions::Resolve(parsed, ctx.env);
  if (!conn.ok()) return UsageError(ctx, "traffic", conn.status().message());
  const std::string job = *parsed.Positional("JOB");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "traffic", s.message());
  }
  v1::SnapshotRequest request;
  request.set_job_id(job);
  absl::StatusOr<std::optional<int64_t>> first = parsed.Int("first", 0, INT32_MAX);
  if (!first.ok()) return UsageError(ctx, "traffic", first.status().message());
  absl::StatusOr<std::optional<int64_t>> last = parsed.Int("last", 0, INT32_MAX);
  if (!last.ok()) return UsageError(ctx, "traffic", last.status().message());
  request.mutable_steps()->set_first_step(static_cast<uint64_t>(first->value_or(0)));
  request.mutable_steps()->set_last_step(static_cast<uint64_t>(last->value_or(0)));
  const std::optional<std::string> group = parsed.Value("group");

  absl::StatusOr<v1::FeedSnapshot> reply =
      AskAnalysis(parsed.Value("data-dir"), *conn, std::move(request));
  if (!reply.ok()) return Fail(ctx, "traffic", reply.status());

  std::map<std::pair<uint32_t, uint32_t>, PairSum> pairs;
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  for (const v1::StepReport& step : reply->steps()) {
    lo = std::min(lo, step.step());
    hi = std::max(hi, step.step());
    for (const v1::PairTraffic& t : step.traffic()) {
      if (group.has_value() && t.group() != (*group == "default" ? std::string() : *group)) {
        continue;
      }
      PairSum& p = pairs[{t.src_rank(), t.dst_rank()}];
      p.src_host = t.src_host();
      p.dst_host = t.dst_host();
      p.locality = t.locality();
      p.bytes += t.bytes();
      p.messages += t.messages();
      p.duration_ns += t.duration_ns();
      if (t.exact()) {
        p.exact_bytes += t.bytes();
        p.exact_messages += t.messages();
      }
      p.groups.insert(t.group());
      p.backends.insert(t.backend());
      p.steps.insert(t.step());
    }
  }
  if (conn->json) {
    for (const auto& [key, p] : pairs)
      *ctx.out << ToJsonLine(PairJson(key.first, key.second, p)) << "\n";
    *ctx.out << std::flush;
    return kExitOk;
  }
  if (reply->steps().empty()) {
    *ctx.out << "no closed steps yet for job " << job << "\n";
    return kExitOk;
  }
  *ctx.out << "job " << job << ", steps " << lo << ".." << hi << " (" << reply->steps_size()
           << " steps): bytes sent from each row's rank to each column's\n";
  if (pairs.empty()) {
    *ctx.out << "no traffic between devices in these steps\n" << std::flush;
    return kExitOk;
  }
  *ctx.out << RenderMatrix(pairs) << "\n" << RenderPairs(pairs) << std::flush;
  return kExitOk;
}

}  // namespace trainscope::cli
