#include "segment_scanner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "segment_format.h"

namespace trainscope::collector {
namespace {

// The first offset >= `from` where a whole, CRC-valid frame starts, or npos.
// Each candidate is a position holding the frame magic; the CRC decides.
size_t FindNextFrame(std::string_view bytes, size_t from) {
  const char first = static_cast<char>(kFrameMagic & 0xFFu);
  while (from < bytes.size()) {
    const void* hit = std::memchr(bytes.data() + from, first, bytes.size() - from);
    if (hit == nullptr) return std::string_view::npos;
    const size_t candidate = static_cast<const char*>(hit) - bytes.data();
    if (DecodeFrame(bytes.substr(candidate)).status == FrameStatus::kOk) return candidate;
    from = candidate + 1;
  }
  return std::string_view::npos;
}

absl::Status ErrnoError(int error, const std::string& what, const std::filesystem::path& path) {
  std::string message = absl::StrCat(what, " ", path.string(), ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

absl::StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open segment", path);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(error, "cannot stat segment", path);
  }
  // Read what exists now; a concurrent appender's later bytes are not ours.
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return ErrnoError(error, "cannot read segment", path);
    }
    if (n == 0) break;  // truncated under us: scan what we got
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace

SegmentScan ScanSegmentBytes(std::string_view bytes, const RecordCallback& on_record) {
  SegmentScan scan;
  scan.file_bytes = bytes.size();
  size_t pos = 0;
  const char* problem = nullptr;  // set: bytes from `pos` are damaged
  switch (CheckSegmentHeader(bytes, nullptr)) {
    case SegmentHeaderCheck::kValid:
      scan.header_valid = true;
      pos = kSegmentHeaderBytes;
      scan.valid_end = pos;
      break;
    case SegmentHeaderCheck::kTooShort:
      scan.tail_bytes = bytes.size();
      scan.tail_problem = "segment header cut short";
      return scan;
    case SegmentHeaderCheck::kBadMagic:
    case SegmentHeaderCheck::kUnsupportedVersion:  // ScanSegmentFile refuses these first
      problem = "bad segment header";
      break;
  }

  trainscope::v1::LogRecord record;
  while (true) {
    if (problem != nullptr) {
      // Frames never start inside the header.
      const size_t next = FindNextFrame(bytes, std::max(pos + 1, kSegmentHeaderBytes));
      if (next == std::string_view::npos) {
        scan.tail_bytes = bytes.size() - pos;
        scan.tail_problem = problem;
        break;
      }
      scan.damage.push_back(
          {.segment = {}, .offset = pos, .length = next - pos, .problem = problem});
      pos = next;
      problem = nullptr;
    }
    if (pos >= bytes.size()) break;
    const DecodedFrame frame = DecodeFrame(bytes.substr(pos));
    if (frame.status != FrameStatus::kOk) {
      problem = frame.problem;
      continue;
    }
    const size_t frame_pos = pos;
    pos += frame.frame_bytes;
    scan.valid_end = pos;
    if (!record.ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size()))) {
      // The CRC matched, so the writer wrote this; skip the whole frame.
      scan.damage.push_back({.segment = {},
                             .offset = frame_pos,
                             .length = frame.frame_bytes,
                             .problem = "frame payload is not a LogRecord"});
      continue;
    }
    ++scan.records;
    if (on_record && !on_record(record)) {
      scan.stopped = true;
      break;
    }
  }
  return scan;
}

absl::StatusOr<SegmentScan> ScanSegmentFile(const std::filesystem::path& path,
                                            const RecordCallback& on_record) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  uint32_t version = 0;
  if (CheckSegmentHeader(*bytes, &version) == SegmentHeaderCheck::kUnsupportedVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("segment ", path.string(), " has format version ", version,
                     "; this build reads version ", kSegmentFormatVersion));
  }
  SegmentScan scan = ScanSegmentBytes(*bytes, on_record);
  for (DamagedRange& range : scan.damage) range.segment = path;
  return scan;
}

absl::StatusOr<std::vector<std::pair<uint64_t, std::filesystem::path>>> ListSegmentFiles(
    const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  if (error) {
    std::string message =
        absl::StrCat("cannot list log directory ", dir.string(), ": ", error.message());
    if (error == std::errc::no_such_file_or_directory) return absl::NotFoundError(message);
    return absl::FailedPreconditionError(message);
  }
  std::vector<std::pair<uint64_t, std::filesystem::path>> segments;
  for (; it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (std::optional<uint64_t> index = ParseSegmentFileName(name)) {
      segments.emplace_back(*index, it->path());
    }
  }
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot list log directory ", dir.string(), ": ", error.message()));
  }
  std::sort(segments.begin(), segments.end());
  return segments;
}

}  // namespace trainscope::collector
