#include "support/serving_certificates.h"

#include "support/eventually.h"

namespace mka::test {

using namespace std::chrono_literals;

ServingCertificates::ServingCertificates() {
  volume.update({{"tls.crt", leaf1.certPem}, {"tls.key", leaf1.keyPem}});
  writeFile(ca1File, ca1.certPem());
  writeFile(ca2File, ca2.certPem());
  FileWatcher::Options watch;
  watch.pollInterval = 50ms;
  watch.debounce = 10ms;
  reloader = std::make_shared<net::CertificateReloader>(volume / "tls.crt", volume / "tls.key", watch);
  reloader->start();
}

ServingCertificates::~ServingCertificates() { reloader->stop(); }

bool ServingCertificates::rotate(const CertificateAndKey& leaf) {
  const auto before = reloader->generation();
  volume.update({{"tls.crt", leaf.certPem}, {"tls.key", leaf.keyPem}});
  return eventually([&] { return reloader->generation() > before; });
}

std::unique_ptr<httplib::SSLClient> ServingCertificates::client(int port, const std::filesystem::path& caFile) const {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  c->set_ca_cert_path(caFile.string());
  c->enable_server_certificate_verification(true);
  c->set_keep_alive(true);
  c->set_read_timeout(10, 0);
  return c;
}

}  // namespace mka::test
