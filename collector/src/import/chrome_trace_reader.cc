#include "trainscope/collector/import/chrome_trace_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainscope/ops/flop_formulas.h"

namespace trainscope::collector {
namespace {

constexpr size_t kChunk = 1 << 20;
// Nesting deeper than this in an event's values is not a trace.
constexpr int kMaxDepth = 64;

}  // namespace

ChromeTraceReader::ChromeTraceReader(std::string path) : path_(std::move(path)) {}

bool ChromeTraceReader::Fill() {
  if (eof_) return false;
  // Keep what is not consumed yet; the buffer holds at most a chunk more.
  consumed_ += pos_;
  buffer_.erase(0, pos_);
  pos_ = 0;
  const size_t old = buffer_.size();
  buffer_.resize(old + kChunk);
  const int got = gzread(static_cast<gzFile>(file_), buffer_.data() + old, kChunk);
  buffer_.resize(old + static_cast<size_t>(std::max(got, 0)));
  if (got <= 0) eof_ = true;
  return got > 0;
}

int ChromeTraceReader::Peek() {
  while (true) {
    while (pos_ < buffer_.size()) {
      const char c = buffer_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return static_cast<unsigned char>(c);
      ++pos_;
    }
    if (!Fill()) return -1;
  }
}

absl::Status ChromeTraceReader::Error(const std::string& expected) const {
  const uint64_t at = consumed_ + pos_;
  if (pos_ >= buffer_.size()) {
    return absl::DataLossError(
        absl::StrFormat("%s: truncated at byte %d: expected %s; the %d events before it were read",
                        path_, at, expected, events_));
  }
  const char c = buffer_[pos_];
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: byte %d: expected %s, found '%s'; the %d events before it were read", path_, at,
      expected, std::string(1, c >= 0x20 && c < 0x7f ? c : '?'), events_));
}

absl::Status ChromeTraceReader::Expect(char c, const char* what) {
  if (Peek() != c) return Error(what);
  ++pos_;
  return absl::OkStatus();
}

absl::Status ChromeTraceReader::ParseString(std::string* out) {
  if (Peek() != '"') return Error("a string");
  ++pos_;
  out->clear();
  while (true) {
    if (pos_ >= buffer_.size() && !Fill()) return Error("the end of a string");
    // The plain run up to the next quote or escape, appended at once.
    const char* begin = buffer_.data() + pos_;
    const char* end = buffer_.data() + buffer_.size();
    const char* stop = begin;
    while (stop < end && *stop != '"' && *stop != '\\') ++stop;
    out->append(begin, stop);
    pos_ += static_cast<size_t>(stop - begin);
    if (stop == end) continue;
    const char c = buffer_[pos_++];
    if (c == '"') return absl::OkStatus();
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (pos_ >= buffer_.size() && !Fill()) return Error("an escaped character");
    const char e = buffer_[pos_++];
    if (e == 'u') {
      std::string hex;
      for (int i = 0; i < 4; ++i) {
        if (pos_ >= buffer_.size() && !Fill()) return Error("4 hex digits after \\u");
        hex.push_back(buffer_[pos_++]);
      }
      const long code = std::strtol(hex.c_str(), nullptr, 16);
      // Names are ASCII in practice; other characters become '?'.
      out->push_back(code > 0 && code < 0x80 ? static_cast<char>(code) : '?');
      continue;
    }
    static constexpr std::pair<char, char> kEscapes[] = {
        {'n', '\n'}, {'t', '\t'}, {'r', '\r'}, {'b', '\b'}, {'f', '\f'}};
    char plain = e;  // '"', '\\', '/' stand for themselves
    for (const auto& [escaped, meaning] : kEscapes) {
      if (e == escaped) plain = meaning;
    }
    out->push_back(plain);
  }
}

absl::Status ChromeTraceReader::ParseNumber(double* out) {
  Peek();
  number_.clear();
  while (pos_ < buffer_.size() || Fill()) {
    const char c = buffer_[pos_];
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) {
      break;
    }
    number_.push_back(c);
    ++pos_;
  }
  char* end = nullptr;
  *out = std::strtod(number_.c_str(), &end);
  if (number_.empty() || end != number_.c_str() + number_.size()) return Error("a number");
  return absl::OkStatus();
}

