// `trainscope delete JOB --data-dir DIR --yes`: removes a stored job (its log
// segments, token and index rows) from a data directory.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "subcommand_support.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/subcommands.h"
#include "trainscope/collector/store/stored_jobs.h"

namespace trainscope::cli {

int RunDeleteCommand(const std::vector<std::string>& args, const CommandContext& ctx) {
  base::ArgParser parser(
      "trainscope delete",
      "Delete a stored job from a data directory: its log segments, its token and its rows "
      "in the index. A live job is never deleted: while a trainscope-collector has the job "
      "open (it opens every job of its --data-dir) this is refused; the collector's own "
      "retention (--retain-days, default 30; --retain-gb) removes ended jobs while it runs.");
  parser.AddPositional("JOB", "the job to delete");
  parser.AddFlag("data-dir", "DIR", "the data directory (the collector's --data-dir)",
                 "./trainscope-data");
  parser.AddBoolFlag("yes", "really delete (without it: say what would be deleted)");
  parser.AddEpilog("Example:\n  trainscope delete resnet-0412 --data-dir /var/lib/trainscope --yes");
  base::ParsedArgs parsed;
  if (std::optional<int> code = ParseOrExit(parser, "delete", args, ctx, &parsed)) return *code;
  const std::string job = parsed.Positional("JOB").value_or("");
  if (absl::Status s = protocol::ValidateJobId(job, "JOB"); !s.ok()) {
    return UsageError(ctx, "delete", s.message());
  }
  const std::filesystem::path data_dir = parsed.Value("data-dir").value_or("./trainscope-data");
  absl::StatusOr<collector::StoredJob> stored = collector::StatStoredJob(data_dir, job);
  if (!stored.ok()) return Fail(ctx, "delete", stored.status());
  const std::string what =
      absl::StrCat("job ", job, " (", FormatBytes(stored->bytes), ", last written ",
                   FormatTimestamp(absl::ToUnixNanos(stored->last_write), ctx.time_zone),
                   ") from ", data_dir.string());
  if (!parsed.Bool("yes")) {
    *ctx.err << "trainscope delete: would delete " << what << "; pass --yes to delete it\n"
             << std::flush;
    return kExitFailed;
  }
  if (absl::Status deleted = collector::DeleteStoredJob(data_dir, job); !deleted.ok()) {
    return Fail(ctx, "delete", deleted);
  }
  *ctx.out << "deleted " << what << "\n" << std::flush;
  return kExitOk;
}

}  // namespace trainscope::cli
