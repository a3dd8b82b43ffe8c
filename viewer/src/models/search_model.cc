#include "trainscope/viewer/search_model.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "trainscope/base/number_format.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

constexpr const char* kDash = " \xE2\x80\x94 ";  // " — "

// Debian's Abseil has its own string_view.
absl::string_view Absl(std::string_view text) { return {text.data(), text.size()}; }

// `text` is digits only (and not empty): its value.
std::optional<uint64_t> Number(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty() || !std::all_of(text.begin(), text.end(), absl::ascii_isdigit)) {
    return std::nullopt;
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) return std::nullopt;  // too long
  return value;
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return absl::StrCat(base::FormatThousands(n), " ", n == 1 ? one : many);
}

// Orders matches by time, then device, then end: the order F3 walks.
auto MatchKey(const SearchModel::Match& m) { return std::make_tuple(m.start_ns, m.rank, m.end_ns); }

}  // namespace

SearchModel::SearchModel(const NameTable* names, const MareyTrackStore* store)
    : names_(names), store_(store) {}

SearchModel::Query SearchModel::Parse(std::string_view text) {
  Query query;
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(Absl(text)));
  if (lower.empty()) return query;
  absl::string_view rest = lower;
  std::optional<uint64_t> step;
  std::optional<uint64_t> rank;
  if (absl::ConsumePrefix(&rest, "#") || absl::ConsumePrefix(&rest, "step")) {
    step = Number(rest);
  } else if (absl::ConsumePrefix(&rest, "rank") || absl::ConsumePrefix(&rest, "r")) {
    rank = Number(rest);
  } else {
    step = Number(rest);  // a bare number is a step
  }
  if (step.has_value()) {
    query.kind = Query::Kind::kStep;
    query.number = *step;
  } else if (rank.has_value()) {
    query.kind = Query::Kind::kRank;
    query.number = *rank;
  } else {
    query.kind = Query::Kind::kOperator;
    query.text = lower;
  }
  return query;
}

std::string SearchModel::ResultText(const Result& result) {
  switch (result.kind) {
    case Query::Kind::kOperator:
      return absl::StrCat(result.label, kDash, Plural(result.matches, "match", "matches"), " on ",
                          Plural(result.ranks, "rank", "ranks"));
    case Query::Kind::kStep:
      if (!result.found) return absl::StrCat("no ", result.label);
      return absl::StrCat(result.label, kDash, Plural(result.matches, "rank", "ranks"), ", ",
                          FormatDuration(static_cast<double>(result.duration_ns)));
    case Query::Kind::kRank:
      if (!result.found) return absl::StrCat("no ", result.label);
      return absl::StrCat(result.label,
                          result.host.empty() ? std::string() : " (" + result.host + ")", kDash,
                          Plural(result.matches, "operator", "operators"));
    case Query::Kind::kNone:
      break;
  }
  return std::string();
}

void SearchModel::SetQuery(std::string_view text) {
  text_ = std::string(text);
  query_ = Parse(text);
  active_.reset();
  cursor_.reset();
  Run();
  if (!results_.empty()) active_ = 0;
}

void SearchModel::Refresh() {
  if (StoreState() == store_state_) return;
  // Keep the active name (its index may move: counts changed the order).
  const std::optional<uint32_t> active_name =
      active_.has_value() ? std::optional<uint32_t>(results_[*active_].name) : std::nullopt;
  Run();
  active_.reset();
  for (size_t i = 0; i < results_.size(); ++i) {
    if (active_name.has_value() && results_[i].name == *active_name) active_ = i;
  }
  if (!active_.has_value() && !results_.empty()) active_ = 0;
}

std::tuple<uint64_t, uint64_t, size_t> SearchModel::StoreState() const {
  return {store_->data_version(), store_->layout_version(), store_->steps().size()};
}

void SearchModel::Run() {
  results_.clear();
  more_results_ = 0;
  total_matches_ = 0;
  matches_.clear();
  matches_valid_ = false;
  current_.reset();
  store_state_ = StoreState();
  switch (query_.kind) {
    case Query::Kind::kOperator:
      SearchOperators();
      break;
    case Query::Kind::kStep:
      SearchStep();
      break;
    case Query::Kind::kRank:
      SearchRank();
      break;
    case Query::Kind::kNone:
      break;
  }
  ++version_;
}

