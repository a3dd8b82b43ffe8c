// libFuzzer target for the durable log's decoders: the frame decoder, the
// segment scanner (resynchronisation after damage) and LogRecord parsing.
// Checks invariants rather than just "no crash":
//   - a frame that decodes re-encodes to the same bytes;
//   - the scanner's accounting never points past the input.
//
//   cmake ... -DTRAINSCOPE_BUILD_FUZZERS=ON && ./bin/segment_frame_fuzzer -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "google/protobuf/stubs/logging.h"
#include "segment_format.h"
#include "segment_scanner.h"
#include "trainscope/v1/log.pb.h"

namespace {

using trainscope::collector::AppendFrame;
using trainscope::collector::DecodedFrame;
using trainscope::collector::DecodeFrame;
using trainscope::collector::EncodeSegmentHeader;
using trainscope::collector::FrameStatus;
using trainscope::collector::ScanSegmentBytes;
using trainscope::collector::SegmentScan;

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

// Protobuf logs every rejected UTF-8 string; that is expected here, and noise.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // 1. The frame decoder on raw bytes.
  const DecodedFrame frame = DecodeFrame(input);
  if (frame.status == FrameStatus::kOk) {
    Check(frame.frame_bytes <= size);
    std::string reencoded;
    AppendFrame(frame.payload, &reencoded);
    Check(reencoded == input.substr(0, frame.frame_bytes));
    trainscope::v1::LogRecord record;
    (void)record.ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size()));
  } else if (frame.status == FrameStatus::kNeedsMore) {
    Check(frame.frame_bytes > size);
  }

  // 2. The same bytes as LogRecord payload directly.
  trainscope::v1::LogRecord record;
  if (record.ParseFromArray(data, static_cast<int>(size))) (void)record.ByteSizeLong();

  // 3. The bytes as a segment body: scanning, resynchronisation, damage accounting.
  const std::string segment = EncodeSegmentHeader() + std::string(input);
  uint64_t delivered = 0;
  const SegmentScan scan = ScanSegmentBytes(segment, [&](const trainscope::v1::LogRecord&) {
    ++delivered;
    return true;
  });
  Check(scan.header_valid);
  Check(delivered == scan.records);
  Check(scan.valid_end <= segment.size());
  Check(scan.valid_end + scan.tail_bytes == segment.size());
  uint64_t previous_end = 0;
  for (const auto& range : scan.damage) {
    Check(range.offset >= previous_end);
    Check(range.length > 0 && range.offset + range.length <= scan.valid_end);
    previous_end = range.offset + range.length;
  }
  return 0;
}
