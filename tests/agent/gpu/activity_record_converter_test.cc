#include "gpu/activity_record_converter.h"

#include <string>
#include <vector>

#include "gpu/synthetic_activity_buffer.h"
#include "gtest/gtest.h"
#include "string_table.h"

namespace trainscope::agent {
namespace {

using B = SyntheticActivityBuffer;

constexpr uint64_t kCupti = 1'700'000'000'000'000'000ull;  // CUPTI's clock (realtime-like)
constexpr int64_t kAgent = 5'000'000'000;                  // the agent's at the same instant

constexpr uint32_t kLaunchKernel = 211;
constexpr uint32_t kGraphLaunch = 311;
constexpr uint32_t kMemcpyAsync = 41;
constexpr uint32_t kStreamSync = 131;
constexpr uint32_t kGetDevice = 2;
constexpr uint32_t kThread = 77;

CUptiResult CUPTIAPI CallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 307) {
    *name = "cuLaunchKernel";
    return CUPTI_SUCCESS;
  }
  switch (cbid) {
    case kLaunchKernel:
      *name = "cudaLaunchKernel_v7000";
      return CUPTI_SUCCESS;
    case kGraphLaunch:
      *name = "cudaGraphLaunch_ptsz_v10000";
      return CUPTI_SUCCESS;
    case kMemcpyAsync:
      *name = "cudaMemcpyAsync_v3020";
      return CUPTI_SUCCESS;
    case kStreamSync:
      *name = "cudaStreamSynchronize_v3020";
      return CUPTI_SUCCESS;
    case kGetDevice:
      *name = "cudaGetDevice_v3020";
      return CUPTI_SUCCESS;
    default:
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
}

class ConverterTest : public ::testing::Test {
 protected:
  ConverterTest() : strings_(512, 10000), collectives_(16) {
    api_.get_callback_name = &CallbackName;
    clock_.AddSample(kAgent - 10, kCupti, kAgent + 10);
    clock_.Commit();
  }

  // No reorder hold unless a test asks for one: each Finish sends what it can.
  static ActivityRecordConverter::Options NoHold() {
    ActivityRecordConverter::Options options;
    options.reorder_hold_ns = 0;
    return options;
  }
  std::unique_ptr<ActivityRecordConverter> Make(ActivityRecordConverter::Options options = NoHold()) {
    return std::make_unique<ActivityRecordConverter>(
        options, &clock_, &collectives_,
        [this](std::string_view text) { return strings_.Intern(text); }, &api_);
  }

  std::vector<GpuEventRecord> Feed(ActivityRecordConverter& converter, const B& buffer) {
    for (const CUpti_Activity* record : buffer.Records()) converter.Add(record);
    std::vector<GpuEventRecord> out;
    converter.Finish([&](const GpuEventRecord& e) { out.push_back(e); });
    return out;
  }

  std::string Name(StringId id) {
    google::protobuf::RepeatedPtrField<std::string> text;
    strings_.CopyTo({id}, &text);
    return text.empty() ? "?" : text[0];
  }

