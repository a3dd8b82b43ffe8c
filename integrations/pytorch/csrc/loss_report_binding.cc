#include "loss_report_binding.h"

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace trainscope::pytorch {
namespace {

template <typename T>
T Get(const py::dict& d, const char* key) {
  if (!d.contains(key)) {
    throw py::value_error(std::string("trainscope: loss report lacks the field '") + key + "'");
  }
  return d[key].cast<T>();
}

}  // namespace

const char* LossReportView::Keep(std::string text) {
  strings_.push_back(std::move(text));
  return strings_.back().c_str();
}

// d["input"], if there: (height, width, channels, pixels).
const trainscope_thumbnail* LossReportView::ThumbnailOf(const py::dict& d) {
  if (!d.contains("input") || d["input"].is_none()) return nullptr;
  const auto [h, w, c, pixels] =
      d["input"].cast<std::tuple<uint32_t, uint32_t, uint32_t, py::bytes>>();
  const std::string& kept = strings_.emplace_back(pixels);
  thumbnails_.push_back(trainscope_thumbnail{h, w, c, kept.data(), kept.size()});
  return &thumbnails_.back();
}

void LossReportView::FillSnapshot(const py::dict& d, trainscope_item_snapshot* s) {
  s->item = Get<uint64_t>(d, "item");
  s->epoch = Get<uint32_t>(d, "epoch");
  s->iteration = Get<uint64_t>(d, "iteration");
  s->label = Get<int32_t>(d, "label");
  s->prediction = Get<int32_t>(d, "prediction");
  s->contribution = Get<double>(d, "contribution");
  s->input = ThumbnailOf(d);
  // (layer, height, width, contribution half bytes, reduction half bytes)
  using Map = std::tuple<std::string, uint32_t, uint32_t, py::bytes, py::bytes>;
  std::vector<trainscope_layer_map>& maps = maps_.emplace_back();
  for (const Map& map : Get<std::vector<Map>>(d, "maps")) {
    trainscope_layer_map m{};
    m.layer = Keep(std::get<0>(map));
    m.height = std::get<1>(map);
    m.width = std::get<2>(map);
    const std::string& contribution = strings_.emplace_back(std::get<3>(map));
    m.contribution = contribution.data();
    m.contribution_length = contribution.size();
    const std::string& reduction = strings_.emplace_back(std::get<4>(map));
    m.reduction = reduction.data();
    m.reduction_length = reduction.size();
    maps.push_back(m);
  }
  s->maps = maps.data();
  s->map_count = maps.size();
}

LossReportView::LossReportView(const py::dict& d) {
  report_.epoch = Get<uint32_t>(d, "epoch");
  report_.iteration = Get<uint64_t>(d, "iteration");
  report_.epoch_complete = Get<bool>(d, "epoch_complete") ? 1 : 0;
  report_.selection_layer = Keep(Get<std::string>(d, "selection_layer"));
  for (const std::string& layer : Get<std::vector<std::string>>(d, "monitored_layers")) {
    monitored_.push_back(Keep(layer));
  }
  report_.monitored_layers = monitored_.data();
  report_.monitored_layer_count = monitored_.size();
  report_.top_n = Get<uint32_t>(d, "top_n");
  for (const py::handle entry : Get<py::list>(d, "top")) {
    const py::dict e = py::reinterpret_borrow<py::dict>(entry);
    trainscope_item_score score{};
    score.item = Get<uint64_t>(e, "item");
    score.contribution = Get<double>(e, "contribution");
    score.label = Get<int32_t>(e, "label");
    score.prediction = Get<int32_t>(e, "prediction");
    score.input = ThumbnailOf(e);
    top_.push_back(score);
  }
  report_.top = top_.data();
  report_.top_count = top_.size();
  const py::list snapshots = Get<py::list>(d, "snapshots");
  snapshots_.resize(snapshots.size());
  size_t i = 0;
  for (const py::handle entry : snapshots) {
    FillSnapshot(py::reinterpret_borrow<py::dict>(entry), &snapshots_[i++]);
  }
  report_.snapshots = snapshots_.data();
  report_.snapshot_count = snapshots_.size();
}

}  // namespace trainscope::pytorch
