#include "mka/net/openssl.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include "log.h"

namespace mka::net {

std::string opensslErrors() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    if (!out.empty()) out += "; ";
    out += buffer;
  }
  return out;
}

void logFailedHandshake(std::string_view server, std::string_view peer) {
  const unsigned long first = ERR_peek_error();
  const bool closedByPeer =
      first == 0 || (ERR_GET_LIB(first) == ERR_LIB_SSL && ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING);
  const std::string reason = opensslErrors();
  if (closedByPeer) {
    log::debug(logger(), "TLS handshake aborted by peer", {{"server", server}, {"peer", peer}});
  } else {
    log::info(logger(), "TLS handshake failed", {{"server", server}, {"peer", peer}, {"error", reason}});
  }
}

std::vector<OpensslPtr<X509>> readPemCertificates(std::string_view pem) {
  std::vector<OpensslPtr<X509>> out;
  OpensslPtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (bio) {
    OpensslPtr<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    out.push_back(std::move(cert));
  }
  opensslErrors();  // the end of the bundle leaves a "no start line" error queued
  return out;
}

OpensslPtr<X509_STORE> certificateStore(std::string_view pem) {
  auto certificates = readPemCertificates(pem);
  if (certificates.empty()) return nullptr;
  OpensslPtr<X509_STORE> store(X509_STORE_new());
  for (const auto& cert : certificates) X509_STORE_add_cert(store.get(), cert.get());
  return store;
}

}  // namespace mka::net
