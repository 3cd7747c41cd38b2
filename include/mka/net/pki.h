#pragma once
// An in-process certificate authority: a CA and the serving or client certificates it signs
// (ECDSA P-256, SHA-256). The sandbox gives each emulated cluster its own CA; tests and
// benchmarks make throwaway certificates without files or openssl(1).
//
// Threads: immutable after construction; issue() may be called from any thread.

#include <chrono>
#include <string>
#include <vector>

typedef struct evp_pkey_st EVP_PKEY;
typedef struct x509_st X509;

namespace mka::net {

struct CertificateAndKey {
  std::string certPem;  // the leaf, PEM
  std::string keyPem;   // its private key, PKCS#8 PEM
};

struct IssueOptions {
  std::string commonName = "localhost";         // for a client certificate: the Kubernetes user name
  std::vector<std::string> organizations = {};  // for a client certificate: the Kubernetes groups
  std::vector<std::string> dnsNames = {"localhost"};
  std::vector<std::string> ipAddresses = {"127.0.0.1"};
  std::chrono::seconds validity = std::chrono::hours{24};
  bool clientAuth = false;  // extendedKeyUsage clientAuth instead of serverAuth
};

class CertificateAuthority {
 public:
  // Throws mka::Error with OpenSSL's reason on failure.
  explicit CertificateAuthority(std::string commonName = "multikueue-adapter CA");
  ~CertificateAuthority();
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;

  const std::string& certPem() const { return certPem_; }
  CertificateAndKey issue(const IssueOptions& options = {}) const;

 private:
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  std::string certPem_;
};

// A fresh private key that belongs to no certificate.
std::string generateKeyPem();

}  // namespace mka::net
