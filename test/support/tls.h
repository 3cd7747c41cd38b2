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

#include "mka/net/pki.h"

namespace mka::test {

using net::CertificateAndKey;
using net::IssueOptions;
using TestCa = net::CertificateAuthority;
using net::generateKeyPem;

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
