#include "trainscope/collector/analysis/alert_rule.h"

#include "absl/strings/str_format.h"

namespace trainscope::collector {

v1::Alert BaseAlert(absl::string_view rule) {
  v1::Alert a;
  a.set_rule(std::string(rule));
  a.set_cause_rank(-1);
  a.set_link_src_rank(-1);
  a.set_link_dst_rank(-1);
  a.set_stage(-1);
  return a;
}

std::string RankSubject(uint32_t rank) { return absl::StrFormat("rank %010u", rank); }

std::string StageSubject(uint32_t stage) { return absl::StrFormat("stage %010u", stage); }

}  // namespace trainscope::collector