  StringTable strings_;
  CollectiveLaunchTable collectives_;
  GpuClockMap clock_;
  CuptiApi api_;
};

TEST_F(ConverterTest, KernelIsTiedToItsLaunchCallAndOperator) {
  auto converter = Make();
  const StringId conv = strings_.Intern("aten::conv2d");
  B buffer;
  buffer.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                         ActivityRecordConverter::OperatorExternalId(conv, 7), 10));
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 100, kCupti + 110, kThread, 10));
  buffer.Add(B::Kernel("_Z6kernelPfi", kCupti + 200, kCupti + 300, 1, 7, 10));
  const std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  ASSERT_EQ(out.size(), 2u);

  const GpuEventRecord& call = out[0];
  EXPECT_EQ(call.event.kind, EventKind::kGpuRuntime);
  EXPECT_EQ(Name(call.event.name), "cudaLaunchKernel");
  EXPECT_EQ(call.event.start_ns, kAgent + 100);
  EXPECT_EQ(call.event.end_ns, kAgent + 110);
  EXPECT_EQ(call.event.value, 10u);
  EXPECT_EQ(call.event.detail, static_cast<uint16_t>(RuntimeCall::kLaunch));
  EXPECT_EQ(call.thread, kThread);

  const GpuEventRecord& kernel = out[1];
  EXPECT_EQ(kernel.event.kind, EventKind::kGpuKernel);
  EXPECT_EQ(Name(kernel.event.name), "kernel(float*, int)");  // demangled
  EXPECT_EQ(kernel.event.start_ns, kAgent + 200);
  EXPECT_EQ(kernel.event.end_ns, kAgent + 300);
  EXPECT_EQ(kernel.device, 1u);
  EXPECT_EQ(kernel.stream, 7u);
  EXPECT_EQ(kernel.correlation, 10u);
  EXPECT_EQ(kernel.launch_delta_ns, -100);
  EXPECT_EQ(kernel.launch_op, conv);
  EXPECT_EQ(kernel.thread, 0u);
  EXPECT_EQ(converter->stats().converted, 2u);
  EXPECT_EQ(converter->stats().unresolved, 0u);
}

TEST_F(ConverterTest, RuntimeCallsLandOnTheOsThreadOfTheirCaller) {
  auto converter = Make();
  CuptiThreadMap threads;
  threads.Register(kThread, 4242);
  converter->set_thread_map(&threads);
  B buffer;
  buffer.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti, kCupti + 1, kThread, 1));
  buffer.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti, kCupti + 1, 78, 2));
  buffer.Add(
      B::Sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, kCupti + 2, kCupti + 3, 3));
  buffer.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kStreamSync, kCupti + 2, kCupti + 3, kThread, 3));
  const std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].thread, 4242u);
  EXPECT_EQ(out[1].thread, 0u);     // a thread that never registered
  EXPECT_EQ(out[2].thread, 4242u);  // the sync, from its API record
  EXPECT_EQ(Name(out[2].event.name), "cudaDeviceSynchronize");
}

TEST_F(ConverterTest, DriverLaunchesCorrelateToo) {
  auto converter = Make();
  B buffer;
  buffer.Add(B::Call(CUPTI_ACTIVITY_KIND_DRIVER, 307, kCupti + 5, kCupti + 9, kThread, 3));
  buffer.Add(B::Kernel("triton_poi_fused_add_0", kCupti + 20, kCupti + 40, 0, 9, 3));
  const std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Name(out[0].event.name), "cuLaunchKernel");
  EXPECT_EQ(Name(out[1].event.name), "triton_poi_fused_add_0");
  EXPECT_EQ(out[1].correlation, 3u);
  EXPECT_EQ(out[1].launch_delta_ns, -15);
}

