// trainscope._C: the pybind11 face of the plugin. The Python package
// (integrations/pytorch/trainscope) wraps it; nothing here is public API.
// Compiled against the user's torch and nothing of trainscope's build but the
// C headers of libtrainscope_agent.so (trainscope_session.h), which does the
// work behind every call here.
//
// Threading: every function holds the GIL except Session.close, which
// releases it while the agent flushes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
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
#include <vector>

#include "collective_tag.h"
#include "empty_callback.h"
#include "loss_report_binding.h"
#include "record_function_observer.h"
#include "trainscope_session.h"

// A pip torch's build passes the version of the interpreter's torch: the
// headers found must be that torch's (never another one's on the include
// path, such as Debian's /usr/include/torch, which has no version.h at all).
#ifdef TRAINSCOPE_EXPECT_TORCH_MAJOR
#include <torch/version.h>
#if TORCH_VERSION_MAJOR != TRAINSCOPE_EXPECT_TORCH_MAJOR || \
    TORCH_VERSION_MINOR != TRAINSCOPE_EXPECT_TORCH_MINOR
#error "the torch headers found are not those of the target interpreter's torch"
#endif
#endif

namespace py = pybind11;

namespace trainscope::pytorch {
namespace {

// One attachment (trainscope_session.h); the Python object owns it.
class NativeSession {
 public:
  explicit NativeSession(trainscope_session* s) : s_(s) {}
  ~NativeSession() { trainscope_session_free(s_); }
  NativeSession(const NativeSession&) = delete;
  NativeSession& operator=(const NativeSession&) = delete;
  trainscope_session* get() const { return s_; }

