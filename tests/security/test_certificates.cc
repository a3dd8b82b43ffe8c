#include "test_certificates.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace trainscope::security {
namespace {

// EC keys: fast to generate on a loaded CI machine (RSA-2048 takes seconds).
constexpr char kScript[] = R"(set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { key "$1.key"; openssl req -x509 -new -key "$1.key" -subj "/CN=$1" -days 2 -out "$1.pem"; }
leaf() {  # NAME CA
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
ca ca; ca other-ca
leaf server ca; leaf client ca; leaf stranger other-ca
# Expired (2020-01-01 to 2020-01-02), signed by ca: `openssl x509 -days` cannot
# go back in time, `openssl ca -startdate/-enddate` can.
key expired.key
openssl req -new -key expired.key -subj "/CN=expired" -out expired.csr
mkdir -p ca.d; : > ca.d/index.txt; echo 01 > ca.d/serial
printf '[ca]\ndefault_ca=d\n[d]\ndir=./ca.d\ndatabase=$dir/index.txt\nnew_certs_dir=$dir\nserial=$dir/serial\ndefault_md=sha256\npolicy=p\nx509_extensions=ext\n[p]\ncommonName=supplied\n[ext]\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n' > ca.cnf
openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20200102000000Z -notext 2>/dev/null
)";

}  // namespace

absl::StatusOr<TestCertificates> TestCertificates::Create(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  const std::filesystem::path script = dir / "make-certificates.sh";
  {
    std::ofstream out(script);
    out << kScript;
  }
  const std::string command = absl::StrCat("sh '", script.string(), "' '", dir.string(), "' >'",
                                           (dir / "openssl.log").string(), "' 2>&1");
  if (std::system(command.c_str()) != 0) {
    std::ifstream log(dir / "openssl.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return absl::InternalError(absl::StrCat("openssl failed (is it installed?): ", text));
  }
  return TestCertificates(dir);
}

absl::StatusOr<CurveKeyPair> TestCertificates::WriteCurvePair(const std::string& name) const {
  absl::StatusOr<CurveKeyPair> pair = GenerateCurveKeyPair();
  if (!pair.ok()) return pair.status();
  if (absl::Status s = WriteCurveKeyPair(*pair, (dir_ / name).string()); !s.ok()) return s;
  return pair;
}

}  // namespace trainscope::security