TEST_F(ConverterTest, CopiesAndMemsetsKeepBytesAndDirection) {
  auto converter = Make();
  B buffer;
  const std::pair<uint8_t, CopyKind> kinds[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CopyKind::kHostToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CopyKind::kDeviceToHost},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CopyKind::kDeviceToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CopyKind::kPeerToPeer},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CopyKind::kHostToHost},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CopyKind::kUnspecified},
  };
  uint32_t correlation = 100;
  uint64_t t = kCupti + 1000;
  for (const auto& [cupti_kind, expected] : kinds) {
    buffer.Add(
        B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kMemcpyAsync, t - 50, t - 40, kThread, correlation));
    buffer.Add(B::Memcpy(cupti_kind, 1000 + correlation, t, t + 10, 3, correlation));
    ++correlation;
    t += 100;
  }
  buffer.Add(B::Memset(4096, t, t + 5, 3, 0));  // correlation 0: launch unknown
  std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  // Six copy calls come at once; the copies by end time; the memset (no
  // launch) waits for its launch for up to three rounds.
  ASSERT_EQ(out.size(), 12u);
  size_t copy = 0;
  for (const GpuEventRecord& e : out) {
    if (e.event.kind == EventKind::kGpuRuntime) {
      EXPECT_EQ(e.event.detail, static_cast<uint16_t>(RuntimeCall::kCopy));
      EXPECT_EQ(Name(e.event.name), "cudaMemcpyAsync");
      continue;
    }
    ASSERT_EQ(e.event.kind, EventKind::kGpuMemcpy);
    EXPECT_EQ(e.event.detail, static_cast<uint16_t>(kinds[copy].second)) << copy;
    EXPECT_EQ(e.event.value, 1100 + copy);
    EXPECT_EQ(e.correlation, 100 + copy);
    EXPECT_EQ(e.launch_delta_ns, -50);
    ++copy;
  }
  EXPECT_EQ(copy, 6u);
  EXPECT_EQ(converter->waiting(), 1u);
  out.clear();
  converter->Finish([&](const GpuEventRecord& e) { out.push_back(e); });
  converter->Finish([&](const GpuEventRecord& e) { out.push_back(e); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].event.kind, EventKind::kGpuMemset);
  EXPECT_EQ(out[0].event.value, 4096u);
  EXPECT_EQ(out[0].correlation, 0u);
  EXPECT_EQ(converter->stats().unresolved, 1u);
}

TEST_F(ConverterTest, NcclKernelsBecomeCollectivesWithTheirLaunchesGroupAndSequence) {
  auto converter = Make();
  const StringId pg = strings_.Intern("default_pg");
  const StringId allreduce = strings_.Intern("nccl:all_reduce");
  GpuCollectiveLaunch launch;
  launch.name = allreduce;
  launch.kind = CollectiveKind::kAllReduce;
  launch.group = pg;
  launch.group_sequence = 5;
  launch.bytes = 1 << 20;
  const uint64_t id = collectives_.Register(launch);
  B buffer;
  buffer.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                         ActivityRecordConverter::OperatorExternalId(allreduce, 9), 20));
  buffer.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, id, 20));
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 10, kCupti + 12, kThread, 20));
  buffer.Add(B::Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                       kCupti + 30, kCupti + 930, 0, 13, 20));
  // An NCCL kernel whose collective is not known: the kind from its name.
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 940, kCupti + 942, kThread, 21));
  buffer.Add(B::Kernel("ncclDevKernel_AllGather_RING_LL", kCupti + 950, kCupti + 990, 0, 13, 21));
  const std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  ASSERT_EQ(out.size(), 4u);
  const GpuEventRecord& known = out[2];
  EXPECT_EQ(known.event.kind, EventKind::kGpuCollective);
  EXPECT_EQ(known.event.detail, static_cast<uint16_t>(CollectiveKind::kAllReduce));
  EXPECT_EQ(known.event.group, pg);
  EXPECT_EQ(known.event.aux, 5u);
  EXPECT_EQ(known.event.value, 1u << 20);
  EXPECT_EQ(known.event.peer, -1);
  EXPECT_EQ(known.launch_op, allreduce);
  EXPECT_EQ(known.stream, 13u);
  const GpuEventRecord& unknown = out[3];
  EXPECT_EQ(unknown.event.kind, EventKind::kGpuCollective);
  EXPECT_EQ(unknown.event.detail, static_cast<uint16_t>(CollectiveKind::kAllGather));
  EXPECT_EQ(unknown.event.group, kEmptyString);
  EXPECT_EQ(unknown.event.value, 0u);
  EXPECT_EQ(unknown.correlation, 21u);
}