 private:
  trainscope_session* const s_;
};

py::dict StatsDict(const struct trainscope_agent_stats& s) {
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
  static const char* const kGpuStates[] = {"off", "unavailable", "active", "yielded"};
  d["gpu_activity"] = s.gpu_activity < 4 ? kGpuStates[s.gpu_activity] : "unknown";
  d["gpu_records_lost"] = s.gpu_records_lost;
  d["gpu_buffers_refused"] = s.gpu_buffers_refused;
  d["gpu_events_unresolved"] = s.gpu_events_unresolved;
  d["gpu_events_out_of_order"] = s.gpu_events_out_of_order;
  d["connected"] = s.connected != 0;
  d["recording"] = s.recording != 0;
  d["halt_requested"] = s.halt_requested != 0;
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

std::unique_ptr<NativeSession> StartSession(py::kwargs kw) {
  auto get_str = [&](const char* key, const char* fallback) {
    return kw.contains(key) && !kw[key].is_none() ? kw[key].cast<std::string>()
                                                  : std::string(fallback);
  };
  auto get_u32 = [&](const char* key, uint32_t fallback) {
    return kw.contains(key) && !kw[key].is_none() ? kw[key].cast<uint32_t>() : fallback;
  };
  // The strings the C options point to live until the session has started.
  const std::string collector = get_str("collector", "127.0.0.1:7070");
  const std::string job = get_str("job", ""), run_id = get_str("run_id", "");
  const std::string token = get_str("token", ""), host = get_str("host", "");
  const std::string device = get_str("device", "cpu");
  const std::string framework_version = get_str("framework_version", "");
  std::vector<std::string> halt_when;
  if (kw.contains("halt_when") && !kw["halt_when"].is_none()) {
    halt_when = kw["halt_when"].cast<std::vector<std::string>>();
  }
  std::vector<const char*> halt_when_c;
  for (const std::string& kind : halt_when) halt_when_c.push_back(kind.c_str());

  trainscope_session_options options;
  trainscope_session_options_init(&options);
  trainscope_agent_options& a = options.agent;
  a.collector_address = collector.c_str();
  a.job_id = job.c_str();
  a.run_id = run_id.c_str();
  a.job_token = token.c_str();
  a.rank = get_u32("rank", 0);
  a.world_size = get_u32("world_size", 1);
  a.local_rank = get_u32("local_rank", 0);
  a.restart_count = get_u32("restart_count", 0);
  a.host = host.c_str();
  a.device = device.c_str();
  a.framework = "pytorch";
  a.framework_version = framework_version.c_str();
  a.start_recording = !kw.contains("recording") || kw["recording"].cast<bool>() ? 1 : 0;
  a.halt_when = halt_when_c.data();
  a.halt_when_count = halt_when_c.size();
  if (kw.contains("halt_below_efficiency") && !kw["halt_below_efficiency"].is_none()) {
    a.halt_below_efficiency = kw["halt_below_efficiency"].cast<double>();
  }
  a.halt_for_steps = get_u32("halt_for_steps", 0);
  a.log_to_stderr = !kw.contains("log_to_stderr") || kw["log_to_stderr"].cast<bool>() ? 1 : 0;
  if (kw.contains("shutdown_timeout_s")) {
    const double s = kw["shutdown_timeout_s"].cast<double>();
    a.shutdown_deadline_ms = s <= 0 ? 0 : static_cast<uint32_t>(s * 1000.0 + 0.5);
  }
  a.test_clock_offset_ns = TestClockFromEnv<int64_t>("TRAINSCOPE_TEST_CLOCK_OFFSET_NS", 0);
  a.test_clock_drift_ppm = TestClockFromEnv<double>("TRAINSCOPE_TEST_CLOCK_DRIFT_PPM", 0.0);
  a.test_clock_origin_ns = TestClockFromEnv<int64_t>("TRAINSCOPE_TEST_CLOCK_ORIGIN_NS", 0);
  options.shapes = !kw.contains("shapes") || kw["shapes"].cast<bool>() ? 1 : 0;
  options.shapes_every_n_steps = get_u32("shapes_every_n_steps", 1);
  if (kw.contains("halt_grace_s") && !kw["halt_grace_s"].is_none()) {
    options.halt_grace_s = kw["halt_grace_s"].cast<double>();
  } else if (kw.contains("halt_grace_s")) {
    options.halt_grace_s = 0;  // None: no SIGTERM fallback
  }
  options.first_step = kw.contains("first_step") ? kw["first_step"].cast<uint64_t>() : 0;
  options.monotonic_clock = get_str("clock", "auto") == "monotonic" ? 1 : 0;
  a.gpu_activity = kw.contains("gpu_activity") && kw["gpu_activity"].cast<bool>() ? 1 : 0;
  const std::string cupti_library = get_str("cupti_library", "");
  a.cupti_library = cupti_library.c_str();
  trainscope_session* session = nullptr;
  char error[1024];
  if (trainscope_session_start(&options, &InstallRecordFunctionObserver, nullptr, &session, error,
                               sizeof error) != 0) {
    throw std::invalid_argument(error);
  }
  return std::make_unique<NativeSession>(session);
}

std::string JobToken(const trainscope_session* s) {
  std::string token(256, '\0');
  size_t n = trainscope_session_job_token(s, token.data(), token.size());
  if (n >= token.size()) {
    token.assign(n + 1, '\0');
    n = trainscope_session_job_token(s, token.data(), token.size());
  }
  token.resize(std::min(n, token.size() - 1));
  return token;
}

}  // namespace
}  // namespace trainscope::pytorch

PYBIND11_MODULE(_C, m) {
  namespace ts = trainscope::pytorch;
  using ts::NativeSession;
  m.doc() = "trainscope's torch extension (internal; use the trainscope package)";
  // An extension built against another libtrainscope_agent.so refuses to load.
  if (trainscope_session_abi_version() != TRAINSCOPE_SESSION_ABI_VERSION) {
    throw py::import_error("trainscope: this extension was built for session ABI " +
                           std::to_string(TRAINSCOPE_SESSION_ABI_VERSION) +
                           " but libtrainscope_agent.so has " +
                           std::to_string(trainscope_session_abi_version()) +
                           "; rebuild the extension against this agent library");
  }
  m.attr("TORCH_BUILD_VERSION") = TRAINSCOPE_TORCH_BUILD_VERSION;
  m.attr("SESSION_ABI_VERSION") = TRAINSCOPE_SESSION_ABI_VERSION;
  m.def("now_ns", &trainscope_now_ns, "CLOCK_MONOTONIC ns (the agent's clock)");
  m.def("_bench_empty_callback", &ts::SetEmptyCallback, py::arg("enable"),
        "Adds/removes an empty global RecordFunction callback (the benchmark's floor)");

  m.def("_has_global_callbacks", &ts::HasGlobalCallbacks,
        "Whether any global RecordFunction callback is registered (tests)");

  py::class_<NativeSession>(m, "Session")
      .def(py::init(&ts::StartSession))
      .def(
          "step_boundary",
          [](NativeSession& s, std::optional<uint64_t> completed_step,
             std::optional<uint64_t> device_allocated, std::optional<uint64_t> device_peak,
             std::optional<uint64_t> device_reserved) -> py::object {
            const bool device = device_allocated.has_value() && device_peak.has_value() &&
                                device_reserved.has_value();
            char reason[4096];
            uint64_t next = 0;
            const int halt = trainscope_session_step_boundary(
                s.get(), completed_step.has_value() ? 1 : 0, completed_step.value_or(0),
                device ? 1 : 0, device_allocated.value_or(0), device_peak.value_or(0),
                device_reserved.value_or(0), &next, reason, sizeof reason);
            if (!halt) return py::none();
            return py::str(reason);
          },
          py::arg("completed_step") = py::none(), py::arg("device_allocated") = py::none(),
          py::arg("device_peak") = py::none(), py::arg("device_reserved") = py::none(),
          "Marks a step boundary; returns the halt reason when the job halts here, else None")
      .def("halt_handled", [](NativeSession& s) { trainscope_session_halt_handled(s.get()); })
      .def(
          "record_phase",
          [](NativeSession& s, int phase, int64_t start_ns, int64_t end_ns) {
            trainscope_session_record_phase(s.get(), static_cast<uint32_t>(phase), start_ns,
                                            end_ns);
          },
          py::arg("phase"), py::arg("start_ns"), py::arg("end_ns"))
      .def(
          "set_stage",
          [](NativeSession& s, uint64_t stage) { trainscope_session_set_stage(s.get(), stage); },
          py::arg("stage"), "Records the pipeline.stage counter now and at every step boundary")
      .def_property_readonly("stage",
                             [](NativeSession& s) -> std::optional<uint64_t> {
                               uint64_t stage = 0;
                               if (!trainscope_session_stage(s.get(), &stage)) return std::nullopt;
                               return stage;
                             })
      .def(
          "set_collective_tag",
          [](NativeSession& s, int32_t peer, std::string_view group) {
            uint64_t serial = 0;
            trainscope_collective_tag tag{0, -1};
            trainscope_session_make_collective_tag(s.get(), peer, group.data(), group.size(),
                                                   &serial, &tag);
            ts::PushCollectiveTag(serial, tag);
          },
          py::arg("peer"), py::arg("group"),
          "Tags the collectives of this thread's torch.distributed call (until cleared)")
      .def("clear_collective_tag", [](NativeSession&) { ts::PopCollectiveTag(); })
      .def_property_readonly("step",
                             [](NativeSession& s) { return trainscope_session_step(s.get()); })
      .def_property_readonly(
          "recording", [](NativeSession& s) { return trainscope_session_recording(s.get()) != 0; })
      .def("set_recording",
           [](NativeSession& s, bool enabled) {
             trainscope_session_set_recording(s.get(), enabled ? 1 : 0);
           })
      .def_property_readonly(
          "loss_contribution_switch",
          [](NativeSession& s) -> std::optional<std::pair<bool, uint64_t>> {
            int enabled = 0;
            uint64_t serial = 0;
            if (!trainscope_session_loss_contribution_switch(s.get(), &enabled, &serial)) {
              return std::nullopt;
            }
            return std::make_pair(enabled != 0, serial);
          },
          "the collector's loss-contribution switch: (enabled, serial), or None (never set)")
      .def(
          "submit_loss_report",
          [](NativeSession& s, const py::dict& report) {
            const ts::LossReportView view(report);
            return trainscope_session_submit_loss_report(s.get(), view.report()) != 0;
          },
          py::arg("report"),
          "Sends a LossContribution report with the next batch; False when dropped (counted)")
      .def_property_readonly(
          "halt_pending",
          [](NativeSession& s) { return trainscope_session_halt_pending(s.get()) != 0; })
      .def("halt_info",
           [](NativeSession& s) -> py::object {
             trainscope_halt_info info{};
             char reason[4096], requested_by[1024];
             if (!trainscope_session_halt_info(s.get(), &info, reason, sizeof reason,
                                               requested_by, sizeof requested_by)) {
               return py::none();
             }
             py::dict d;
             d["halt_id"] = info.halt_id;
             d["reason"] = std::string(reason);
             d["requested_by"] = std::string(requested_by);
             d["requested_unix_ns"] = info.requested_unix_ns;
             d["halt_at_step"] = info.halt_at_step;
             return d;
           })
      .def("stats",
           [](const NativeSession& s) {
             struct trainscope_agent_stats stats;
             trainscope_session_stats(s.get(), &stats);
             return ts::StatsDict(stats);
           })
      .def_property_readonly("job_token", [](NativeSession& s) { return ts::JobToken(s.get()); })
      .def_property_readonly(
          "uses_tsc", [](const NativeSession& s) { return trainscope_session_uses_tsc(s.get()) != 0; })
      .def_property_readonly(
          "closed", [](const NativeSession& s) { return trainscope_session_closed(s.get()) != 0; })
      .def("yield_gpu", [](NativeSession& s) { trainscope_session_yield_gpu(s.get()); },
           "Lets CUPTI go for another client (torch.profiler) until resume_gpu")
      .def("resume_gpu", [](NativeSession& s) { trainscope_session_resume_gpu(s.get()); })
      .def(
          "close",
          [](NativeSession& s, double timeout_s, std::string error) {
            py::gil_scoped_release release;
            trainscope_session_close(s.get(), timeout_s, error.c_str());
          },
          py::arg("timeout_s") = 5.0, py::arg("error") = "");
}
