// The category an exported operator carries (Chrome "cat", Perfetto
// categories): its class's name. Private to the export library.
#ifndef TRAINSCOPE_COLLECTOR_SRC_EXPORT_OPERATOR_CATEGORY_H_
#define TRAINSCOPE_COLLECTOR_SRC_EXPORT_OPERATOR_CATEGORY_H_

#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

inline const char* OperatorCategory(trainscope::v1::OperatorClass c) {
  switch (c) {
    case trainscope::v1::OPERATOR_CLASS_COLLECTIVE:
      return "collective";
    case trainscope::v1::OPERATOR_CLASS_SEND:
      return "send";
    case trainscope::v1::OPERATOR_CLASS_RECV:
      return "recv";
    default:
      return "compute";
  }
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_EXPORT_OPERATOR_CATEGORY_H_
