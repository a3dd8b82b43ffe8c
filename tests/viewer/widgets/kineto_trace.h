// One of the real GPU traces (/work/shared/data/kineto-gpu, read its
// README), imported into a fresh data dir as `trainscope import` does and
// opened as the viewer opens a stored job; the dir is removed again. For the
// widget tests that check views on real data.
#ifndef TESTS_VIEWER_WIDGETS_KINETO_TRACE_H_
#define TESTS_VIEWER_WIDGETS_KINETO_TRACE_H_

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "trainscope/collector/import/trace_importer.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/stored_job_loader.h"

namespace trainscope::viewer::testing {

// `file` under KINETO_GPU_DATA, e.g. "nccl_parser_config__nccl_data.json.gz",
// as job `job`.
inline absl::StatusOr<JobData> LoadKinetoTrace(const std::string& file, const std::string& job) {
  const std::filesystem::path trace = std::filesystem::path(KINETO_GPU_DATA) / file;
  if (!std::filesystem::exists(trace)) {
    return absl::NotFoundError(absl::StrCat(trace.string(), " is missing"));
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    absl::StrCat("trainscope-kineto-", job, "-", ::getpid());
  std::filesystem::remove_all(dir);
  {
    absl::StatusOr<std::unique_ptr<collector::TraceImporter>> importer =
        collector::TraceImporter::Create({.data_dir = dir, .job_id = job, .fsync = false});
    if (!importer.ok()) return importer.status();
    if (absl::Status imported = (*importer)->Import({{.path = trace.string()}}); !imported.ok()) {
      std::filesystem::remove_all(dir);
      return imported;
    }
  }
  absl::StatusOr<JobData> data = LoadStoredJob(dir, job, {});
  std::filesystem::remove_all(dir);
  return data;
}

}  // namespace trainscope::viewer::testing

#endif  // TESTS_VIEWER_WIDGETS_KINETO_TRACE_H_
