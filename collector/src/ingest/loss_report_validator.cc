#include "trainscope/collector/ingest/loss_report_validator.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {
namespace {

// Collects the path of the field being checked ("loss_reports[0].top[3]") so
// every message names it.
class ReportChecker {
 public:
  ReportChecker(uint64_t sequence, const LossReportLimits& limits)
      : sequence_(sequence), limits_(limits) {}

  absl::Status Report(const v1::LossReport& report, const std::string& at) const {
    if (absl::Status s = Name(report.selection_layer(), at + ".selection_layer"); !s.ok()) return s;
    if (report.monitored_layers_size() > static_cast<int>(limits_.max_maps)) {
      return Invalid(at + ".monitored_layers", absl::StrCat("has ", report.monitored_layers_size(),
                                                            " layers; at most ", limits_.max_maps));
    }
    for (int i = 0; i < report.monitored_layers_size(); ++i) {
      if (absl::Status s = Name(report.monitored_layers(i),
                                absl::StrCat(at, ".monitored_layers[", i, "]"));
          !s.ok()) {
        return s;
      }
    }
    if (report.top_n() > limits_.max_top_n ||
        report.top_size() > static_cast<int>(limits_.max_top_n)) {
      return Invalid(at + ".top", absl::StrCat("has top_n ", report.top_n(), " and ",
                                               report.top_size(), " items; at most ",
                                               limits_.max_top_n));
    }
    for (int i = 0; i < report.top_size(); ++i) {
      const v1::ItemScore& score = report.top(i);
      const std::string where = absl::StrCat(at, ".top[", i, "]");
      if (absl::Status s = Score(score.contribution(), score.label(), score.prediction(), where);
          !s.ok()) {
        return s;
      }
      if (score.has_input()) {
        if (absl::Status s = Thumbnail(score.input(), where + ".input"); !s.ok()) return s;
      }
    }
    if (report.snapshots_size() > static_cast<int>(limits_.max_snapshots)) {
      return Invalid(at + ".snapshots", absl::StrCat("has ", report.snapshots_size(),
                                                     " snapshots; at most ", limits_.max_snapshots));
    }
    for (int i = 0; i < report.snapshots_size(); ++i) {
      if (absl::Status s = Snapshot(report.snapshots(i), absl::StrCat(at, ".snapshots[", i, "]"));
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Invalid(const std::string& field, absl::string_view what) const {
    return BadInput(absl::StatusCode::kInvalidArgument, "batch.loss_reports",
                    absl::StrCat("batch ", sequence_, ": ", field, " ", what));
  }

  absl::Status Name(const std::string& name, const std::string& at) const {
    if (name.size() > limits_.max_layer_name_bytes) {
      return Invalid(at, absl::StrCat("is ", name.size(), " bytes; at most ",
                                      limits_.max_layer_name_bytes));
    }
    return absl::OkStatus();
  }

  absl::Status Score(double contribution, int32_t label, int32_t prediction,
                     const std::string& at) const {
    if (!std::isfinite(contribution)) {
      return Invalid(at + ".contribution", absl::StrCat("is ", contribution, "; expected a finite number"));
    }
    if (label < -1 || prediction < -1) {
      return Invalid(at, absl::StrCat("has label ", label, " and prediction ", prediction,
                                      "; expected class indices, or -1 for unknown"));
    }
    return absl::OkStatus();
  }

  absl::Status Thumbnail(const v1::Thumbnail& t, const std::string& at) const {
    const uint32_t side = limits_.max_thumbnail_side;
    if (t.height() == 0 || t.width() == 0 || t.height() > side || t.width() > side ||
        (t.channels() != 1 && t.channels() != 3)) {
      return Invalid(at, absl::StrCat("is ", t.height(), " x ", t.width(), " x ", t.channels(),
                                      "; expected 1 to ", side,
                                      " pixels per side and 1 or 3 channels"));
    }
    const uint64_t expected = uint64_t{t.height()} * t.width() * t.channels();
    if (t.pixels().size() != expected) {
      return Invalid(at + ".pixels",
                     absl::StrCat("has ", t.pixels().size(), " bytes, expected ", expected, " (",
                                  t.height(), " x ", t.width(), " x ", t.channels(), ")"));
    }
    return absl::OkStatus();
  }

  absl::Status Snapshot(const v1::ItemSnapshot& snapshot, const std::string& at) const {
    if (absl::Status s =
            Score(snapshot.contribution(), snapshot.label(), snapshot.prediction(), at);
        !s.ok()) {
      return s;
    }
    if (snapshot.has_input()) {
      if (absl::Status s = Thumbnail(snapshot.input(), at + ".input"); !s.ok()) return s;
    }
    if (snapshot.maps_size() > static_cast<int>(limits_.max_maps)) {
      return Invalid(at + ".maps", absl::StrCat("has ", snapshot.maps_size(), " maps; at most ",
                                                limits_.max_maps));
    }
    for (int i = 0; i < snapshot.maps_size(); ++i) {
      const v1::LayerMap& map = snapshot.maps(i);
      const std::string where = absl::StrCat(at, ".maps[", i, "]");
      if (absl::Status s = Name(map.layer(), where + ".layer"); !s.ok()) return s;
      const uint32_t side = limits_.max_map_side;
      if (map.height() == 0 || map.width() == 0 || map.height() > side || map.width() > side) {
        return Invalid(where, absl::StrCat("is ", map.height(), " x ", map.width(),
                                           "; expected 1 to ", side, " pixels per side"));
      }
      const uint64_t expected = uint64_t{2} * map.height() * map.width();
      for (const auto& [field, bytes] : {std::pair<const char*, const std::string*>{
                                             ".contribution", &map.contribution()},
                                         {".reduction", &map.reduction()}}) {
        if (bytes->size() != expected) {
          return Invalid(where + field,
                         absl::StrCat("has ", bytes->size(), " bytes, expected ", expected, " (",
                                      map.height(), " x ", map.width(), " half floats)"));
        }
      }
    }
    return absl::OkStatus();
  }

  const uint64_t sequence_;
  const LossReportLimits& limits_;
};

}  // namespace

absl::Status ValidateLossReports(const v1::EventBatch& batch, const LossReportLimits& limits) {
  if (batch.loss_reports_size() > static_cast<int>(limits.max_reports)) {
    return BadInput(absl::StatusCode::kInvalidArgument, "batch.loss_reports",
                    absl::StrCat("batch ", batch.sequence(), ": loss_reports has ",
                                 batch.loss_reports_size(), " reports; at most ",
                                 limits.max_reports, " per batch"));
  }
  const ReportChecker checker(batch.sequence(), limits);
  for (int i = 0; i < batch.loss_reports_size(); ++i) {
    if (absl::Status s = checker.Report(batch.loss_reports(i), absl::StrCat("loss_reports[", i, "]"));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace trainscope::collector
