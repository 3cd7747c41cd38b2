#pragma once
// Small RAII and error helpers for the OpenSSL C API, shared by the TLS server, the certificate
// reloader, the in-process CA and the test clients.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace mka::net {

struct OpensslFree {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
  void operator()(SSL* p) const { SSL_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
};
template <typename T>
using OpensslPtr = std::unique_ptr<T, OpensslFree>;

// Drains this thread's OpenSSL error queue into one line ("error:...; error:..."), so that a
// stale error never leaks into the next operation's report. Empty when the queue was empty.
std::string opensslErrors();

// After a TLS server's handshake with `peer` failed: logs it and empties the error queue. A
// client that just closed the connection (a TCP probe, a port scan, a client giving up) is worth
// a debug record; OpenSSL 3 queues "unexpected eof while reading" for it, or nothing. One that
// sent what TLS refuses gets an info record with OpenSSL's reasons.
void logFailedHandshake(std::string_view server, std::string_view peer);

// Every certificate of a PEM bundle (a CA bundle, a caBundle, a kubeconfig's
// certificate-authority-data), in order; empty when there is none. Leaves no error queued.
std::vector<OpensslPtr<X509>> readPemCertificates(std::string_view pem);
// A fresh verification store holding those certificates; null when the bundle has none.
OpensslPtr<X509_STORE> certificateStore(std::string_view pem);

}  // namespace mka::net
