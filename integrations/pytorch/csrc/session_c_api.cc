// The plugin session's C API (trainscope_session.h) over PluginSession: what
// the torch extension, compiled against the user's own torch, calls in
// libtrainscope_agent.so. Every entry point catches everything: an exception
// must never unwind into the extension or Python.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "plugin_session.h"
#include "trainscope/agent/c_agent_options.h"
#include "trainscope/v1/loss.pb.h"
#include "trainscope_session.h"

using trainscope::pytorch::CollectiveTracker;
using trainscope::pytorch::FlopOp;
using trainscope::pytorch::ObserverTargets;
using trainscope::pytorch::OperatorHook;
using trainscope::pytorch::OpInfo;
using trainscope::pytorch::PluginSession;
using trainscope::pytorch::SessionOptions;
using trainscope::pytorch::TickClock;
namespace agent = trainscope::agent;

// The C enums are the C++ ones, value for value.
static_assert(TRAINSCOPE_FLOP_NONE == static_cast<int>(FlopOp::kNone));
static_assert(TRAINSCOPE_FLOP_CONV2D == static_cast<int>(FlopOp::kConv2d));
static_assert(TRAINSCOPE_FLOP_CONVOLUTION == static_cast<int>(FlopOp::kConvolution));
static_assert(TRAINSCOPE_FLOP_LINEAR == static_cast<int>(FlopOp::kLinear));
static_assert(TRAINSCOPE_FLOP_ADDMM == static_cast<int>(FlopOp::kAddmm));
static_assert(TRAINSCOPE_FLOP_MM == static_cast<int>(FlopOp::kMm));
static_assert(TRAINSCOPE_FLOP_MATMUL == static_cast<int>(FlopOp::kMatmul));
static_assert(TRAINSCOPE_FLOP_BMM == static_cast<int>(FlopOp::kBmm));
static_assert(TRAINSCOPE_PHASE_OPTIMIZER == static_cast<int>(agent::Phase::kOptimizer));

struct trainscope_session {
  std::unique_ptr<PluginSession> session;
};

