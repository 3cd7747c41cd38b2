// In-process certificate authority (OpenSSL 3 C API). Written by hand because no Debian
// library wraps certificate issuance: the sandbox gives each emulated cluster its own CA,
// and tests and benchmarks make throwaway serving and client certificates.
#include "mka/net/pki.h"

#include "mka/net/openssl.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include "mka/common/errors.h"

namespace mka::net {
namespace {

template <typename T>
using Ptr = OpensslPtr<T>;

std::string opensslError(const std::string& what) {
  const std::string errors = opensslErrors();
  return errors.empty() ? what : what + ": " + errors;
}

void check(int ok, const std::string& what) {
  if (ok != 1) throw Error(opensslError(what));
}

EVP_PKEY* newKey() {
  EVP_PKEY* key = EVP_EC_gen("P-256");  // fast, and every TLS version we test supports ECDSA
  if (key == nullptr) throw Error(opensslError("EVP_EC_gen"));
  return key;
}

std::string toPem(X509* cert) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_X509(bio.get(), cert), "PEM_write_bio_X509");
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(len)};
}

std::string toPem(EVP_PKEY* key) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(len)};
}

void addExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) throw Error(opensslError("extension " + value));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  check(ok, "X509_add_ext");
}

// Everything but the extensions and the signature.
Ptr<X509> newCertificate(EVP_PKEY* key, const std::string& commonName, X509_NAME* issuerName,
                         std::chrono::seconds validity) {
  Ptr<X509> cert(X509_new());
  check(X509_set_version(cert.get(), 2), "X509_set_version");
  Ptr<BIGNUM> serial(BN_new());
  check(BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY), "BN_rand");
  BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity.count()));
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(commonName.c_str()), -1, -1, 0),
        "X509_NAME_add_entry_by_txt");
  check(X509_set_issuer_name(cert.get(), issuerName != nullptr ? issuerName : name), "X509_set_issuer_name");
  check(X509_set_pubkey(cert.get(), key), "X509_set_pubkey");
  return cert;
}

}  // namespace

CertificateAuthority::CertificateAuthority(std::string commonName) {
  key_ = newKey();
  Ptr<X509> cert = newCertificate(key_, commonName, nullptr, std::chrono::hours{24 * 30});
  addExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  addExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  addExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  if (X509_sign(cert.get(), key_, EVP_sha256()) <= 0) throw Error(opensslError("X509_sign"));
  cert_ = cert.release();
  certPem_ = toPem(cert_);
}

CertificateAuthority::~CertificateAuthority() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

CertificateAndKey CertificateAuthority::issue(const IssueOptions& options) const {
  Ptr<EVP_PKEY> key(newKey());
  Ptr<X509> cert = newCertificate(key.get(), options.commonName, X509_get_subject_name(cert_), options.validity);
  for (const auto& organization : options.organizations) {
    check(X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "O", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>(organization.c_str()), -1, -1, 0),
          "X509_NAME_add_entry_by_txt");
  }
  addExtension(cert.get(), cert_, NID_basic_constraints, "critical,CA:FALSE");
  addExtension(cert.get(), cert_, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  addExtension(cert.get(), cert_, NID_ext_key_usage, options.clientAuth ? "clientAuth" : "serverAuth");
  addExtension(cert.get(), cert_, NID_subject_key_identifier, "hash");
  addExtension(cert.get(), cert_, NID_authority_key_identifier, "keyid:always");
  std::string sans;
  for (const auto& dns : options.dnsNames) sans += (sans.empty() ? "" : ",") + ("DNS:" + dns);
  for (const auto& ip : options.ipAddresses) sans += (sans.empty() ? "" : ",") + ("IP:" + ip);
  if (!sans.empty()) addExtension(cert.get(), cert_, NID_subject_alt_name, sans);
  if (X509_sign(cert.get(), key_, EVP_sha256()) <= 0) throw Error(opensslError("X509_sign"));
  return {toPem(cert.get()), toPem(key.get())};
}

std::string generateKeyPem() {
  Ptr<EVP_PKEY> key(newKey());
  return toPem(key.get());
}

}  // namespace mka::net