absl::Status ChromeTraceReader::ParseMicros(double* us, int64_t* ns) {
  if (absl::Status s = ParseNumber(us); !s.ok()) return s;
  // number_ holds the text: integer digits and up to 3 fraction digits are
  // nanoseconds exactly; the 4th rounds. Exponents go through the double.
  const std::string& t = number_;
  if (t.find_first_of("eE") != std::string::npos || t.size() > 24) {
    *ns = static_cast<int64_t>(std::llround(*us * 1000.0));
    return absl::OkStatus();
  }
  size_t i = 0;
  const bool negative = t[0] == '-';
  if (negative || t[0] == '+') ++i;
  int64_t whole = 0;
  for (; i < t.size() && t[i] != '.'; ++i) whole = whole * 10 + (t[i] - '0');
  int64_t frac = 0;
  int digits = 0;
  bool round_up = false;
  if (i < t.size()) {
    for (++i; i < t.size(); ++i, ++digits) {
      if (digits < 3) {
        frac = frac * 10 + (t[i] - '0');
      } else if (digits == 3) {
        round_up = t[i] >= '5';
      }
    }
  }
  for (int d = digits; d < 3; ++d) frac *= 10;
  const int64_t value = whole * 1000 + frac + (round_up ? 1 : 0);
  *ns = negative ? -value : value;
  return absl::OkStatus();
}

absl::Status ChromeTraceReader::ParseUnsigned(uint64_t* out) {
  double v = 0;
  if (absl::Status s = ParseNumber(&v); !s.ok()) return s;
  // Large ids (correlations) are integers in the text: read them exactly.
  uint64_t exact = 0;
  if (!number_.empty() && number_.find_first_not_of("0123456789") == std::string::npos &&
      number_.size() < 20) {
    for (char c : number_) exact = exact * 10 + static_cast<uint64_t>(c - '0');
    *out = exact;
  } else {
    *out = v > 0 ? static_cast<uint64_t>(v) : 0;
  }
  return absl::OkStatus();
}

