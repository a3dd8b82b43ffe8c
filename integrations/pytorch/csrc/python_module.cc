// trainscope._C: the pybind11 face of the plugin. The Python package
// (integrations/pytorch/trainscope) wraps it; nothing here is public API.
//
// Threading: every function holds the GIL except Session.close, which
// releases it while the agent flushes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/time/time.h"
#include "collective_tag.h"
#include "empty_callback.h"
#include "loss_report_binding.h"
#include "plugin_session.h"
#include "record_function_observer.h"
#include "trainscope/agent/agent.h"

namespace py = pybind11;

namespace trainscope::pytorch {
namespace {

py::dict StatsDict(const agent::AgentStats& s) {
  py::dict d;
  d["events_recorded"] = s.events_recorded;
  d["dropped_ring_full"] = s.dropped_ring_full;
  d["dropped_buffer_full"] = s.dropped_buffer_full;
  d["dropped_shutdown"] = s.dropped_shutdown;
  d["events_sampled_out"] = s.events_sampled_out;
  d["events_refused"] = s.events_refused;
  d["events_acked"] = s.events_acked;
  d["batches_sent"] = s.batches_sent;
  d["batches_acked"] = s.batches_acked;
  d["reconnects"] = s.reconnects;
  d["loss_reports_submitted"] = s.loss_reports_submitted;
  d["loss_reports_dropped"] = s.loss_reports_dropped;
  d["connected"] = s.connected;
  d["recording"] = s.recording;
  d["halt_requested"] = s.halt_requested;
  return d;
}

// TEST ONLY (AgentOptions::test_clock_*): a simulated clock error from the
// environment, so a multi-process test can give each rank a known skew.
template <typename T>
T TestClockFromEnv(const char* name, T fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  T value;
  if constexpr (std::is_floating_point_v<T>) {
    value = std::strtod(text, &end);
  } else {
    value = std::strtoll(text, &end, 10);
  }
  if (errno != 0 || end == text || *end != '\0') {
    throw std::invalid_argument(std::string(name) + "=\"" + text + "\": expected a number");
  }
  return value;
}

std::unique_ptr<PluginSession> StartSession(py::kwargs kw) {
  auto get_str = [&](const char* key, const char* fallback) {
    return kw.contains(key) && !kw[key].is_none() ? kw[key].cast<std::string>()
                                                  : std::string(fallback);
  };
  auto get_u32 = [&](const char* key, uint32_t fallback) {
    return kw.contains(key) && !kw[key].is_none() ? kw[key].cast<uint32_t>() : fallback;
  };
  SessionOptions options;
  agent::AgentOptions& a = options.agent;
  a.collector_address = get_str("collector", "127.0.0.1:7070");
  a.job_id = get_str("job", "");
  a.run_id = get_str("run_id", "");
  a.job_token = get_str("token", "");
  a.rank = get_u32("rank", 0);
  a.world_size = get_u32("world_size", 1);
  a.local_rank = get_u32("local_rank", 0);
  a.restart_count = get_u32("restart_count", 0);
  a.host = get_str("host", "");
  a.device = get_str("device", "cpu");
  a.framework = "pytorch";
  a.framework_version = get_str("framework_version", "");
  a.start_recording = !kw.contains("recording") || kw["recording"].cast<bool>();
  if (kw.contains("halt_when") && !kw["halt_when"].is_none()) {
    a.halt_when = kw["halt_when"].cast<std::vector<std::string>>();
  }
  if (kw.contains("halt_below_efficiency") && !kw["halt_below_efficiency"].is_none()) {
    a.halt_below_efficiency = kw["halt_below_efficiency"].cast<double>();
  }
  a.halt_for_steps = get_u32("halt_for_steps", 0);
  a.log_to_stderr = !kw.contains("log_to_stderr") || kw["log_to_stderr"].cast<bool>();
  if (kw.contains("shutdown_timeout_s")) {
    a.shutdown_deadline = absl::Seconds(kw["shutdown_timeout_s"].cast<double>());
  }
  a.test_clock_offset_ns =
      TestClockFromEnv<int64_t>("TRAINSCOPE_TEST_CLOCK_OFFSET_NS", a.test_clock_offset_ns);
  a.test_clock_drift_ppm =
      TestClockFromEnv<double>("TRAINSCOPE_TEST_CLOCK_DRIFT_PPM", a.test_clock_drift_ppm);
  a.test_clock_origin_ns =
      TestClockFromEnv<int64_t>("TRAINSCOPE_TEST_CLOCK_ORIGIN_NS", a.test_clock_origin_ns);
  options.shapes = !kw.contains("shapes") || kw["shapes"].cast<bool>();
  options.shapes_every_n_steps = get_u32("shapes_every_n_steps", 1);
  if (kw.contains("halt_grace_s") && !kw["halt_grace_s"].is_none()) {
    options.halt_grace_s = kw["halt_grace_s"].cast<double>();
  } else if (kw.contains("halt_grace_s")) {
    options.halt_grace_s = 0;  // None: no SIGTERM fallback
  }
  options.first_step = kw.contains("first_step") ? kw["first_step"].cast<uint64_t>() : 0;
  options.clock = get_str("clock", "auto") == "monotonic" ? TickClock::Source::kMonotonic
                                                          : TickClock::Source::kAuto;
  absl::StatusOr<std::unique_ptr<PluginSession>> session =
      PluginSession::Start(std::move(options), &InstallRecordFunctionObserver);
  if (!session.ok()) throw std::invalid_argument(std::string(session.status().message()));
  return *std::move(session);
}

}  // namespace
}  // namespace trainscope::pytorch

