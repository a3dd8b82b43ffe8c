// A string as a JSON string literal (quotes, backslashes and control
// characters escaped), for the hand-written JSON of exports and summaries.
#ifndef TRAINSCOPE_COLLECTOR_EXPORT_JSON_STRING_H_
#define TRAINSCOPE_COLLECTOR_EXPORT_JSON_STRING_H_

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace trainscope::collector {

inline std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_EXPORT_JSON_STRING_H_
