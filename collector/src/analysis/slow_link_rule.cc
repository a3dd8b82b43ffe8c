// slow_link: a link whose median bandwidth over its usable samples in the
// window is below SlowLinkRule.below_median (send/recv links:
// p2p_below_median) of similar links' (same type, byte counts within
// kLinkBytesRatio: a small transfer is latency-bound and slow by nature);
// a send/recv link also only when its median transfer time is at least
// p2p_min_step_fraction of the median step time (alerts.proto says why).
// Collective ring links only when collective_links is set.
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

// Links carrying byte counts within this factor of each other are compared.
constexpr double kLinkBytesRatio = 2;

class SlowLinkRule : public AlertRule {
 public:
  SlowLinkRule(const v1::SlowLinkRule& rule, size_t window_steps)
      : rule_(rule), window_steps_(window_steps) {}

  absl::string_view name() const override { return kRuleSlowLink; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    std::vector<RuleVerdict> out;
    for (const auto& [type, links] : JudgedLinks(step, history)) {
      for (const Judged& link : links) {
        // Peers: links of the same type with similar transfers.
        std::vector<double> peer_rates;
        for (const Judged& p : links) {
          if (&p == &link) continue;
          const double ratio = p.bytes / link.bytes;
          if (ratio <= kLinkBytesRatio && ratio >= 1 / kLinkBytesRatio) {
            peer_rates.push_back(p.rate);
          }
        }
        // With fewer than two peers the median is one of the two compared.
        if (peer_rates.size() < 2) continue;
        out.push_back(Verdict(link, type, links.size(), Median(std::move(peer_rates))));
      }
    }
    return out;
  }

 private:
  // A link judged on its usable samples in the window.
  struct Judged {
    std::string key;
    const std::deque<LinkSample>* samples;
    uint32_t src;
    uint32_t dst;
    double bytes;  // medians over the usable samples
    double rate;
    double step_share;  // median transfer time / median step time
  };

  // The links of `step` with usable samples in a majority of the window, by type.
  std::map<std::string, std::vector<Judged>> JudgedLinks(const v1::StepReport& step,
                                                         const RuleHistory& history) const {
    std::map<std::string, std::vector<Judged>> by_type;
    for (const v1::LinkStep& l : step.links()) {
      if (l.link_type() == "collective" && !rule_.collective_links()) continue;
      const std::string key = RuleHistory::LinkKey(l);
      const std::deque<LinkSample>* samples = history.LinkWindow(key);
      if (samples == nullptr) continue;
      std::vector<double> rates, bytes, durations, steps;
      for (const LinkSample& s : *samples) {
        if (!s.usable) continue;
        rates.push_back(s.bytes_per_second);
        bytes.push_back(s.bytes);
        durations.push_back(s.duration_ns);
        steps.push_back(s.step_ns);
      }
      if (rates.size() * 2 <= window_steps_) continue;
      const double step_ns = Median(std::move(steps));
      by_type[l.link_type()].push_back({key, samples, 0, 0, Median(std::move(bytes)),
                                        Median(std::move(rates)),
                                        step_ns > 0 ? Median(std::move(durations)) / step_ns : 0});
    }
    // The endpoints: of the step's last link with the key (the key is unique
    // within a step).
    for (auto& [type, links] : by_type) {
      for (Judged& link : links) {
        for (const v1::LinkStep& l : step.links()) {
          if (RuleHistory::LinkKey(l) == link.key) {
            link.src = l.src_rank();
            link.dst = l.dst_rank();
          }
        }
      }
    }
    return by_type;
  }

  RuleVerdict Verdict(const Judged& link, const std::string& type, size_t similar,
                      double median) const {
    const bool p2p = type == "p2p";
    const double threshold = (p2p ? rule_.p2p_below_median() : rule_.below_median()) * median;
    RuleVerdict v;
    v.subject = link.key;
    v.holds = link.rate < threshold && (!p2p || link.step_share >= rule_.p2p_min_step_fraction());
    v.present = v.holds;
    v.onset_step = TrailingOnset(*link.samples, window_steps_, [&](const LinkSample& s) {
      return !s.usable || s.bytes_per_second < threshold;
    });
    v.alert = BaseAlert(kRuleSlowLink);
    v.alert.add_ranks(link.src);
    v.alert.add_ranks(link.dst);
    v.alert.set_link_src_rank(static_cast<int32_t>(link.src));
    v.alert.set_link_dst_rank(static_cast<int32_t>(link.dst));
    v.alert.set_metric("bytes_per_second");
    v.alert.set_observed(link.rate);
    v.alert.set_baseline(median);
    v.alert.set_threshold(threshold);
    v.what = absl::StrFormat("link %u->%u (%s) is slow", link.src, link.dst, type);
    v.values =
        absl::StrFormat("median %s vs %s of %zu similar %s links", FormatRate(link.rate, "B/s"),
                        FormatRate(median, "B/s"), similar, type);
    if (p2p) absl::StrAppendFormat(&v.values, ", %.0f%% of the step", 100 * link.step_share);
    return v;
  }

  const v1::SlowLinkRule rule_;
  const size_t window_steps_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeSlowLinkRule(const v1::RulesConfig& rules) {
  if (!rules.slow_link().enabled()) return nullptr;
  return std::make_unique<SlowLinkRule>(rules.slow_link(), rules.window_steps());
}

}  // namespace trainscope::collector
