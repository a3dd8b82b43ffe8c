// absl::Status <-> grpc::Status (the codes are the same numbers).
#ifndef TRAINSCOPE_COLLECTOR_SRC_ADAPTERS_GRPC_STATUS_H_
#define TRAINSCOPE_COLLECTOR_SRC_ADAPTERS_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace trainscope::collector {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_ADAPTERS_GRPC_STATUS_H_
