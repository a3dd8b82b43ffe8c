// Converts the report dict that trainscope.LossContribution builds (see
// loss_contribution.py, _report) into a trainscope.v1.LossReport.
//
// Usage (python_module.cc):
//   v1::LossReport report = LossReportFromDict(dict);  // throws ValueError
//   session.agent().SubmitLossReport(std::move(report));
//
// Threading: needs the GIL (it reads Python objects).
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_LOSS_REPORT_BINDING_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_LOSS_REPORT_BINDING_H_

#include <pybind11/pybind11.h>

#include "trainscope/v1/loss.pb.h"

namespace trainscope::pytorch {

trainscope::v1::LossReport LossReportFromDict(const pybind11::dict& report);

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_LOSS_REPORT_BINDING_H_