void SearchModel::SyncLowerNames() {
  for (size_t id = lower_names_.size(); id < names_->size(); ++id) {
    lower_names_.push_back(absl::AsciiStrToLower(names_->Name(static_cast<uint32_t>(id))));
  }
}

void SearchModel::SearchOperators() {
  SyncLowerNames();
  // Name id -> its result slot; -1: does not match. Matching the names
  // first makes the scan over the operators one table look-up each.
  std::vector<int32_t> slot(lower_names_.size(), -1);
  std::vector<Result> found;
  for (size_t id = 1; id < lower_names_.size(); ++id) {
    if (!absl::StrContains(lower_names_[id], query_.text)) continue;
    slot[id] = static_cast<int32_t>(found.size());
    Result result;
    result.kind = Query::Kind::kOperator;
    result.name = static_cast<uint32_t>(id);
    result.label = names_->Name(result.name);
    found.push_back(std::move(result));
  }
  if (found.empty()) return;
  std::vector<std::set<uint32_t>> ranks(found.size());
  store_->ForEachTrack([&](const MareyTrack& track) {
    for (const auto* ops : {&track.compute, &track.comm}) {
      for (const MareyTrack::Op& op : *ops) {
        if (op.name >= slot.size() || slot[op.name] < 0) continue;
        const size_t s = static_cast<size_t>(slot[op.name]);
        ++found[s].matches;
        ranks[s].insert(track.rank);
      }
    }
  });
  for (size_t i = 0; i < found.size(); ++i) {
    found[i].ranks = static_cast<uint32_t>(ranks[i].size());
    total_matches_ += found[i].matches;
  }
  // Names interned but with no operator held (a group's name, evicted
  // operators) are not results.
  found.erase(
      std::remove_if(found.begin(), found.end(), [](const Result& r) { return r.matches == 0; }),
      found.end());
  std::sort(found.begin(), found.end(), [](const Result& a, const Result& b) {
    return a.matches != b.matches ? a.matches > b.matches : a.label < b.label;
  });
  if (found.size() > kMaxResults) {
    more_results_ = found.size() - kMaxResults;
    found.resize(kMaxResults);
  }
  results_ = std::move(found);
}

void SearchModel::SearchStep() {
  Result result;
  result.kind = Query::Kind::kStep;
  result.number = query_.number;
  result.label = absl::StrCat("step ", query_.number);
  auto it = store_->steps().find(query_.number);
  if (it != store_->steps().end()) {
    result.found = true;
    result.matches = it->second.devices.size();
    result.duration_ns = it->second.end_ns - it->second.start_ns;
    total_matches_ = 1;
  }
  results_.push_back(std::move(result));
}

void SearchModel::SearchRank() {
  Result result;
  result.kind = Query::Kind::kRank;
  result.number = query_.number;
  result.label = absl::StrCat("rank ", query_.number);
  const auto& devices = store_->devices();
  if (query_.number <= UINT32_MAX && devices.count(static_cast<uint32_t>(query_.number))) {
    const uint32_t rank = static_cast<uint32_t>(query_.number);
    result.found = true;
    result.host = store_->info(rank).host;
    store_->ForEachTrack([&](const MareyTrack& track) {
      if (track.rank == rank) result.matches += track.compute.size() + track.comm.size();
    });
    total_matches_ = 1;
  }
  results_.push_back(std::move(result));
}

std::string SearchModel::Summary() const {
  switch (query_.kind) {
    case Query::Kind::kNone:
      return std::string();
    case Query::Kind::kStep:
    case Query::Kind::kRank:
      if (results_.empty() || !results_[0].found) {
        const bool step = query_.kind == Query::Kind::kStep;
        std::string range;
        if (step && !store_->steps().empty()) {
          range = absl::StrCat(" (steps ", store_->steps().begin()->first, "\xE2\x80\x93",
                               store_->steps().rbegin()->first, ")");
        } else if (!step && !store_->devices().empty()) {
          range = absl::StrCat(" (ranks ", store_->devices().begin()->first, "\xE2\x80\x93",
                               store_->devices().rbegin()->first, ")");
        }
        return absl::StrCat("no ", step ? "step " : "rank ", query_.number, range);
      }
      return ResultText(results_[0]);
    case Query::Kind::kOperator:
      break;
  }
  if (results_.empty()) {
    return absl::StrCat("no operator, step or rank matches \"", query_.text, "\"");
  }
  if (current_.has_value() && *current_ < matches_.size()) {
    const Match& m = matches_[*current_];
    return absl::StrCat("match ", base::FormatThousands(*current_ + 1), " of ",
                        base::FormatThousands(matches_.size()), " \xC2\xB7 ", names_->Name(m.name),
                        " \xC2\xB7 step ", m.step, ", rank ", m.rank);
  }
  return absl::StrCat(
      Plural(results_.size() + more_results_, "name", "names"), ", ",
      Plural(total_matches_, "match", "matches"),
      more_results_ > 0 ? absl::StrCat(" (", results_.size(), " listed)") : std::string(),
      " \xC2\xB7 Enter or F3: next");
}