template <typename OnMember>
absl::Status ChromeTraceReader::ParseMembers(const char* what, OnMember on_member) {
  if (Peek() != '{') return Error(absl::StrCat("'{' (", what, ")"));
  ++pos_;
  if (Peek() == '}') {
    ++pos_;
    return absl::OkStatus();
  }
  std::string key;
  while (true) {
    if (absl::Status s = ParseString(&key); !s.ok()) return s;
    if (absl::Status s = Expect(':', "':'"); !s.ok()) return s;
    if (absl::Status s = on_member(key); !s.ok()) return s;
    if (Peek() == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    if (Peek() != ',') return Error(absl::StrCat("',' or '}' in ", what));
    ++pos_;
  }
}

absl::Status ChromeTraceReader::SkipValue(int depth) {
  if (depth > kMaxDepth) return Error("values nested less deeply");
  const int c = Peek();
  if (c == '"') {
    std::string ignored;
    return ParseString(&ignored);
  }
  if (c == '{') {
    return ParseMembers("an object", [&](const std::string&) { return SkipValue(depth + 1); });
  }
  if (c == '[') {
    ++pos_;
    if (Peek() == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      if (absl::Status s = SkipValue(depth + 1); !s.ok()) return s;
      if (Peek() == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      if (absl::Status s = Expect(',', "',' or ']'"); !s.ok()) return s;
    }
  }
  if (c == 't' || c == 'f' || c == 'n') {  // true, false, null
    while (pos_ < buffer_.size() || Fill()) {
      const char l = buffer_[pos_];
      if (l < 'a' || l > 'z') break;
      ++pos_;
    }
    return absl::OkStatus();
  }
  double ignored = 0;
  return ParseNumber(&ignored);
}

absl::Status ChromeTraceReader::ParseArgs(TraceEvent* event) {
  return ParseMembers("args", [&](const std::string& key) -> absl::Status {
    const int c = Peek();
    const bool text = c == '"';
    const bool number = c == '-' || (c >= '0' && c <= '9');
    if ((key == "group" || key == "Process Group Name") && text) {
      return ParseString(&event->group);
    }
    if (key == "Collective name" && text) return ParseString(&event->collective_name);
    if (key == "dtype" && text) return ParseString(&event->dtype);
    if (key == "Input Dims" && c == '[') return ParseInputDims(&event->input_dims);
    if (!number) return SkipValue(1);
    if (key == "sequence" || key == "step") {
      double v = 0;
      if (absl::Status s = ParseNumber(&v); !s.ok()) return s;
      if (v >= 0) (key == "step" ? event->step : event->sequence) = static_cast<uint64_t>(v);
      return absl::OkStatus();
    }
    uint64_t* unsigned_field = key == "correlation"      ? &event->correlation.emplace()
                               : key == "bytes"          ? &event->bytes.emplace()
                               : key == "flops"          ? &event->flops
                               : key == "In msg nelems"  ? &event->in_nelems
                               : key == "Out msg nelems" ? &event->out_nelems
                                                         : nullptr;
    if (unsigned_field != nullptr) return ParseUnsigned(unsigned_field);
    if (key == "device" || key == "stream") {
      double v = 0;
      if (absl::Status s = ParseNumber(&v); !s.ok()) return s;
      (key == "device" ? event->device : event->stream) = static_cast<int64_t>(v);
      return absl::OkStatus();
    }
    return SkipValue(1);
  });
}

absl::Status ChromeTraceReader::ParseInputDims(std::vector<std::vector<int64_t>>* dims) {
  dims->clear();
  ++pos_;  // '['
  if (Peek() == ']') {
    ++pos_;
    return absl::OkStatus();
  }
  while (true) {
    std::vector<int64_t>& shape = dims->emplace_back();
    if (Peek() != '[') {
      if (absl::Status s = SkipValue(2); !s.ok()) return s;
    } else {
      ++pos_;
      bool plain = true;
      while (Peek() != ']') {
        const int c = Peek();
        if (c == '-' || (c >= '0' && c <= '9')) {
          double v = 0;
          if (absl::Status s = ParseNumber(&v); !s.ok()) return s;
          shape.push_back(static_cast<int64_t>(v));
        } else {
          plain = false;
          if (absl::Status s = SkipValue(3); !s.ok()) return s;
        }
        if (Peek() == ']') break;
        if (absl::Status s = Expect(',', "',' or ']' in Input Dims"); !s.ok()) return s;
      }
      ++pos_;  // ']'
      if (!plain) shape.clear();
    }
    if (Peek() == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    if (absl::Status s = Expect(',', "',' or ']' in Input Dims"); !s.ok()) return s;
  }
}

absl::Status ChromeTraceReader::ParseEvent(TraceEvent* event, bool* complete) {
  *event = TraceEvent();
  std::string ph;
  absl::Status parsed = ParseMembers("an event", [&](const std::string& key) -> absl::Status {
    const bool text = Peek() == '"';
    if (key == "name" && text) return ParseString(&event->name);
    if (key == "cat" && text) return ParseString(&event->cat);
    if (key == "ph" && text) return ParseString(&ph);
    if (key == "ts" && !text) return ParseMicros(&event->ts_us, &event->ts_ns);
    if (key == "dur" && !text) return ParseMicros(&event->dur_us, &event->dur_ns);
    if ((key == "pid" || key == "tid") && !text) {
      double number = 0;
      if (absl::Status s = ParseNumber(&number); !s.ok()) return s;
      (key == "pid" ? event->pid : event->tid) = static_cast<int64_t>(number);
      return absl::OkStatus();
    }
    if (key == "id" && !text) return ParseUnsigned(&event->flow_id);
    if (key == "args" && Peek() == '{') return ParseArgs(event);
    return SkipValue(1);
  });
  // The name may come after the args: derive FLOPs once the event is whole.
  if (event->flops == 0 && !event->input_dims.empty()) {
    event->flops = ops::FlopsFromInputShapes(event->name, event->input_dims);
  }
  if (ph == "X") {
    event->phase = TraceEvent::Phase::kComplete;
    *complete = parsed.ok();
  } else if ((ph == "s" || ph == "f") &&
             (event->cat == "ac2g" || event->cat == "async_cpu_to_gpu")) {
    // The CPU-to-GPU link: the launch's end ("s") and the kernel's ("f").
    event->phase = ph == "s" ? TraceEvent::Phase::kFlowStart : TraceEvent::Phase::kFlowEnd;
    *complete = parsed.ok();
  } else {
    *complete = false;
  }
  return parsed;
}

absl::Status ChromeTraceReader::ParseTopLevel(const std::string& key) {
  if (key == "distributedInfo" && Peek() == '{') return ParseDistributedInfo();
  if (key == "deviceProperties" && Peek() == '[') return ParseDeviceProperties();
  if ((key == "host_name" || key == "hostname") && Peek() == '"') {
    return ParseString(&metadata_.host);
  }
  return SkipValue(1);
}

absl::Status ChromeTraceReader::ParseDeviceProperties() {
  ++pos_;  // '['
  if (Peek() == ']') {
    ++pos_;
    return absl::OkStatus();
  }
  while (true) {
    TraceGpu gpu;
    absl::Status s = ParseMembers("a deviceProperties entry", [&](const std::string& key) {
      const bool text = Peek() == '"';
      if (key == "name" && text) return ParseString(&gpu.name);
      if (text) return SkipValue(1);
      uint64_t v = 0;
      if (key == "id" || key == "totalGlobalMem" || key == "numSms" || key == "computeMajor" ||
          key == "computeMinor") {
        if (absl::Status n = ParseUnsigned(&v); !n.ok()) return n;
        if (key == "id") gpu.id = static_cast<uint32_t>(v);
        if (key == "totalGlobalMem") gpu.total_memory = v;
        if (key == "numSms") gpu.multiprocessors = static_cast<uint32_t>(v);
        if (key == "computeMajor") gpu.compute_major = static_cast<int>(v);
        if (key == "computeMinor") gpu.compute_minor = static_cast<int>(v);
        return absl::OkStatus();
      }
      return SkipValue(1);
    });
    if (!s.ok()) return s;
    metadata_.gpus.push_back(std::move(gpu));
    if (Peek() == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    if (absl::Status c = Expect(',', "',' or ']' in deviceProperties"); !c.ok()) return c;
  }
}

absl::Status ChromeTraceReader::ParseDistributedInfo() {
  return ParseMembers("distributedInfo", [&](const std::string& key) -> absl::Status {
    if ((key == "host_name" || key == "hostname") && Peek() == '"') {
      return ParseString(&metadata_.host);
    }
    if ((key != "rank" && key != "world_size") || Peek() == '"') return SkipValue(1);
    double v = 0;
    if (absl::Status s = ParseNumber(&v); !s.ok()) return s;
    if (v < 0 || v > 1e6) return Error(key == "rank" ? "a rank number" : "a world size");
    (key == "rank" ? metadata_.rank : metadata_.world_size) = static_cast<uint32_t>(v);
    return absl::OkStatus();
  });
}

ChromeTraceReader::~ChromeTraceReader() {
  if (file_ != nullptr) gzclose(static_cast<gzFile>(file_));
}

absl::Status ChromeTraceReader::Start() {
  file_ = gzopen(path_.c_str(), "rb");
  if (file_ == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": cannot be opened"));
  gzbuffer(static_cast<gzFile>(file_), 1 << 17);
  const int first = Peek();
  if (first == '[') {
    ++pos_;
    return absl::OkStatus();
  }
  if (first != '{') {
    return Error("a Chrome trace: '[' (a list of events) or '{' (an object with traceEvents)");
  }
  ++pos_;
  in_object_ = true;
  if (Peek() == '}') return Error("\"traceEvents\"");
  std::string key;
  while (true) {
    if (absl::Status s = ParseString(&key); !s.ok()) return s;
    if (absl::Status s = Expect(':', "':'"); !s.ok()) return s;
    if (key == "traceEvents") return Expect('[', "'[' (the list of events)");
    if (absl::Status s = ParseTopLevel(key); !s.ok()) return s;
    if (Peek() == '}') return Error("a \"traceEvents\" list in the top-level object");
    if (absl::Status c = Expect(',', "',' or '}' at the top level"); !c.ok()) return c;
  }
}

absl::Status ChromeTraceReader::Finish() {
  if (!in_object_) return absl::OkStatus();
  // What follows the events: distributedInfo and the like are read (some
  // writers put them last), the rest (otherData, ...) is skipped.
  std::string key;
  while (true) {
    if (Peek() == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    if (absl::Status c = Expect(',', "',' or '}' at the top level"); !c.ok()) return c;
    if (absl::Status s = ParseString(&key); !s.ok()) return s;
    if (absl::Status s = Expect(':', "':'"); !s.ok()) return s;
    if (absl::Status s = ParseTopLevel(key); !s.ok()) return s;
  }
}

absl::StatusOr<bool> ChromeTraceReader::Next(TraceEvent* event) {
  while (true) {
    switch (state_) {
      case State::kDone:
        return false;
      case State::kNew:
        if (absl::Status s = Start(); !s.ok()) {
          state_ = State::kDone;
          return s;
        }
        state_ = State::kFirstEvent;
        break;
      case State::kFirstEvent:
      case State::kMoreEvents: {
        if (Peek() == ']') {
          ++pos_;
          state_ = State::kDone;
          if (absl::Status s = Finish(); !s.ok()) return s;
          return false;
        }
        if (state_ == State::kMoreEvents) {
          if (absl::Status c = Expect(',', "',' or ']' after an event"); !c.ok()) {
            state_ = State::kDone;
            return c;
          }
        }
        state_ = State::kMoreEvents;
        bool complete = false;
        if (absl::Status s = ParseEvent(event, &complete); !s.ok()) {
          state_ = State::kDone;
          return s;
        }
        if (complete) {
          ++events_;
          return true;
        }
        ++skipped_;
        break;
      }
    }
  }
}

}  // namespace trainscope::collector
