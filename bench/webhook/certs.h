#pragma once
// A throwaway CA and a serving certificate for localhost/127.0.0.1, made in-process with the
// OpenSSL 3 API, so the benchmark needs no files from the repository or from openssl(1).

#include <filesystem>
#include <string>

namespace mka::bench {

struct TestPki {
  std::filesystem::path dir;      // temporary directory holding the files below
  std::filesystem::path caCert;   // ca.crt
  std::filesystem::path tlsCert;  // tls.crt (leaf, signed by the CA)
  std::filesystem::path tlsKey;   // tls.key
  std::string keyType;            // for the report, e.g. "ECDSA P-256"
};

// Creates a fresh temporary directory and writes the three PEM files into it. Throws
// std::runtime_error with the OpenSSL error text on failure.
TestPki makeTestPki();

}  // namespace mka::bench
