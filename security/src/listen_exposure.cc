#include "trainscope/security/listen_exposure.h"

#include <arpa/inet.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace trainscope::security {
namespace {

// "host:port" -> "host"; "[::1]:7070" -> "::1".
absl::string_view HostPart(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    return close == absl::string_view::npos ? address.substr(1) : address.substr(1, close - 1);
  }
  const size_t colon = address.rfind(':');
  return colon == absl::string_view::npos ? address : address.substr(0, colon);
}

}  // namespace

bool IsLoopbackHost(absl::string_view host) {
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  const std::string lower = absl::AsciiStrToLower(host);
  if (lower == "localhost" || lower == "lo") return true;
  in_addr v4;
  if (inet_pton(AF_INET, lower.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, lower.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.x.x, an IPv4 loopback address in IPv6 form.
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

bool IsLoopbackGrpcAddress(absl::string_view address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  return IsLoopbackHost(HostPart(address));
}

bool IsLoopbackZmqEndpoint(absl::string_view endpoint) {
  if (absl::StartsWith(endpoint, "ipc://") || absl::StartsWith(endpoint, "inproc://")) return true;
  const size_t scheme = endpoint.find("://");
  if (scheme == absl::string_view::npos) return false;
  absl::string_view rest = endpoint.substr(scheme + 3);
  // tcp://INTERFACE;HOST:PORT (a source address for connect) keeps the bound part.
  if (const size_t semicolon = rest.find(';'); semicolon != absl::string_view::npos) {
    rest = rest.substr(0, semicolon);
  }
  return IsLoopbackHost(HostPart(rest));
}

}  // namespace trainscope::security
