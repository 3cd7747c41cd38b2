#pragma once
// Certificates made in-process with the OpenSSL 3 C API, so TLS tests need no fixture files
// and no openssl binary: a CA, serving certificates it signs (SANs localhost and 127.0.0.1
// by default), and a raw TLS client that reports what a handshake negotiated.
//
// Threads: a TestCa is immutable after construction and may be shared.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

typedef struct evp_pkey_st EVP_PKEY;
typedef struct x509_st X509;

namespace mka::test {

struct CertificateAndKey {
  std::string certPem;  // the leaf, PEM
  std::string keyPem;   // its private key, PKCS#8 PEM
};

struct IssueOptions {
  std::string commonName = "localhost";
  std::vector<std::string> dnsNames = {"localhost"};
  std::vector<std::string> ipAddresses = {"127.0.0.1"};
  std::chrono::seconds validity = std::chrono::hours{24};
};

class TestCa {
 public:
  explicit TestCa(std::string commonName = "mka test CA");
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  const std::string& certPem() const { return certPem_; }
  CertificateAndKey issue(const IssueOptions& options = {}) const;

 private:
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  std::string certPem_;
};

// A fresh private key that belongs to no certificate (for "key does not match" tests).
std::string generateKeyPem();
// `keyPem` encrypted with `password` (AES-256-CBC, "-----BEGIN ENCRYPTED PRIVATE KEY-----").
std::string encryptKeyPem(const std::string& keyPem, const std::string& password);

// ca.crt, tls.crt and tls.key written into one directory.
struct ServingFiles {
  std::filesystem::path ca;
  std::filesystem::path cert;
  std::filesystem::path key;
};
ServingFiles writeServingFiles(const std::filesystem::path& dir, const TestCa& ca, const CertificateAndKey& leaf);

struct TlsProbeOptions {
  std::string caPem;                     // trust anchor; empty = do not verify the server
  std::string verifyHost = "127.0.0.1";  // checked against the certificate's SANs
  int minVersion = 0;                    // e.g. TLS1_VERSION; 0 = library default
  int maxVersion = 0;                    // e.g. TLS1_1_VERSION; 0 = library default
  std::vector<std::string> alpn;         // protocols offered, in order
};

struct TlsProbeResult {
  bool ok = false;
  std::string error;           // why the handshake failed
  std::string version;         // "TLSv1.3", ...
  std::string alpn;            // protocol the server selected, "" if none
  std::string peerCommonName;  // subject CN of the certificate the server sent
};

// Connects to host:port, completes (or fails) one TLS handshake and closes.
TlsProbeResult probeTls(const std::string& host, int port, const TlsProbeOptions& options);

}  // namespace mka::test
