// `trainscope detach`: removes trainscope from running processes (attached
// with `trainscope attach`, `trainscope run` or in code); they keep training.
#include "subcommand_support.h"
#include "target_selection.h"
#include "trainscope/cli/subcommands.h"

namespace trainscope::cli {

int RunDetachCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope detach",
      "Detach trainscope from running PyTorch processes: every hook, callback and "
      "patch is removed and what was recorded is flushed; training goes on at full "
      "speed. Needs gdb and permission to ptrace the processes.");
  AddTargetFlags(&parser);
  parser.AddEpilog(
      "Examples:\n"
      "  trainscope detach --pid 4101 4102\n"
      "  trainscope detach --match train.py");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "detach", args, ctx, &parsed)) return *code;
  InjectionPlan plan;
  if (std::optional<int> code = PlanInjection(parsed, ctx, "detach", &plan)) return *code;
  InjectionRequest request;
  request.action = InjectionRequest::Action::kDetach;
  request.python_dir = plan.plugin.python_dir;
  const std::vector<InjectionOutcome> outcomes =
      PythonInjector(plan.injector).Run(plan.targets, request);
  return ReportOutcomes(outcomes, plan, ctx, "detach");
}

}  // namespace trainscope::cli
