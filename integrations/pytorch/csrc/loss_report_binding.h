// Converts the report dict that trainscope.LossContribution builds (see
// loss_contribution.py, _report) into the C API's trainscope_loss_report.
//
// Usage (python_module.cc):
//   LossReportView view(dict);   // throws ValueError naming a missing field
//   trainscope_session_submit_loss_report(session, view.report());
//
// The view owns copies of every string and buffer the C structs point to; it
// must outlive the submit call (which copies the report).
// Threading: needs the GIL (it reads Python objects).
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_LOSS_REPORT_BINDING_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_LOSS_REPORT_BINDING_H_

#include <pybind11/pybind11.h>

#include <deque>
#include <string>
#include <vector>

#include "trainscope_session.h"

namespace trainscope::pytorch {

class LossReportView {
 public:
  explicit LossReportView(const pybind11::dict& d);
  LossReportView(const LossReportView&) = delete;
  LossReportView& operator=(const LossReportView&) = delete;

  const trainscope_loss_report* report() const { return &report_; }

 private:
  const char* Keep(std::string text);
  const trainscope_thumbnail* ThumbnailOf(const pybind11::dict& d);
  void FillSnapshot(const pybind11::dict& d, trainscope_item_snapshot* s);

  // Deques: elements never move, so the pointers into them stay valid.
  std::deque<std::string> strings_;
  std::deque<trainscope_thumbnail> thumbnails_;
  std::deque<std::vector<trainscope_layer_map>> maps_;
  std::vector<const char*> monitored_;
  std::vector<trainscope_item_score> top_;
  std::vector<trainscope_item_snapshot> snapshots_;
  trainscope_loss_report report_{};
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_LOSS_REPORT_BINDING_H_
