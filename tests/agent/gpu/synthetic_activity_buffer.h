// Test helper: a buffer of real CUPTI activity structs (cupti_activity.h),
// laid end to end at 8-byte alignment, and a cuptiActivityGetNextRecord
// stand-in that walks it, so the conversion and the buffer-completed path run
// on records built field by field, without a GPU.
//
// Usage:
//   SyntheticActivityBuffer buffer;
//   CUpti_ActivityKernel10 k = SyntheticActivityBuffer::Kernel(...); buffer.Add(k);
//   for (const CUpti_Activity* r : buffer.Records()) converter.Add(r);
//   api.activity_get_next_record = &SyntheticActivityBuffer::NextRecord;
//
// Threading: not thread-safe.
#ifndef TRAINSCOPE_TESTS_AGENT_GPU_SYNTHETIC_ACTIVITY_BUFFER_H_
#define TRAINSCOPE_TESTS_AGENT_GPU_SYNTHETIC_ACTIVITY_BUFFER_H_

#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace trainscope::agent {

class SyntheticActivityBuffer {
 public:
  template <typename Record>
  void Add(const Record& record) {
    const size_t at = bytes_.size();
    bytes_.resize(at + Padded(sizeof(Record)));
    std::memcpy(bytes_.data() + at, &record, sizeof(Record));
  }

  std::vector<const CUpti_Activity*> Records() const {
    std::vector<const CUpti_Activity*> out;
    CUpti_Activity* record = nullptr;
    auto* data = const_cast<uint8_t*>(bytes_.data());
    while (NextRecord(data, bytes_.size(), &record) == CUPTI_SUCCESS) out.push_back(record);
    return out;
  }
  // Copies the records into `buffer` (of `size` bytes); returns the valid bytes.
  size_t CopyTo(uint8_t* buffer, size_t size) const {
    const size_t n = bytes_.size() < size ? bytes_.size() : size;
    std::memcpy(buffer, bytes_.data(), n);
    return n;
  }
  size_t size() const { return bytes_.size(); }

  // cuptiActivityGetNextRecord over a buffer written by Add.
  static CUptiResult CUPTIAPI NextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
    size_t at = 0;
    if (*record != nullptr) {
      at = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) +
           Padded(SizeOf((*record)->kind));
    }
    if (at + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    auto* next = reinterpret_cast<CUpti_Activity*>(buffer + at);
    if (SizeOf(next->kind) == 0 || at + SizeOf(next->kind) > valid) {
      return CUPTI_ERROR_INVALID_KIND;
    }
    *record = next;
    return CUPTI_SUCCESS;
  }

  static CUpti_ActivityAPI Call(CUpti_ActivityKind kind, uint32_t cbid, uint64_t start,
                                uint64_t end, uint32_t thread, uint32_t correlation) {
    CUpti_ActivityAPI r{};
    r.kind = kind;
    r.cbid = cbid;
    r.start = start;
    r.end = end;
    r.processId = 1;
    r.threadId = thread;
    r.correlationId = correlation;
    return r;
  }
  static CUpti_ActivityExternalCorrelation External(CUpti_ExternalCorrelationKind kind,
                                                    uint64_t id, uint32_t correlation) {
    CUpti_ActivityExternalCorrelation r{};
    r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    r.externalKind = kind;
    r.externalId = id;
    r.correlationId = correlation;
    return r;
  }
  static CUpti_ActivityKernel10 Kernel(const char* name, uint64_t start, uint64_t end,
                                       uint32_t device, uint32_t stream, uint32_t correlation) {
    CUpti_ActivityKernel10 r{};
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.name = name;
    r.start = start;
    r.end = end;
    r.deviceId = device;
    r.streamId = stream;
    r.correlationId = correlation;
    return r;
  }
  static CUpti_ActivityMemcpy6 Memcpy(uint8_t copy_kind, uint64_t bytes, uint64_t start,
                                      uint64_t end, uint32_t stream, uint32_t correlation) {
    CUpti_ActivityMemcpy6 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = copy_kind;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.streamId = stream;
    r.correlationId = correlation;
    return r;
  }
  static CUpti_ActivityMemset4 Memset(uint64_t bytes, uint64_t start, uint64_t end,
                                      uint32_t stream, uint32_t correlation) {
    CUpti_ActivityMemset4 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.streamId = stream;
    r.correlationId = correlation;
    return r;
  }
  static CUpti_ActivitySynchronization2 Sync(CUpti_ActivitySynchronizationType type,
                                             uint64_t start, uint64_t end, uint32_t correlation) {
    CUpti_ActivitySynchronization2 r{};
    r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.type = type;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    return r;
  }

 private:
  static size_t Padded(size_t n) { return (n + 7) / 8 * 8; }
  static size_t SizeOf(CUpti_ActivityKind kind) {
    switch (kind) {
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER:
        return sizeof(CUpti_ActivityAPI);
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return sizeof(CUpti_ActivityExternalCorrelation);
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return sizeof(CUpti_ActivityKernel10);
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        return sizeof(CUpti_ActivityMemcpy6);
      case CUPTI_ACTIVITY_KIND_MEMSET:
        return sizeof(CUpti_ActivityMemset4);
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        return sizeof(CUpti_ActivitySynchronization2);
      default:
        return 0;
    }
  }

  std::vector<uint8_t> bytes_;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_TESTS_AGENT_GPU_SYNTHETIC_ACTIVITY_BUFFER_H_
