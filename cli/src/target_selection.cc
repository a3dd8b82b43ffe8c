#include "target_selection.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "subcommand_support.h"
#include "trainscope/cli/child_process.h"

namespace trainscope::cli {
namespace {

std::string Field(const google::protobuf::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  if (it == s.fields().end()) return "";
  const google::protobuf::Value& v = it->second;
  switch (v.kind_case()) {
    case google::protobuf::Value::kStringValue:
      return v.string_value();
    case google::protobuf::Value::kNumberValue:
      return absl::StrCat(static_cast<int64_t>(v.number_value()));
    case google::protobuf::Value::kBoolValue:
      return v.bool_value() ? "true" : "false";
    default:
      return "";
  }
}

std::string DescribeResult(const std::string& command, const google::protobuf::Struct& result) {
  if (command == "detach") {
    return Field(result, "was_attached") == "false"
               ? "was not attached (nothing to do)"
               : "detached (trainscope's hooks removed; training continues at full speed)";
  }
  std::string text = Field(result, "already_attached") == "true" ? "already attached" : "attached";
  std::vector<std::string> parts;
  if (std::string job = Field(result, "job"); !job.empty()) parts.push_back("job " + job);
  if (std::string rank = Field(result, "rank"); !rank.empty()) {
    std::string world = Field(result, "world_size");
    parts.push_back(absl::StrCat("rank ", rank, world.empty() ? "" : " of " + world));
  }
  if (std::string collector = Field(result, "collector"); !collector.empty()) {
    parts.push_back("collector " + collector);
  }
  if (Field(result, "recording") == "false") parts.push_back("dormant");
  if (!parts.empty()) absl::StrAppend(&text, " (", absl::StrJoin(parts, ", "), ")");
  return text;
}

}  // namespace

void AddTargetFlags(base::ArgParser* parser) {
  parser->AddRepeatedFlag("pid", "PID",
                          "a process to act on; more PIDs may follow as arguments "
                          "(--pid 101 102)");
  parser->AddRestPositionals("PID", "further process ids (with --pid)");
  parser->AddFlag("match", "PATTERN",
                  "every training process whose command line or name contains PATTERN, and the "
                  "PyTorch processes they started (launchers such as torchrun's agent or the "
                  "parent of torch.multiprocessing.spawn are skipped)");
  parser->AddFlag("timeout", "SECONDS",
                  "give up after this long (gdb is killed, the target is left as it was)",
                  absl::StrCat(kDefaultInjectTimeoutSeconds));
  parser->AddFlag("gdb", "PATH", "the gdb to use", "gdb");
  parser->AddFlag("python-dir", "DIR",
                  "where the trainscope package is (env TRAINSCOPE_PYTHON_DIR; default: "
                  "<bindir>/../python)");
  parser->AddBoolFlag("json", "print machine-readable JSON instead of text");
}

std::optional<int> PlanInjection(const base::ParsedArgs& args, const CommandContext& ctx,
                                 const std::string& command, InjectionPlan* plan) {
  std::vector<std::string> pid_texts;
  for (const std::string& value : args.Values("pid")) {
    for (absl::string_view piece : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      pid_texts.emplace_back(piece);
    }
  }
  const std::vector<std::string> rest = args.Rest();
  const bool by_match = args.Has("match");
  if (!rest.empty() && pid_texts.empty()) {
    return UsageError(ctx, command,
                      absl::StrCat("unexpected argument '", rest[0],
                                   "'; process ids go after --pid (--pid ", rest[0], ")"));
  }
  pid_texts.insert(pid_texts.end(), rest.begin(), rest.end());
  if (pid_texts.empty() && !by_match) {
    return UsageError(ctx, command, "say which processes: --pid PID [PID...] or --match PATTERN");
  }
  if (!pid_texts.empty() && by_match) {
    return UsageError(ctx, command, "give either --pid or --match, not both");
  }
  absl::StatusOr<std::optional<double>> timeout = args.Double("timeout", 0.1, 3600);
  if (!timeout.ok()) return UsageError(ctx, command, timeout.status().message());
  plan->injector.timeout = absl::Seconds(timeout->value_or(kDefaultInjectTimeoutSeconds));
  plan->injector.gdb = args.Value("gdb").value_or("gdb");
  plan->injector.stop = ctx.stop;
  plan->json = args.Bool("json");

  ProcessTable table;
  std::vector<std::string> errors;
  if (by_match) {
    const std::string pattern = *args.Value("match");
    if (pattern.empty()) return UsageError(ctx, command, "--match needs a non-empty PATTERN");
    absl::StatusOr<std::vector<ProcessInfo>> matched = table.MatchTrainingProcesses(pattern);
    if (!matched.ok()) return Fail(ctx, command, matched.status());
    plan->targets = *std::move(matched);
  } else {
    std::set<pid_t> seen;
    for (const std::string& text : pid_texts) {
      absl::StatusOr<pid_t> pid = ParsePid(text);
      if (!pid.ok()) return UsageError(ctx, command, pid.status().message());
      if (!seen.insert(*pid).second) continue;
      absl::StatusOr<ProcessInfo> info = table.Inspect(*pid);
      if (!info.ok()) {
        errors.emplace_back(info.status().message());
        continue;
      }
      plan->targets.push_back(*std::move(info));
    }
  }
  for (const ProcessInfo& target : plan->targets) {
    if (absl::Status s = table.CheckInjectable(target); !s.ok()) errors.emplace_back(s.message());
  }
  if (!errors.empty()) {
    for (const std::string& error : errors)
      *ctx.err << "trainscope " << command << ": " << error << "\n";
    *ctx.err << "trainscope " << command << ": nothing was done (no process was touched)"
             << std::endl;
    return kExitFailed;
  }
  if (!ProgramOnPath(plan->injector.gdb)) {
    return Fail(ctx, command,
                absl::NotFoundError(absl::StrCat(
                    "gdb is needed to enter a running process and '", plan->injector.gdb,
                    "' was not found; install it (Debian: apt-get install gdb, as in "
                    "scripts/setup.sh) or give --gdb PATH")));
  }
  absl::StatusOr<PluginPaths> plugin =
      PluginLocator::Locate(args.Value("python-dir"), ctx.env, SelfExecutable(),
                            /*need_sitecustomize=*/false);
  if (!plugin.ok()) return Fail(ctx, command, plugin.status());
  plan->plugin = *std::move(plugin);
  return std::nullopt;
}

int ReportOutcomes(const std::vector<InjectionOutcome>& outcomes, const InjectionPlan& plan,
                   const CommandContext& ctx, const std::string& command) {
  size_t succeeded = 0;
  for (const InjectionOutcome& outcome : outcomes) succeeded += outcome.status.ok() ? 1 : 0;
  if (plan.json) {
    google::protobuf::Struct report;
    auto& fields = *report.mutable_fields();
    fields["command"].set_string_value(command);
    fields["ok"].set_bool_value(succeeded == outcomes.size());
    auto* list = fields["processes"].mutable_list_value();
    for (const InjectionOutcome& outcome : outcomes) {
      auto& entry = *list->add_values()->mutable_struct_value()->mutable_fields();
      entry["pid"].set_number_value(outcome.pid);
      entry["ok"].set_bool_value(outcome.status.ok());
      if (outcome.status.ok()) {
        *entry["result"].mutable_struct_value() = outcome.result;
      } else {
        entry["error"].set_string_value(std::string(outcome.status.message()));
      }
    }
    std::string json;
    google::protobuf::util::JsonPrintOptions print;
    (void)google::protobuf::util::MessageToJsonString(report, &json, print);
    *ctx.out << json << std::endl;
  } else {
    for (const InjectionOutcome& outcome : outcomes) {
      if (outcome.status.ok()) {
        *ctx.out << "pid " << outcome.pid << ": " << DescribeResult(command, outcome.result)
                 << "\n";
      } else {
        *ctx.err << "trainscope " << command << ": " << outcome.status.message() << "\n";
      }
    }
    if (outcomes.size() > 1 || succeeded != outcomes.size()) {
      *ctx.out << command << "ed " << succeeded << " of " << outcomes.size()
               << (outcomes.size() == 1 ? " process" : " processes") << "\n";
    }
    *ctx.out << std::flush;
    *ctx.err << std::flush;
  }
  return succeeded == outcomes.size() ? kExitOk : kExitFailed;
}

}  // namespace trainscope::cli
