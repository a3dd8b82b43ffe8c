// The agent's interned strings: ids for the hot path, text for the sender.
//
// Usage:
//   StringTable table(/*max_bytes=*/512, /*max_strings=*/1 << 20);
//   StringId id = table.Intern("aten::conv2d");   // any thread
//   table.Visit({id, ...}, [&](std::string_view text) { ... });   // sender
//
// Text is cut to max_bytes on a UTF-8 boundary and invalid UTF-8 bytes become
// '?', because proto3 refuses a string field that is not UTF-8 and one bad
// name would cost the whole batch. Past max_strings distinct strings every new
// string maps to one "(string table full)" id, keeping memory bounded.
//
// Threading: thread-safe (one mutex; interning is a cold path).
#ifndef TRAINSCOPE_AGENT_SRC_STRING_TABLE_H_
#define TRAINSCOPE_AGENT_SRC_STRING_TABLE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "trainscope/agent/event_record.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

class StringTable {
 public:
  StringTable(size_t max_bytes, size_t max_strings);

  StringId Intern(std::string_view text);
  // Appends the text of each id in order (unknown ids give "").
  void CopyTo(const std::vector<StringId>& ids,
              google::protobuf::RepeatedPtrField<std::string>* out) const;
  // Calls fn(text) for each id in order (unknown ids give ""), under the
  // table's lock: the views are valid only inside fn.
  template <typename Fn>
  void Visit(const std::vector<StringId>& ids, Fn&& fn) const {
    base::MutexLock lock(&mu_);
    for (StringId id : ids)
      fn(id < texts_.size() ? std::string_view(texts_[id]) : std::string_view());
  }
  size_t size() const;

  // `text` cut to max_bytes without splitting a character, invalid bytes '?'.
  static std::string Sanitize(std::string_view text, size_t max_bytes);

 private:
  const size_t max_bytes_;
  const size_t max_strings_;
  mutable base::Mutex mu_;
  std::vector<std::string> texts_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, StringId> ids_ ABSL_GUARDED_BY(mu_);
  StringId overflow_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_STRING_TABLE_H_
