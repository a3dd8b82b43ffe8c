#include "trainscope/security/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainscope::security {
namespace {

constexpr char kZ85Alphabet[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

bool IsZ85Key(absl::string_view text) {
  if (text.size() != kCurveKeyZ85Length) return false;
  for (char c : text) {
    if (std::strchr(kZ85Alphabet, c) == nullptr || c == '\0') return false;
  }
  return true;
}

// The key lines of a key file: trimmed, empty lines and "# " comments dropped.
absl::StatusOr<std::vector<std::string>> ReadKeyLines(const std::string& path,
                                                      absl::string_view label,
                                                      absl::string_view expected) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": cannot read '", path,
                                                   "': ", std::strerror(errno), "; expected ",
                                                   expected));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  std::vector<std::string> keys;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(contents.str(), '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "# ") || line == "#") continue;
    if (!IsZ85Key(line)) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, ": line ", line_number, " of '", path, "' is not a CURVE key; expected ",
          expected, " (40 Z85 characters, as trainscope-curve-keygen writes)"));
    }
    keys.emplace_back(line);
  }
  if (keys.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": '", path, "' holds no key; expected ", expected));
  }
  return keys;
}

absl::Status WriteNewFile(const std::string& path, const std::string& contents, mode_t mode) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create '", tmp, "': ", std::strerror(errno)));
  }
  const bool written = ::write(fd, contents.data(), contents.size()) ==
                           static_cast<ssize_t>(contents.size()) &&
                       ::fsync(fd) == 0;
  const std::string error = std::strerror(errno);
  ::close(fd);
  // link() fails when `path` exists: an existing key is never replaced.
  if (!written || ::link(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = written ? std::strerror(errno) : error;
    ::unlink(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "': ", why));
  }
  ::unlink(tmp.c_str());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair() {
  char public_key[kCurveKeyZ85Length + 1];
  char secret_key[kCurveKeyZ85Length + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return absl::UnimplementedError(absl::StrCat(
        "cannot generate a CURVE key pair: ", zmq_strerror(zmq_errno()),
        " (libzmq built without CURVE support?)"));
  }
  return CurveKeyPair{public_key, secret_key};
}

absl::StatusOr<CurveKeyPair> LoadCurveSecretKeyFile(const std::string& path,
                                                    absl::string_view label) {
  constexpr absl::string_view kExpected = "a CURVE secret key file";
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": empty path; expected ", kExpected));
  }
  absl::StatusOr<std::vector<std::string>> keys = ReadKeyLines(path, label, kExpected);
  if (!keys.ok()) return keys.status();
  if (keys->size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": '", path, "' holds ", keys->size(),
                                                   " keys; expected ", kExpected,
                                                   " with exactly one"));
  }
  char public_key[kCurveKeyZ85Length + 1];
  if (zmq_curve_public(public_key, keys->front().c_str()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": cannot derive the public key of '",
                                                   path, "': ", zmq_strerror(zmq_errno())));
  }
  return CurveKeyPair{public_key, keys->front()};
}

absl::StatusOr<std::string> ParseCurvePublicKey(const std::string& value,
                                                absl::string_view label) {
  if (IsZ85Key(value)) return value;
  if (value.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": empty; expected a CURVE public key (40 Z85 characters) or a "
                            "file holding one"));
  }
  absl::StatusOr<std::vector<std::string>> keys =
      ReadKeyLines(value, label, "a CURVE public key (40 Z85 characters) or a file holding one");
  if (!keys.ok()) return keys.status();
  if (keys->size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": '", value, "' holds ", keys->size(),
                                                   " keys; expected one public key"));
  }
  return keys->front();
}

absl::StatusOr<std::set<std::string>> LoadCurvePublicKeyList(const std::string& path,
                                                            absl::string_view label) {
  absl::StatusOr<std::vector<std::string>> keys =
      ReadKeyLines(path, label, "the CURVE public keys of the clients allowed, one per line");
  if (!keys.ok()) return keys.status();
  return std::set<std::string>(keys->begin(), keys->end());
}

absl::Status WriteCurveKeyPair(const CurveKeyPair& pair, const std::string& prefix) {
  if (absl::Status s = WriteNewFile(
          prefix + ".key",
          absl::StrCat("# trainscope CURVE secret key: keep it private. Public key: ",
                       pair.public_key, "\n", pair.secret_key, "\n"),
          0600);
      !s.ok()) {
    return s;
  }
  return WriteNewFile(prefix + ".pub",
                      absl::StrCat("# trainscope CURVE public key\n", pair.public_key, "\n"),
                      0644);
}

std::string CurveKeyToZ85(absl::string_view binary_key) {
  if (binary_key.size() != kCurveKeyBinaryLength) return "";
  char text[kCurveKeyZ85Length + 1];
  zmq_z85_encode(text, reinterpret_cast<const uint8_t*>(binary_key.data()), binary_key.size());
  return text;
}

}  // namespace trainscope::security