void SearchModel::SetActive(size_t index) {
  if (index >= results_.size() || active_ == index) return;
  active_ = index;
  matches_.clear();
  matches_valid_ = false;
  current_.reset();
  cursor_.reset();
  ++version_;
}

void SearchModel::CollectMatches() {
  matches_.clear();
  matches_valid_ = true;
  if (!active_.has_value()) return;
  const Result& result = results_[*active_];
  if (result.kind == Query::Kind::kStep && result.found) {
    const StepRecord& step = store_->steps().at(result.number);
    matches_.push_back({step.start_ns, step.end_ns, step.start_ns, step.end_ns, 0, 0, step.step});
    return;
  }
  if (result.kind == Query::Kind::kRank && result.found) {
    matches_.push_back({0, 0, 0, 0, static_cast<uint32_t>(result.number), 0, 0});
    return;
  }
  if (result.kind != Query::Kind::kOperator) return;
  matches_.reserve(result.matches);
  store_->ForEachTrack([&](const MareyTrack& track) {
    for (const auto* ops : {&track.compute, &track.comm}) {
      for (const MareyTrack::Op& op : *ops) {
        if (op.name != result.name) continue;
        matches_.push_back({op.start, op.end, track.StartOf(op, true), track.EndOf(op, true),
                            track.rank, op.name, op.step});
      }
    }
  });
  std::sort(matches_.begin(), matches_.end(),
            [](const Match& a, const Match& b) { return MatchKey(a) < MatchKey(b); });
}

const std::vector<SearchModel::Match>& SearchModel::matches() {
  if (!matches_valid_) CollectMatches();
  return matches_;
}

std::optional<SearchModel::Match> SearchModel::Step(int direction) {
  Refresh();
  const std::vector<Match>& all = matches();
  if (all.empty() || direction == 0) return std::nullopt;
  size_t index = direction > 0 ? 0 : all.size() - 1;
  if (cursor_.has_value()) {
    // From the last match jumped to, by time: it survives a re-run that
    // added or dropped matches before it.
    auto at = [&](const Match& m) { return std::make_pair(m.start_ns, m.rank); };
    if (direction > 0) {
      auto it = std::upper_bound(all.begin(), all.end(), *cursor_,
                                 [&](const auto& key, const Match& m) { return key < at(m); });
      index = it == all.end() ? 0 : static_cast<size_t>(it - all.begin());
    } else {
      auto it = std::lower_bound(all.begin(), all.end(), *cursor_,
                                 [&](const Match& m, const auto& key) { return at(m) < key; });
      index = it == all.begin() ? all.size() - 1 : static_cast<size_t>(it - all.begin()) - 1;
    }
  }
  current_ = index;
  cursor_ = std::make_pair(all[index].start_ns, all[index].rank);
  ++version_;
  return all[index];
}

bool SearchModel::Jump(int direction, SelectionState* selection, MareyModel* marey) {
  const std::optional<Match> match = Step(direction);
  if (!match.has_value()) return false;
  switch (results_[*active_].kind) {
    case Query::Kind::kStep:
      selection->Pin(match->step);
      marey->ClearFocus();
      marey->ShowAroundStep(match->step);
      break;
    case Query::Kind::kRank:
      selection->SelectDevices({match->rank});
      marey->FocusOn({match->rank}, 0, std::nullopt, std::nullopt);
      break;
    case Query::Kind::kOperator: {
      selection->Pin(match->step);
      selection->SelectDevices({match->rank});
      const bool raw = marey->raw_timestamps();
      marey->FocusOn({match->rank}, match->name, match->step,
                     std::make_pair(raw ? match->raw_start_ns : match->start_ns,
                                    raw ? match->raw_end_ns : match->end_ns));
      break;
    }
    case Query::Kind::kNone:
      return false;
  }
  return true;
}

}  // namespace trainscope::viewer
