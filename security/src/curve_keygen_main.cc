// trainscope-curve-keygen PREFIX: a fresh CURVE key pair for the collector's
// ZeroMQ ports (--curve-secret-key) or for a client (--curve-key), written to
// PREFIX.key (secret, mode 0600) and PREFIX.pub (give it to the other side).
#include <cstdio>
#include <cstring>
#include <string>

#include "trainscope/security/curve_keys.h"

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || argv[1][0] == '\0') {
    std::fprintf(stderr,
                 "usage: trainscope-curve-keygen PREFIX\n"
                 "writes PREFIX.key (the CURVE secret key, mode 0600) and PREFIX.pub (its public "
                 "key); existing files are never replaced\n");
    return argc == 2 && std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  auto pair = trainscope::security::GenerateCurveKeyPair();
  if (!pair.ok()) {
    std::fprintf(stderr, "trainscope-curve-keygen: %s\n", std::string(pair.status().message()).c_str());
    return 1;
  }
  if (auto s = trainscope::security::WriteCurveKeyPair(*pair, argv[1]); !s.ok()) {
    std::fprintf(stderr, "trainscope-curve-keygen: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("%s\n", pair->public_key.c_str());
  return 0;
}
