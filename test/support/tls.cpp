#include "support/tls.h"

#include "mka/net/openssl.h"

#include <netdb.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <stdexcept>

#include "support/temp_dir.h"

namespace mka::test {
namespace {

template <typename T>
using Ptr = net::OpensslPtr<T>;

std::string opensslError(const std::string& what) {
  const std::string errors = net::opensslErrors();
  return errors.empty() ? what : what + ": " + errors;
}

void check(int ok, const std::string& what) {
  if (ok != 1) throw std::runtime_error(opensslError(what));
}

}  // namespace

std::string encryptKeyPem(const std::string& keyPem, const std::string& password) {
  Ptr<BIO> in(BIO_new_mem_buf(keyPem.data(), static_cast<int>(keyPem.size())));
  Ptr<EVP_PKEY> key(PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr));
  if (!key) throw std::runtime_error(opensslError("PEM_read_bio_PrivateKey"));
  Ptr<BIO> out(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PKCS8PrivateKey(out.get(), key.get(), EVP_aes_256_cbc(), nullptr, 0, nullptr,
                                      const_cast<char*>(password.c_str())),
        "PEM_write_bio_PKCS8PrivateKey");
  char* data = nullptr;
  const long len = BIO_get_mem_data(out.get(), &data);
  return {data, static_cast<std::size_t>(len)};
}

ServingFiles writeServingFiles(const std::filesystem::path& dir, const TestCa& ca, const CertificateAndKey& leaf) {
  std::filesystem::create_directories(dir);
  ServingFiles files{dir / "ca.crt", dir / "tls.crt", dir / "tls.key"};
  writeFile(files.ca, ca.certPem());
  writeFile(files.cert, leaf.certPem);
  writeFile(files.key, leaf.keyPem);
  return files;
}

TlsProbeResult probeTls(const std::string& host, int port, const TlsProbeOptions& options) {
  TlsProbeResult result;
  ERR_clear_error();

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addrs) != 0 || addrs == nullptr) {
    result.error = "cannot resolve " + host;
    return result;
  }
  const int fd = ::socket(addrs->ai_family, addrs->ai_socktype | SOCK_CLOEXEC, addrs->ai_protocol);
  const int connected = fd >= 0 ? ::connect(fd, addrs->ai_addr, addrs->ai_addrlen) : -1;
  ::freeaddrinfo(addrs);
  if (connected != 0) {
    if (fd >= 0) ::close(fd);
    result.error = "cannot connect to " + host + ":" + std::to_string(port);
    return result;
  }
  timeval tv{10, 0};  // a hung server fails the test instead of hanging it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  Ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()));
  if (options.minVersion != 0) SSL_CTX_set_min_proto_version(ctx.get(), options.minVersion);
  if (options.maxVersion != 0) SSL_CTX_set_max_proto_version(ctx.get(), options.maxVersion);
  // OpenSSL 3 refuses TLS < 1.2 itself at the default security level; level 0 makes the
  // client really offer what the test asks, so any refusal comes from the server.
  if (options.maxVersion != 0 && options.maxVersion < TLS1_2_VERSION) {
    SSL_CTX_set_security_level(ctx.get(), 0);
    SSL_CTX_set_cipher_list(ctx.get(), "DEFAULT:@SECLEVEL=0");
  }
  if (!options.caPem.empty()) {
    Ptr<BIO> bio(BIO_new_mem_buf(options.caPem.data(), static_cast<int>(options.caPem.size())));
    X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (ca != nullptr) {
      X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), ca);
      X509_free(ca);
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  Ptr<SSL> ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), fd);
  if (!options.caPem.empty() && !options.verifyHost.empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
    if (X509_VERIFY_PARAM_set1_ip_asc(param, options.verifyHost.c_str()) != 1) {
      X509_VERIFY_PARAM_set1_host(param, options.verifyHost.c_str(), 0);
    }
  }
  if (!options.alpn.empty()) {
    std::string wire;
    for (const auto& proto : options.alpn) {
      wire.push_back(static_cast<char>(proto.size()));
      wire += proto;
    }
    SSL_set_alpn_protos(ssl.get(), reinterpret_cast<const unsigned char*>(wire.data()),
                        static_cast<unsigned>(wire.size()));
  }
  if (SSL_connect(ssl.get()) == 1) {
    result.ok = true;
    result.version = SSL_get_version(ssl.get());
    const unsigned char* proto = nullptr;
    unsigned protoLen = 0;
    SSL_get0_alpn_selected(ssl.get(), &proto, &protoLen);
    result.alpn.assign(reinterpret_cast<const char*>(proto), protoLen);
    if (Ptr<X509> peer{SSL_get1_peer_certificate(ssl.get())}) {
      char cn[256] = {};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer.get()), NID_commonName, cn, sizeof cn);
      result.peerCommonName = cn;
    }
    SSL_shutdown(ssl.get());
  } else {
    const long verify = SSL_get_verify_result(ssl.get());
    result.error = opensslError("handshake failed");
    if (verify != X509_V_OK) result.error += std::string(": ") + X509_verify_cert_error_string(verify);
  }
  ssl.reset();
  ::close(fd);
  return result;
}

}  // namespace mka::test
