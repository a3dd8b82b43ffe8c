// The viewer's search (issue 23.5): one line of text finds operators by
// name (a case-insensitive substring), a step ("step 120", "#120" or a bare
// number) or a rank ("rank 3", "r3"), lists what it found with counts
// ("aten::conv2d — 4,812 matches on 4 ranks") and steps through the matches
// of the chosen result in time order: each jump pins the match's step and
// device in the SelectionState and zooms the Marey graph to it, outlined.
//
// It reads what the Marey graph holds (MareyTrackStore's tracks, steps and
// devices, names from the NameTable), so it finds exactly what can be shown;
// operators evicted past --max-operators are gone from both. A search scans
// the tracks once when the query is set, and again on a jump only when the
// store changed since (a live job): nothing is scanned per frame.
//
// Usage:
//   SearchModel search(&names, &marey.store());
//   search.SetQuery("conv");                 // results(): one per matching name
//   search.SetActive(1);                     // the second result (a click)
//   search.Jump(+1, &state.selection, &state.marey);  // Enter / F3; -1: Shift+F3
//   SearchModel::ResultText(search.results()[0]);   // "aten::conv2d — 4,812 matches on 4 ranks"
//
// Threading: not thread-safe; the UI thread owns it, like the models it reads.
#ifndef TRAINSCOPE_VIEWER_SEARCH_MODEL_H_
#define TRAINSCOPE_VIEWER_SEARCH_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "trainscope/viewer/marey_model.h"
#include "trainscope/viewer/marey_track_store.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/selection_state.h"

namespace trainscope::viewer {

class SearchModel {
 public:
  // What a line of text asks for.
  struct Query {
    enum class Kind { kNone, kOperator, kStep, kRank };
    Kind kind = Kind::kNone;
    std::string text;     // kOperator: the substring, lower case
    uint64_t number = 0;  // kStep, kRank
  };
  // One line of the result list: an operator name with its matches, or the
  // step or rank asked for (found or not).
  struct Result {
    Query::Kind kind = Query::Kind::kNone;
    std::string label;        // the operator's name; "step 120"; "rank 3"
    uint32_t name = 0;        // kOperator: its NameTable id
    uint64_t number = 0;      // kStep, kRank
    uint64_t matches = 0;     // operators (kOperator, kRank); devices in the step (kStep)
    uint32_t ranks = 0;       // kOperator: devices that ran it
    bool found = false;       // kStep, kRank: the graph holds it
    int64_t duration_ns = 0;  // kStep: its length
    std::string host;         // kRank
  };
  // One operator a jump can land on, on both clocks.
  struct Match {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    int64_t raw_start_ns = 0;
    int64_t raw_end_ns = 0;
    uint32_t rank = 0;
    uint32_t name = 0;
    uint64_t step = 0;
  };
  // Results past this many names are counted, not listed.
  static constexpr size_t kMaxResults = 200;

  SearchModel(const NameTable* names, const MareyTrackStore* store);

  // "step 120", "#120", "120" -> kStep; "rank 3", "r3" -> kRank; any other
  // non-blank text -> kOperator (trimmed, lower case); blank -> kNone.
  static Query Parse(std::string_view text);
  // "aten::conv2d — 4,812 matches on 4 ranks", "step 120 — 4 ranks, 88.1 ms",
  // "rank 3 (host-a) — 1,204 operators", "no step 120".
  static std::string ResultText(const Result& result);

  // Runs the search; the first result becomes the active one and the
  // cursor goes before its first match.
  void SetQuery(std::string_view text);
  // Re-runs the query when the store changed since it ran, keeping the
  // active name and the cursor; a no-op otherwise.
  void Refresh();
  void Clear() { SetQuery(""); }

  const Query& query() const { return query_; }
  // The text as set (the field shows it).
  const std::string& text() const { return text_; }
  const std::vector<Result>& results() const { return results_; }
  // Names that matched beyond kMaxResults (not listed).
  size_t more_results() const { return more_results_; }
  // The one line under the field: "3 names, 9,624 matches", "match 12 of
  // 4,812 (step 120, rank 3)", "no operator, step or rank matches "foo"".
  std::string Summary() const;

  // The result F3 steps through; out of range is ignored.
  void SetActive(size_t index);
  std::optional<size_t> active() const { return active_; }

  // Moves to the next (direction > 0) or previous (< 0) match of the active
  // result, wrapping around; nullopt when it has none. Does not touch the
  // views: Jump does.
  std::optional<Match> Step(int direction);
  // Step, then shows the match: pins its step and selects its device in
  // `selection`, and zooms `marey` to it with the operator outlined (a step:
  // the steps around it; a rank: its rows highlighted). Returns whether
  // there was something to show.
  bool Jump(int direction, SelectionState* selection, MareyModel* marey);

  // The matches of the active result, in time order (collected on demand).
  const std::vector<Match>& matches();
  // The index of the last match jumped to in matches(); nullopt before.
  std::optional<size_t> current() const { return current_; }
  // Changes whenever the results, the active result or the cursor change.
  uint64_t version() const { return version_; }

 private:
  void Run();
  // What the store holds now (operators, tracks, steps): a change re-runs.
  std::tuple<uint64_t, uint64_t, size_t> StoreState() const;
  void SearchOperators();
  void SearchStep();
  void SearchRank();
  void CollectMatches();
  // Lower-cased names, extended as the table grows (names are never removed).
  void SyncLowerNames();

  const NameTable* names_;
  const MareyTrackStore* store_;
  std::string text_;
  Query query_;
  std::vector<Result> results_;
  size_t more_results_ = 0;
  uint64_t total_matches_ = 0;  // over every matching name, listed or not
  std::optional<size_t> active_;
  std::vector<Match> matches_;
  bool matches_valid_ = false;
  std::optional<size_t> current_;
  // The last match jumped to, by (start, rank): survives a re-run.
  std::optional<std::pair<int64_t, uint32_t>> cursor_;
  // What the store held when the query ran (operators, tracks, steps).
  std::tuple<uint64_t, uint64_t, size_t> store_state_{};
  std::vector<std::string> lower_names_;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_SEARCH_MODEL_H_