PYBIND11_MODULE(_C, m) {
  using trainscope::pytorch::PluginSession;
  namespace ts = trainscope::pytorch;
  m.doc() = "trainscope's torch extension (internal; use the trainscope package)";
  m.attr("TORCH_BUILD_VERSION") = TRAINSCOPE_TORCH_BUILD_VERSION;
  m.def("now_ns", &trainscope::agent::Agent::Now, "CLOCK_MONOTONIC ns (the agent's clock)");
  m.def("_bench_empty_callback", &ts::SetEmptyCallback, py::arg("enable"),
        "Adds/removes an empty global RecordFunction callback (the benchmark's floor)");

  m.def("_has_global_callbacks", &ts::HasGlobalCallbacks,
        "Whether any global RecordFunction callback is registered (tests)");

  py::class_<PluginSession>(m, "Session")
      .def(py::init(&ts::StartSession))
      .def(
          "step_boundary",
          [](PluginSession& s, std::optional<uint64_t> completed_step,
             std::optional<uint64_t> device_allocated,
             std::optional<uint64_t> device_peak) -> py::object {
            std::optional<std::pair<uint64_t, uint64_t>> device;
            if (device_allocated && device_peak) device.emplace(*device_allocated, *device_peak);
            const PluginSession::Boundary b = s.OnStepBoundary(completed_step, device);
            if (!b.halt) return py::none();
            return py::str(b.reason);
          },
          py::arg("completed_step") = py::none(), py::arg("device_allocated") = py::none(),
          py::arg("device_peak") = py::none(),
          "Marks a step boundary; returns the halt reason when the job halts here, else None")
      .def("halt_handled", &PluginSession::HaltHandled)
      .def(
          "record_phase",
          [](PluginSession& s, int phase, int64_t start_ns, int64_t end_ns) {
            s.RecordPhase(static_cast<trainscope::agent::Phase>(phase), start_ns, end_ns);
          },
          py::arg("phase"), py::arg("start_ns"), py::arg("end_ns"))
      .def("set_stage", &PluginSession::SetStage, py::arg("stage"),
           "Records the pipeline.stage counter now and at every step boundary")
      .def_property_readonly("stage", &PluginSession::stage)
      .def(
          "set_collective_tag",
          [](PluginSession& s, int32_t peer, std::string_view group) {
            ts::PushCollectiveTag(s.collectives().serial(), s.collectives().MakeTag(peer, group));
          },
          py::arg("peer"), py::arg("group"),
          "Tags the collectives of this thread's torch.distributed call (until cleared)")
      .def("clear_collective_tag", [](PluginSession&) { ts::PopCollectiveTag(); })
      .def_property_readonly("step", &PluginSession::step)
      .def_property_readonly("recording", [](PluginSession& s) { return s.agent().recording(); })
      .def("set_recording", [](PluginSession& s, bool enabled) { s.agent().SetRecording(enabled); })
      .def_property_readonly(
          "loss_contribution_switch",
          [](PluginSession& s) -> std::optional<std::pair<bool, uint64_t>> {
            auto v = s.agent().loss_contribution_switch();
            if (!v.has_value()) return std::nullopt;
            return std::make_pair(v->enabled, v->serial);
          },
          "the collector's loss-contribution switch: (enabled, serial), or None (never set)")
      .def(
          "submit_loss_report",
          [](PluginSession& s, const py::dict& report) {
            return s.agent().SubmitLossReport(ts::LossReportFromDict(report));
          },
          py::arg("report"),
          "Sends a LossContribution report with the next batch; False when dropped (counted)")
      .def_property_readonly("halt_pending", &PluginSession::halt_pending)
      .def("halt_info",
           [](PluginSession& s) -> py::object {
             const std::optional<trainscope::agent::HaltInfo> info = s.agent().halt_info();
             if (!info.has_value()) return py::none();
             py::dict d;
             d["halt_id"] = info->halt_id;
             d["reason"] = info->reason;
             d["requested_by"] = info->requested_by;
             d["requested_unix_ns"] = info->requested_unix_ns;
             d["halt_at_step"] = info->halt_at_step;
             return d;
           })
      .def("stats", [](const PluginSession& s) { return ts::StatsDict(s.stats()); })
      .def_property_readonly("job_token", [](PluginSession& s) { return s.agent().job_token(); })
      .def_property_readonly("uses_tsc",
                             [](const PluginSession& s) { return s.clock().uses_tsc(); })
      .def_property_readonly("closed", &PluginSession::closed)
      .def(
          "close",
          [](PluginSession& s, double timeout_s, std::string error) {
            py::gil_scoped_release release;
            s.Close(absl::Seconds(timeout_s), std::move(error));
          },
          py::arg("timeout_s") = 5.0, py::arg("error") = "");
}
