#include "certs.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace mka::bench {
namespace {

template <auto fn>
struct Deleter {
  template <typename T>
  void operator()(T* p) const { fn(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509_free>>;

[[noreturn]] void fail(const std::string& what) {
  std::string detail;
  unsigned long code;
  while ((code = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    detail += std::string(" ") + buf;
  }
  throw std::runtime_error("test PKI: " + what + ":" + detail);
}

KeyPtr newKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) fail("EVP_EC_gen");
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) fail(std::string("extension ") + OBJ_nid2sn(nid));
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

CertPtr newCert(const char* commonName, EVP_PKEY* subjectKey, X509* issuer, EVP_PKEY* issuerKey, long serial,
                bool ca) {
  CertPtr cert(X509_new());
  if (!cert) fail("X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600);
  X509_set_pubkey(cert.get(), subjectKey);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(commonName), -1, -1,
                             0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (ca) {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    addExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    addExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    addExtension(cert.get(), signer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    addExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  }
  if (X509_sign(cert.get(), issuerKey, EVP_sha256()) == 0) fail("X509_sign");
  return cert;
}

void writePem(const std::filesystem::path& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("test PKI: cannot write " + path.string());
  const bool ok = cert ? PEM_write_X509(f, cert) == 1
                       : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  if (!ok) fail("writing " + path.string());
}

}  // namespace

TestPki makeTestPki() {
  std::string pattern = (std::filesystem::temp_directory_path() / "webhook-bench-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("test PKI: mkdtemp failed for " + pattern);
  TestPki pki;
  pki.dir = pattern;
  pki.caCert = pki.dir / "ca.crt";
  pki.tlsCert = pki.dir / "tls.crt";
  pki.tlsKey = pki.dir / "tls.key";
  pki.keyType = "ECDSA P-256";

  KeyPtr caKey = newKey();
  CertPtr ca = newCert("webhook-bench CA", caKey.get(), nullptr, caKey.get(), 1, true);
  KeyPtr leafKey = newKey();
  CertPtr leaf = newCert("localhost", leafKey.get(), ca.get(), caKey.get(), 2, false);

  writePem(pki.caCert, ca.get(), nullptr);
  writePem(pki.tlsCert, leaf.get(), nullptr);
  writePem(pki.tlsKey, nullptr, leafKey.get());
  return pki;
}

}  // namespace mka::bench