TEST_F(ConverterTest, CudaGraphKernelsAreAttributedToTheGraphLaunchAndItsOperator) {
  auto converter = Make();
  const StringId replay = strings_.Intern("CUDAGraph::replay");
  B buffer;
  buffer.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                         ActivityRecordConverter::OperatorExternalId(replay, 44), 30));
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kGraphLaunch, kCupti + 10, kCupti + 20, kThread, 30));
  for (int node = 0; node < 3; ++node) {
    CUpti_ActivityKernel10 kernel = B::Kernel("graph_node_kernel", kCupti + 100 + node * 100,
                                              kCupti + 150 + node * 100, 0, 7, 30);
    kernel.graphId = 1;
    kernel.graphNodeId = 1000 + node;
    buffer.Add(kernel);
  }
  const std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(Name(out[0].event.name), "cudaGraphLaunch");
  EXPECT_EQ(out[0].event.detail, static_cast<uint16_t>(RuntimeCall::kLaunch));
  for (int node = 0; node < 3; ++node) {
    const GpuEventRecord& k = out[1 + node];
    EXPECT_EQ(k.correlation, 30u);
    EXPECT_EQ(k.launch_op, replay);
    EXPECT_EQ(k.launch_delta_ns, -(90 + node * 100));
  }
}

TEST_F(ConverterTest, ALaunchInALaterBufferStillResolves) {
  auto converter = Make();
  const StringId op = strings_.Intern("aten::mm");
  B first;
  first.Add(B::Kernel("gemm", kCupti + 200, kCupti + 300, 0, 7, 50));
  EXPECT_TRUE(Feed(*converter, first).empty());
  EXPECT_EQ(converter->waiting(), 1u);
  B second;
  second.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                         ActivityRecordConverter::OperatorExternalId(op, 1), 50));
  second.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 50, kCupti + 60, kThread, 50));
  const std::vector<GpuEventRecord> out = Feed(*converter, second);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].event.kind, EventKind::kGpuKernel);
  EXPECT_EQ(out[1].correlation, 50u);
  EXPECT_EQ(out[1].launch_op, op);
  EXPECT_EQ(out[1].launch_delta_ns, -150);
}

TEST_F(ConverterTest, AStreamKeepsItsOrderBehindAWaitingEventAndLateEventsAreCountedNotSent) {
  auto converter = Make();
  B buffer;
  buffer.Add(B::Kernel("first", kCupti + 100, kCupti + 200, 0, 7, 60));  // launch not yet known
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 90, kCupti + 95, kThread, 61));
  buffer.Add(B::Kernel("second", kCupti + 210, kCupti + 300, 0, 7, 61));  // known, same stream
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 91, kCupti + 96, kThread, 62));
  buffer.Add(B::Kernel("other stream", kCupti + 100, kCupti + 150, 0, 8, 62));
  std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  // The two calls and the other stream's kernel; "second" waits behind "first".
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].stream, 8u);
  B launch;
  launch.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 80, kCupti + 85, kThread, 60));
  out = Feed(*converter, launch);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(Name(out[1].event.name), "first");
  EXPECT_EQ(Name(out[2].event.name), "second");
  EXPECT_EQ(converter->stats().unresolved, 0u);

  // A kernel that would end before "second" on stream 7 cannot be sent in
  // order any more: dropped and counted.
  B late;
  late.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 1, kCupti + 2, kThread, 63));
  late.Add(B::Kernel("branch", kCupti + 220, kCupti + 250, 0, 7, 63));
  out = Feed(*converter, late);
  ASSERT_EQ(out.size(), 1u);  // only its call
  EXPECT_EQ(converter->stats().out_of_order, 1u);
}

