#include "string_table.h"

#include <algorithm>
#include <cstdint>

namespace trainscope::agent {

namespace {

// Length of the valid UTF-8 sequence at text[i], or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t length;
  uint32_t min_code;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, min_code = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, min_code = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, min_code = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  uint32_t code = b0 & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

}  // namespace

StringTable::StringTable(size_t max_bytes, size_t max_strings)
    : max_bytes_(max_bytes), max_strings_(max_strings) {
  texts_.emplace_back();
  ids_.emplace("", kEmptyString);
}

std::string StringTable::Sanitize(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = Utf8SequenceLength(text, i);
    const size_t take = length == 0 ? 1 : length;
    if (out.size() + take > max_bytes) break;
    if (length == 0) {
      out.push_back('?');
    } else {
      out.append(text.substr(i, length));
    }
    i += take;
  }
  return out;
}

StringId StringTable::Intern(std::string_view text) {
  if (text.empty()) return kEmptyString;
  std::string clean = Sanitize(text, max_bytes_);
  base::MutexLock lock(&mu_);
  if (auto it = ids_.find(clean); it != ids_.end()) return it->second;
  if (texts_.size() >= max_strings_) {
    if (overflow_id_ == 0) {
      overflow_id_ = static_cast<StringId>(texts_.size());
      texts_.emplace_back("(string table full)");
    }
    return overflow_id_;
  }
  const auto id = static_cast<StringId>(texts_.size());
  texts_.push_back(clean);
  ids_.emplace(std::move(clean), id);
  return id;
}

void StringTable::CopyTo(const std::vector<StringId>& ids,
                         google::protobuf::RepeatedPtrField<std::string>* out) const {
  base::MutexLock lock(&mu_);
  out->Reserve(out->size() + static_cast<int>(ids.size()));
  for (StringId id : ids) {
    if (id < texts_.size()) {
      out->Add()->assign(texts_[id]);
    } else {
      out->Add();
    }
  }
}

size_t StringTable::size() const {
  base::MutexLock lock(&mu_);
  return texts_.size();
}

}  // namespace trainscope::agent