namespace {

void CopyOut(std::string_view text, char* out, size_t out_len) {
  if (out == nullptr || out_len == 0) return;
  const size_t n = std::min(text.size(), out_len - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

const ObserverTargets& Targets(const trainscope_observer* o) {
  return *reinterpret_cast<const ObserverTargets*>(o);
}

const OpInfo& Info(const trainscope_op_info* op) {
  return *static_cast<const OpInfo*>(op->internal);
}

// A hook installed through the C callbacks, owned by the session.
class CHook final : public OperatorHook {
 public:
  explicit CHook(trainscope_hook hook) : hook_(hook) {}
  ~CHook() override {
    if (hook_.destroy != nullptr) hook_.destroy(hook_.self);
  }
  void SetRecording(bool enabled) override { hook_.set_recording(hook_.self, enabled ? 1 : 0); }
  void SetShapes(bool enabled) override { hook_.set_shapes(hook_.self, enabled ? 1 : 0); }

 private:
  trainscope_hook hook_;
};

std::string Bytes(const void* data, size_t length) {
  return data != nullptr ? std::string(static_cast<const char*>(data), length) : std::string();
}

std::string Text(const char* text) { return text != nullptr ? std::string(text) : std::string(); }

void FillThumbnail(const trainscope_thumbnail& in, trainscope::v1::Thumbnail* t) {
  t->set_height(in.height);
  t->set_width(in.width);
  t->set_channels(in.channels);
  t->set_pixels(Bytes(in.pixels, in.pixels_length));
}

trainscope::v1::LossReport LossReportFromC(const trainscope_loss_report& in) {
  trainscope::v1::LossReport report;
  report.set_epoch(in.epoch);
  report.set_iteration(in.iteration);
  report.set_epoch_complete(in.epoch_complete != 0);
  report.set_selection_layer(Text(in.selection_layer));
  for (size_t i = 0; i < in.monitored_layer_count; ++i) {
    report.add_monitored_layers(Text(in.monitored_layers[i]));
  }
  report.set_top_n(in.top_n);
  for (size_t i = 0; i < in.top_count; ++i) {
    const trainscope_item_score& e = in.top[i];
    trainscope::v1::ItemScore* score = report.add_top();
    score->set_item(e.item);
    score->set_contribution(e.contribution);
    score->set_label(e.label);
    score->set_prediction(e.prediction);
    if (e.input != nullptr) FillThumbnail(*e.input, score->mutable_input());
  }
  for (size_t i = 0; i < in.snapshot_count; ++i) {
    const trainscope_item_snapshot& e = in.snapshots[i];
    trainscope::v1::ItemSnapshot* s = report.add_snapshots();
    s->set_item(e.item);
    s->set_epoch(e.epoch);
    s->set_iteration(e.iteration);
    s->set_label(e.label);
    s->set_prediction(e.prediction);
    s->set_contribution(e.contribution);
    if (e.input != nullptr) FillThumbnail(*e.input, s->mutable_input());
    for (size_t k = 0; k < e.map_count; ++k) {
      const trainscope_layer_map& m = e.maps[k];
      trainscope::v1::LayerMap* map = s->add_maps();
      map->set_layer(Text(m.layer));
      map->set_height(m.height);
      map->set_width(m.width);
      map->set_contribution(Bytes(m.contribution, m.contribution_length));
      map->set_reduction(Bytes(m.reduction, m.reduction_length));
    }
  }
  return report;
}

}  // namespace

extern "C" {

uint32_t trainscope_session_abi_version(void) { return TRAINSCOPE_SESSION_ABI_VERSION; }

// ---- observer (hot path: no allocation, no lock, nothing that throws) --------

uint64_t trainscope_observer_generation(const trainscope_observer* o) {
  return Targets(o).generation;
}

int trainscope_observer_uses_tsc(const trainscope_observer* o) {
  return Targets(o).clock->uses_tsc() ? 1 : 0;
}

const trainscope_op_info* trainscope_observer_find_op(const trainscope_observer* o,
                                                      const char* name, size_t length) {
  try {
    return &Targets(o).names->Find(std::string_view(name, length))->c;
  } catch (...) {
    // Out of memory interning a name: the empty name's entry stands in.
    try {
      return &Targets(o).names->Find(std::string_view())->c;
    } catch (...) {
      std::terminate();  // the observer has no way on without an entry
    }
  }
}

void trainscope_observer_operator(const trainscope_observer* o, const trainscope_op_info* op,
                                  uint64_t start_ticks, uint64_t end_ticks, uint64_t sequence,
                                  int backward, uint64_t flops, uint64_t started_step,
                                  int top_level) {
  const ObserverTargets& t = Targets(o);
  const OpInfo& info = Info(op);
  int64_t start_ns, end_ns;
  t.clock->ToMonotonicNs(start_ticks, end_ticks, &start_ns, &end_ns);
  agent::Agent* a = t.agent;
  a->RecordOperator(info.id, start_ns, end_ns, sequence,
                    backward ? agent::OperatorScope::kBackward : agent::OperatorScope::kForward);
  if (flops != 0 && info.cls.flop != FlopOp::kNone) a->RecordCounter(t.flops_name, flops, end_ns);
  if (info.cls.optimizer_step) {
    a->RecordPhase(agent::Phase::kOptimizer, started_step, start_ns, end_ns);
  } else if (top_level && !info.cls.excluded_from_phases) {
    t.phases->OnTopLevelOp(start_ticks, end_ticks, backward != 0);
  }
}

const trainscope_raw_ring* trainscope_observer_thread_ring(const trainscope_observer* o) {
  return Targets(o).agent->LocalRawRing();
}

trainscope_phase_ticks* trainscope_observer_phase_ticks(const trainscope_observer* o) {
  return Targets(o).phases->ticks();
}

void trainscope_observer_async_operator(const trainscope_observer* o,
                                        const trainscope_op_info* op, uint64_t start_ticks,
                                        uint64_t end_ticks, uint64_t sequence, int backward) {
  const ObserverTargets& t = Targets(o);
  int64_t start_ns, end_ns;
  t.clock->ToMonotonicNs(start_ticks, end_ticks, &start_ns, &end_ns);
  t.agent->RecordOperator(Info(op).id, start_ns, end_ns, sequence,
                          backward ? agent::OperatorScope::kBackward
                                   : agent::OperatorScope::kForward);
}

void trainscope_observer_collective(const trainscope_observer* o, const trainscope_op_info* op,
                                    trainscope_collective_tag tag, uint64_t group_sequence,
                                    uint64_t bytes, uint64_t start_ticks, uint64_t end_ticks) {
  const ObserverTargets& t = Targets(o);
  const OpInfo& info = Info(op);
  int64_t start_ns, end_ns;
  t.clock->ToMonotonicNs(start_ticks, end_ticks, &start_ns, &end_ns);
  t.agent->RecordCollective(info.id, info.cls.collective, tag.group, group_sequence, bytes,
                            tag.peer, start_ns, end_ns);
}

int trainscope_observer_gpu_requested(const trainscope_observer* o) {
  return Targets(o).gpu_requested ? 1 : 0;
}

void trainscope_observer_gpu_operator_begin(const trainscope_observer* o,
                                            const trainscope_op_info* op, uint64_t sequence) {
  Targets(o).agent->GpuOperatorBegin(Info(op).id, sequence);
}

void trainscope_observer_gpu_operator_end(const trainscope_observer* o) {
  Targets(o).agent->GpuOperatorEnd();
}

void trainscope_observer_gpu_collective_begin(const trainscope_observer* o,
                                              const trainscope_op_info* op,
                                              trainscope_collective_tag tag,
                                              uint64_t group_sequence, uint64_t bytes) {
  const OpInfo& info = Info(op);
  Targets(o).agent->GpuCollectiveBegin(info.id, info.cls.collective, tag.group, group_sequence,
                                       bytes, tag.peer);
}

void trainscope_observer_gpu_collective_end(const trainscope_observer* o) {
  Targets(o).agent->GpuCollectiveEnd();
}

uint64_t trainscope_observer_running_step(const trainscope_observer* o) {
  return Targets(o).running_step->load(std::memory_order_relaxed);
}

uint64_t trainscope_observer_tracker_serial(const trainscope_observer* o) {
  return Targets(o).collectives->serial();
}

trainscope_collective_tag trainscope_observer_default_tag(const trainscope_observer* o) {
  const CollectiveTracker::Tag tag = Targets(o).collectives->DefaultTag();
  return trainscope_collective_tag{tag.group, tag.peer};
}

uint64_t trainscope_observer_next_sequence(const trainscope_observer* o, uint32_t group,
                                           int32_t peer, int point_to_point) {
  try {
    return Targets(o).collectives->NextSequence(group, peer, point_to_point != 0);
  } catch (...) {
    return 0;
  }
}

// ---- session ------------------------------------------------------------------

void trainscope_session_options_init(trainscope_session_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  trainscope_agent_options_init(&options->agent);
  const SessionOptions defaults;
  options->shapes = defaults.shapes ? 1 : 0;
  options->shapes_every_n_steps = defaults.shapes_every_n_steps;
  options->halt_grace_s = defaults.halt_grace_s;
  options->first_step = defaults.first_step;
  options->monotonic_clock = 0;
}

int trainscope_session_start(const trainscope_session_options* options,
                             trainscope_hook_install install, void* install_user_data,
                             trainscope_session** out, char* error, size_t error_len) {
  try {
    if (out != nullptr) *out = nullptr;
    if (options == nullptr || out == nullptr || install == nullptr) {
      CopyOut("options, install and out: expected non-NULL", error, error_len);
      return 1;
    }
    SessionOptions o;
    o.agent = agent::AgentOptionsFromC(options->agent);
    o.agent.on_halt = nullptr;  // the session's own
    o.shapes = options->shapes != 0;
    o.shapes_every_n_steps = options->shapes_every_n_steps;
    o.halt_grace_s = options->halt_grace_s;
    o.first_step = options->first_step;
    o.clock = options->monotonic_clock ? TickClock::Source::kMonotonic : TickClock::Source::kAuto;
    auto factory = [install, install_user_data](const ObserverTargets* targets)
        -> absl::StatusOr<std::unique_ptr<OperatorHook>> {
      trainscope_hook hook{};
      char message[512] = {0};
      if (install(install_user_data, reinterpret_cast<const trainscope_observer*>(targets), &hook,
                  message, sizeof message) != 0) {
        return absl::FailedPreconditionError(message);
      }
      if (hook.set_recording == nullptr || hook.set_shapes == nullptr) {
        return absl::InvalidArgumentError("the hook lacks set_recording or set_shapes");
      }
      return std::unique_ptr<OperatorHook>(new CHook(hook));
    };
    absl::StatusOr<std::unique_ptr<PluginSession>> session =
        PluginSession::Start(std::move(o), factory);
    if (!session.ok()) {
      CopyOut(std::string(session.status().message()), error, error_len);
      return 1;
    }
    *out = new trainscope_session{*std::move(session)};
    CopyOut("", error, error_len);
    return 0;
  } catch (const std::exception& e) {
    CopyOut(std::string("trainscope_session_start failed: ") + e.what(), error, error_len);
  } catch (...) {
    CopyOut("trainscope_session_start failed: unknown exception", error, error_len);
  }
  return 1;
}

int trainscope_session_step_boundary(trainscope_session* s, int has_completed,
                                     uint64_t completed_step, int has_device_memory,
                                     uint64_t device_allocated, uint64_t device_peak,
                                     uint64_t device_reserved, uint64_t* next_step,
                                     char* halt_reason, size_t halt_reason_len) {
  try {
    std::optional<uint64_t> completed;
    if (has_completed) completed = completed_step;
    std::optional<PluginSession::DeviceMemory> device;
    if (has_device_memory) {
      device = PluginSession::DeviceMemory{device_allocated, device_peak, device_reserved};
    }
    const PluginSession::Boundary b = s->session->OnStepBoundary(completed, device);
    if (next_step != nullptr) *next_step = b.step;
    CopyOut(b.halt ? b.reason : std::string(), halt_reason, halt_reason_len);
    return b.halt ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

void trainscope_session_halt_handled(trainscope_session* s) { s->session->HaltHandled(); }

void trainscope_session_record_phase(trainscope_session* s, uint32_t phase, int64_t start_ns,
                                     int64_t end_ns) {
  s->session->RecordPhase(static_cast<agent::Phase>(phase), start_ns, end_ns);
}

void trainscope_session_set_stage(trainscope_session* s, uint64_t stage) {
  try {
    s->session->SetStage(stage);
  } catch (...) {
  }
}

int trainscope_session_stage(const trainscope_session* s, uint64_t* stage) {
  const std::optional<uint64_t> v = s->session->stage();
  if (!v.has_value()) return 0;
  if (stage != nullptr) *stage = *v;
  return 1;
}

void trainscope_session_make_collective_tag(trainscope_session* s, int32_t peer,
                                            const char* group, size_t group_length,
                                            uint64_t* tracker_serial,
                                            trainscope_collective_tag* tag) {
  CollectiveTracker& tracker = s->session->collectives();
  CollectiveTracker::Tag t = tracker.DefaultTag();
  try {
    t = tracker.MakeTag(peer, std::string_view(group != nullptr ? group : "",
                                               group != nullptr ? group_length : 0));
  } catch (...) {
  }
  if (tracker_serial != nullptr) *tracker_serial = tracker.serial();
  if (tag != nullptr) *tag = trainscope_collective_tag{t.group, t.peer};
}

uint64_t trainscope_session_step(const trainscope_session* s) { return s->session->step(); }

int trainscope_session_recording(const trainscope_session* s) {
  return s->session->agent().recording() ? 1 : 0;
}

void trainscope_session_set_recording(trainscope_session* s, int enabled) {
  s->session->agent().SetRecording(enabled != 0);
}

int trainscope_session_loss_contribution_switch(const trainscope_session* s, int* enabled,
                                                uint64_t* serial) {
  const auto v = s->session->agent().loss_contribution_switch();
  if (!v.has_value()) return 0;
  if (enabled != nullptr) *enabled = v->enabled ? 1 : 0;
  if (serial != nullptr) *serial = v->serial;
  return 1;
}

int trainscope_session_halt_pending(const trainscope_session* s) {
  return s->session->halt_pending() ? 1 : 0;
}

int trainscope_session_halt_info(const trainscope_session* s, trainscope_halt_info* info,
                                 char* reason, size_t reason_len, char* requested_by,
                                 size_t requested_by_len) {
  try {
    const std::optional<agent::HaltInfo> h = s->session->agent().halt_info();
    if (!h.has_value()) return 0;
    if (info != nullptr) *info = trainscope_halt_info{h->halt_id, h->requested_unix_ns,
                                                      h->halt_at_step};
    CopyOut(h->reason, reason, reason_len);
    CopyOut(h->requested_by, requested_by, requested_by_len);
    return 1;
  } catch (...) {
    return 0;
  }
}

void trainscope_session_stats(const trainscope_session* s, struct trainscope_agent_stats* stats) {
  if (stats == nullptr) return;
  std::memset(stats, 0, sizeof(*stats));
  try {
    agent::AgentStatsToC(s->session->stats(), stats);
  } catch (...) {
  }
}

size_t trainscope_session_job_token(const trainscope_session* s, char* out, size_t out_len) {
  try {
    const std::string token = s->session->agent().job_token();
    CopyOut(token, out, out_len);
    return token.size();
  } catch (...) {
    CopyOut("", out, out_len);
    return 0;
  }
}

int trainscope_session_uses_tsc(const trainscope_session* s) {
  return s->session->clock().uses_tsc() ? 1 : 0;
}

void trainscope_session_yield_gpu(trainscope_session* s) {
  try {
    s->session->agent().YieldGpuActivity();
  } catch (...) {
  }
}

void trainscope_session_resume_gpu(trainscope_session* s) {
  try {
    s->session->agent().ResumeGpuActivity();
  } catch (...) {
  }
}

int trainscope_session_closed(const trainscope_session* s) {
  return s->session->closed() ? 1 : 0;
}

void trainscope_session_close(trainscope_session* s, double timeout_s, const char* error) {
  try {
    s->session->Close(absl::Seconds(std::max(timeout_s, 0.0)), Text(error));
  } catch (...) {
  }
}

void trainscope_session_free(trainscope_session* s) {
  try {
    delete s;
  } catch (...) {
  }
}

int trainscope_session_submit_loss_report(trainscope_session* s,
                                          const trainscope_loss_report* report) {
  if (report == nullptr) return 0;
  try {
    return s->session->agent().SubmitLossReport(LossReportFromC(*report)) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
