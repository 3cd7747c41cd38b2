#pragma once
// What the TLS servers' tests share: a serving certificate from one CA in a volume laid out as
// kubelet projects a Secret, watched by a started CertificateReloader that polls fast, a second
// CA to rotate to, both CAs' files for clients, and a rotation that waits until it is served.

#include <httplib.h>

#include <filesystem>
#include <memory>

#include "mka/net/certificate_reloader.h"
#include "support/secret_volume.h"
#include "support/temp_dir.h"
#include "support/tls.h"

namespace mka::test {

class ServingCertificates {
 public:
  ServingCertificates();
  ~ServingCertificates();
  ServingCertificates(const ServingCertificates&) = delete;
  ServingCertificates& operator=(const ServingCertificates&) = delete;

  // Publishes `leaf` the way kubelet updates a Secret volume; true once the reloader loaded it.
  [[nodiscard]] bool rotate(const CertificateAndKey& leaf);
  // A keep-alive client of 127.0.0.1:`port` that verifies the server against `caFile`.
  std::unique_ptr<httplib::SSLClient> client(int port, const std::filesystem::path& caFile) const;

  TempDir dir;
  SecretVolume volume{dir / "secret"};
  TestCa ca1{"ca-one"};
  TestCa ca2{"ca-two"};
  CertificateAndKey leaf1 = ca1.issue({.commonName = "serving-one"});
  std::filesystem::path ca1File = dir / "ca1.crt";
  std::filesystem::path ca2File = dir / "ca2.crt";
  std::shared_ptr<net::CertificateReloader> reloader;
};

}  // namespace mka::test
