#include "loss_report_binding.h"

#include <pybind11/stl.h>

#include <optional>
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

// d["input"], if there: (height, width, channels, pixels).
std::optional<v1::Thumbnail> ThumbnailOf(const py::dict& d) {
  if (!d.contains("input") || d["input"].is_none()) return std::nullopt;
  const auto [h, w, c, pixels] =
      d["input"].cast<std::tuple<uint32_t, uint32_t, uint32_t, py::bytes>>();
  v1::Thumbnail t;
  t.set_height(h);
  t.set_width(w);
  t.set_channels(c);
  t.set_pixels(std::string(pixels));
  return t;
}

void FillSnapshot(const py::dict& d, v1::ItemSnapshot* s) {
  s->set_item(Get<uint64_t>(d, "item"));
  s->set_epoch(Get<uint32_t>(d, "epoch"));
  s->set_iteration(Get<uint64_t>(d, "iteration"));
  s->set_label(Get<int32_t>(d, "label"));
  s->set_prediction(Get<int32_t>(d, "prediction"));
  s->set_contribution(Get<double>(d, "contribution"));
  if (std::optional<v1::Thumbnail> t = ThumbnailOf(d)) *s->mutable_input() = std::move(*t);
  // (layer, height, width, contribution half bytes, reduction half bytes)
  using Map = std::tuple<std::string, uint32_t, uint32_t, py::bytes, py::bytes>;
  for (const Map& map : Get<std::vector<Map>>(d, "maps")) {
    v1::LayerMap* m = s->add_maps();
    m->set_layer(std::get<0>(map));
    m->set_height(std::get<1>(map));
    m->set_width(std::get<2>(map));
    m->set_contribution(std::string(std::get<3>(map)));
    m->set_reduction(std::string(std::get<4>(map)));
  }
}

}  // namespace

v1::LossReport LossReportFromDict(const py::dict& d) {
  v1::LossReport report;
  report.set_epoch(Get<uint32_t>(d, "epoch"));
  report.set_iteration(Get<uint64_t>(d, "iteration"));
  report.set_epoch_complete(Get<bool>(d, "epoch_complete"));
  report.set_selection_layer(Get<std::string>(d, "selection_layer"));
  for (const std::string& layer : Get<std::vector<std::string>>(d, "monitored_layers")) {
    report.add_monitored_layers(layer);
  }
  report.set_top_n(Get<uint32_t>(d, "top_n"));
  for (const py::handle entry : Get<py::list>(d, "top")) {
    const py::dict e = py::reinterpret_borrow<py::dict>(entry);
    v1::ItemScore* score = report.add_top();
    score->set_item(Get<uint64_t>(e, "item"));
    score->set_contribution(Get<double>(e, "contribution"));
    score->set_label(Get<int32_t>(e, "label"));
    score->set_prediction(Get<int32_t>(e, "prediction"));
    if (std::optional<v1::Thumbnail> t = ThumbnailOf(e)) *score->mutable_input() = std::move(*t);
  }
  for (const py::handle entry : Get<py::list>(d, "snapshots")) {
    FillSnapshot(py::reinterpret_borrow<py::dict>(entry), report.add_snapshots());
  }
  return report;
}

}  // namespace trainscope::pytorch