TEST_F(ConverterTest, ABufferReturnedLateWithinTheHoldIsSentInOrderNotDropped) {
  // CUPTI returns a buffer only once all its records are complete, so an
  // older buffer can come back after a newer one (seen on an H100 up to five
  // steps late). Within the hold its kernels still go, in end order.
  ActivityRecordConverter::Options options = NoHold();
  options.reorder_hold_ns = 1000;
  auto converter = Make(options);
  B newer;
  newer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 400, kCupti + 405, kThread, 81));
  newer.Add(B::Kernel("newer", kCupti + 500, kCupti + 600, 0, 7, 81));
  std::vector<GpuEventRecord> out = Feed(*converter, newer);
  EXPECT_EQ(out.size(), 1u) << "its call only: the kernel is held";
  B older;
  older.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 10, kCupti + 15, kThread, 80));
  older.Add(B::Kernel("older", kCupti + 100, kCupti + 200, 0, 7, 80));
  out = Feed(*converter, older);
  EXPECT_EQ(out.size(), 1u);
  B later;
  later.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 700, kCupti + 705, kThread, 82));
  later.Add(B::Kernel("later", kCupti + 1700, kCupti + 1800, 0, 7, 82));
  out = Feed(*converter, later);
  std::vector<std::string> kernels;
  for (const GpuEventRecord& e : out) {
    if (e.event.kind == EventKind::kGpuKernel) kernels.push_back(Name(e.event.name));
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"older", "newer"}));
  EXPECT_EQ(converter->stats().out_of_order, 0u);
  out.clear();
  converter->ReleaseQuiet(clock_.ToAgent(kCupti + 5000),
                          [&](const GpuEventRecord& e) { out.push_back(e); });
  ASSERT_EQ(out.size(), 1u) << "the tail goes once the device has been quiet for the hold";
  EXPECT_EQ(Name(out[0].event.name), "later");
}

TEST_F(ConverterTest, OtherCallsOnlyFeedCorrelation) {
  auto converter = Make();
  B buffer;
  buffer.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 5, 70));
  buffer.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kGetDevice, kCupti, kCupti + 1, kThread, 70));
  buffer.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, 9999, kCupti, kCupti + 1, kThread, 71));
  EXPECT_TRUE(Feed(*converter, buffer).empty());
  EXPECT_EQ(converter->stats().other_calls, 2u);
}

TEST_F(ConverterTest, HostSynchronisationComesFromSyncRecordsOnTheCallersThread) {
  auto converter = Make();
  B buffer;
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kStreamSync, kCupti + 10, kCupti + 500, kThread, 80));
  buffer.Add(B::Sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, kCupti + 11,
                     kCupti + 499, 80));
  buffer.Add(
      B::Sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, kCupti + 20, kCupti + 30, 81));
  std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  ASSERT_EQ(out.size(), 1u);  // the API record is not sent twice; a stream wait is not a host wait
  EXPECT_EQ(out[0].event.kind, EventKind::kGpuRuntime);
  EXPECT_EQ(out[0].event.detail, static_cast<uint16_t>(RuntimeCall::kSync));
  EXPECT_EQ(Name(out[0].event.name), "cudaStreamSynchronize");
  EXPECT_EQ(out[0].thread, kThread);
  EXPECT_EQ(out[0].event.start_ns, kAgent + 11);

  // Without SYNCHRONIZATION records the API record is the sync event.
  converter->set_sync_records(false);
  B api_only;
  api_only.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kStreamSync, kCupti + 600, kCupti + 700, kThread, 82));
  out = Feed(*converter, api_only);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].event.detail, static_cast<uint16_t>(RuntimeCall::kSync));
  EXPECT_EQ(out[0].event.value, 82u);
}

TEST_F(ConverterTest, RemembersABoundedNumberOfLaunchesAndFinishAllSendsTheRest) {
  ActivityRecordConverter::Options options = NoHold();
  options.max_launches = 2;
  auto converter = Make(options);
  B buffer;
  for (uint32_t c = 1; c <= 3; ++c) {
    buffer.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + c, kCupti + c + 1,
                       kThread, c));
  }
  buffer.Add(B::Kernel("k1", kCupti + 100, kCupti + 110, 0, 1, 1));  // its launch was forgotten
  buffer.Add(B::Kernel("k3", kCupti + 100, kCupti + 110, 0, 3, 3));
  std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  ASSERT_EQ(out.size(), 4u);  // three calls and k3
  EXPECT_EQ(converter->waiting(), 1u);
  out.clear();
  converter->FinishAll([&](const GpuEventRecord& e) { out.push_back(e); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Name(out[0].event.name), "k1");
  EXPECT_EQ(out[0].correlation, 0u);
  EXPECT_EQ(converter->waiting(), 0u);
}

