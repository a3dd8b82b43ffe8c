// A temporary folder removed with its contents at scope exit (the security tests'
// certificates and keys live there, never in the tree).
#ifndef TRAINSCOPE_TESTS_SECURITY_TEMP_DIR_H_
#define TRAINSCOPE_TESTS_SECURITY_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace trainscope::security {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ts-security-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace trainscope::security

#endif  // TRAINSCOPE_TESTS_SECURITY_TEMP_DIR_H_
