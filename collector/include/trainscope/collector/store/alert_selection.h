// Picks the alerts an AlertQuery asks for out of a job's raise/clear rows,
// so that the live pipeline and the SQLite index answer alike.
//
// Usage:
//   std::vector<v1::Alert> page = SelectAlerts(rows, query);
//
// Threading: a free function, no state.
#ifndef TRAINSCOPE_COLLECTOR_STORE_ALERT_SELECTION_H_
#define TRAINSCOPE_COLLECTOR_STORE_ALERT_SELECTION_H_

#include <vector>

#include "trainscope/v1/alerts.pb.h"

namespace trainscope::collector {

// `rows` in the order they happened (a clear after its raise). Returns those
// with alert_id > query.after_alert_id and the query's rule; with open_only,
// the raises that no later clear ended; with limit, the newest `limit`.
template <typename Rows>
std::vector<trainscope::v1::Alert> SelectAlerts(const Rows& rows,
                                                const trainscope::v1::AlertQuery& query) {
  std::vector<trainscope::v1::Alert> out;
  for (const trainscope::v1::Alert& alert : rows) {
    if (alert.alert_id() <= query.after_alert_id()) continue;
    if (!query.rule().empty() && alert.rule() != query.rule()) continue;
    if (query.open_only() && alert.state() == trainscope::v1::ALERT_STATE_CLEARED) {
      std::erase_if(out, [&](const auto& a) { return a.alert_id() == alert.alert_id(); });
      continue;
    }
    out.push_back(alert);
  }
  if (query.limit() > 0 && out.size() > query.limit()) {
    out.erase(out.begin(), out.end() - query.limit());
  }
  return out;
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_ALERT_SELECTION_H_