TEST_F(ConverterTest, WaitingRecordsAreBounded) {
  ActivityRecordConverter::Options options = NoHold();
  options.max_waiting = 4;
  auto converter = Make(options);
  B buffer;
  for (uint32_t i = 0; i < 10; ++i) {
    buffer.Add(B::Kernel("k", kCupti + i * 10, kCupti + i * 10 + 5, 0, 1, 500 + i));
  }
  const std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  EXPECT_EQ(out.size(), 6u);
  EXPECT_EQ(converter->waiting(), 4u);
  for (size_t i = 1; i < out.size(); ++i) EXPECT_LE(out[i - 1].event.end_ns, out[i].event.end_ns);
}

TEST_F(ConverterTest, RecordsOfUnfinishedDeviceWorkAreDroppedAndCounted) {
  // What a forced flush hands over for work the device has not done yet: a
  // kernel without an end, a copy without a start. Sending them would put
  // made-up times on the device track.
  auto converter = Make();
  B buffer;
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 100, kCupti + 110, kThread, 10));
  buffer.Add(B::Kernel("done", kCupti + 200, kCupti + 300, 0, 7, 10));
  buffer.Add(
      B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, kLaunchKernel, kCupti + 120, kCupti + 130, kThread, 11));
  buffer.Add(B::Kernel("pending", kCupti + 310, 0, 0, 7, 11));
  buffer.Add(B::Memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 64, 0, 0, 7, 11));
  const std::vector<GpuEventRecord> out = Feed(*converter, buffer);
  int kernels = 0;
  for (const GpuEventRecord& e : out) {
    EXPECT_NE(e.event.kind, EventKind::kGpuMemcpy);
    if (e.event.kind == EventKind::kGpuKernel) {
      ++kernels;
      EXPECT_EQ(Name(e.event.name), "done");
    }
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(converter->stats().incomplete, 2u);
  EXPECT_EQ(converter->stats().out_of_order, 0u);
}

TEST(ActivityRecordConverterNamesTest, CollectiveKindsFromNcclKernelNames) {
  using C = ActivityRecordConverter;
  EXPECT_EQ(C::CollectiveKindOfKernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"),
            CollectiveKind::kReduceScatter);
  EXPECT_EQ(C::CollectiveKindOfKernel("ncclKernel_AllReduce_RING_LL_Sum_float"),
            CollectiveKind::kAllReduce);
  EXPECT_EQ(C::CollectiveKindOfKernel("ncclDevKernel_Broadcast_RING_LL"),
            CollectiveKind::kBroadcast);
  EXPECT_EQ(C::CollectiveKindOfKernel("ncclDevKernel_Reduce_Sum_f32_RING_LL"),
            CollectiveKind::kReduce);
  EXPECT_EQ(C::CollectiveKindOfKernel("ncclDevKernel_SendRecv"), CollectiveKind::kUnspecified);
  EXPECT_EQ(C::CollectiveKindOfKernel("void at::native::vectorized_elementwise_kernel"),
            CollectiveKind::kUnspecified);
  EXPECT_TRUE(C::IsCollectiveKernel("_Z32ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgs"));
  EXPECT_FALSE(C::IsCollectiveKernel("gemm"));
  EXPECT_EQ(C::Demangle("_Z6kernelPfi"), "kernel(float*, int)");
  EXPECT_EQ(C::Demangle("_Znot_a_valid_name"), "_Znot_a_valid_name");
  EXPECT_EQ(C::Demangle("plain"), "plain");
}

TEST(ActivityRecordConverterNamesTest, OperatorExternalIdsCarryNameAndSequence) {
  const uint64_t id = ActivityRecordConverter::OperatorExternalId(123456, 987654321);
  EXPECT_EQ(ActivityRecordConverter::OperatorNameOf(id), 123456u);
  EXPECT_EQ(id & ((uint64_t{1} << 40) - 1), 987654321u);
}

}  // namespace
}  // namespace trainscope::agent
