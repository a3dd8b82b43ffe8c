#include "trainscope/viewer/marey_joins.h"

#include <algorithm>
#include <unordered_map>

#include "trainscope/viewer/marey_palette.h"

namespace trainscope::viewer {

size_t MareyJoins::Add(const RowItems& upper, const RowItems& lower, float y_top, float y_bottom,
                       const Rules& rules, DrawList* list) {
  if (y_bottom - y_top < 2) return 0;
  size_t joins = 0;
  std::unordered_map<uint64_t, size_t> by_key;
  by_key.reserve(lower.items.size() * 2);
  for (size_t i = 0; i < lower.items.size(); ++i) by_key.emplace(lower.items[i].key, i);
  for (const auto& item : upper.items) {
    auto it = by_key.find(item.key);
    if (it == by_key.end()) continue;
    const bool point_to_point = item.cls == OpClass::kSend || item.cls == OpClass::kRecv;
    if (!rules.same_stage && !point_to_point) continue;
    if (rules.collectives_only && item.cls != OpClass::kGpuCollective) continue;
    const auto& other = lower.items[it->second];
    Quad quad;
    quad.p[0] = {item.x0, y_top};
    quad.p[1] = {item.x1, y_top};
    quad.p[2] = {other.x1, y_bottom};
    quad.p[3] = {other.x0, y_bottom};
    quad.fill = WithAlpha(MareyPalette::ForClass(item.cls), IsMergeable(item.cls) ? 70 : 130);
    quad.smooth = rules.merged_bins;  // adjacent rows: short bands, cheap to smooth
    list->quads.push_back(quad);
    ++joins;
  }
  const size_t bins = rules.same_stage && !rules.collectives_only && rules.merged_bins
                          ? std::min(upper.merged.size(), lower.merged.size())
                          : 0;
  for (size_t k = 0; k < bins; ++k) {
    const auto& a = upper.merged[k];
    const auto& b = lower.merged[k];
    if (a.second < 0 || b.second < 0) continue;
    Quad quad;
    quad.p[0] = {a.first, y_top};
    quad.p[1] = {a.second, y_top};
    quad.p[2] = {b.second, y_bottom};
    quad.p[3] = {b.first, y_bottom};
    quad.fill = WithAlpha(kMergedColor, 45);
    quad.smooth = false;
    list->quads.push_back(quad);
    ++joins;
  }
  return joins;
}

}  // namespace trainscope::viewer
