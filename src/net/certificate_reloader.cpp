#include "mka/net/certificate_reloader.h"

#include "mka/net/openssl.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "log.h"

namespace mka::net {

// One certificate (plus the intermediates sent after it) and its key. Immutable once built;
// a handshake takes its own references, so a pair may be replaced while connections use it.
struct CertificateReloader::KeyPair {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  STACK_OF(X509) * chain = nullptr;
  std::string subject;
  std::string notAfter;
  std::chrono::system_clock::time_point expiry;

  KeyPair() = default;
  KeyPair(const KeyPair&) = delete;
  KeyPair& operator=(const KeyPair&) = delete;
  ~KeyPair() {
    X509_free(cert);
    EVP_PKEY_free(key);
    sk_X509_pop_free(chain, X509_free);
  }
};

namespace {

using BioPtr = OpensslPtr<BIO>;

std::string opensslReason() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    if (out.empty()) out = ERR_reason_error_string(code) != nullptr ? ERR_reason_error_string(code) : "unknown";
  }
  return out;
}

// Reads the file into memory first so that the error says "cannot read" for I/O and
// "not PEM" for content, which point at different fixes.
bool readFile(const std::filesystem::path& file, std::string& out, std::string& error) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    error = file.string() + ": cannot read: " + std::strerror(errno) +
            ": check that the Secret volume is mounted there and readable by the adapter";
    return false;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  out = buf.str();
  return true;
}

std::string subjectOf(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(len)};
}

std::chrono::system_clock::time_point timePoint(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

std::string isoTime(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return "?";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int noPassword(char*, int, int, void*) { return 0; }  // never prompt on a terminal for a key

int selectHttp11(SSL*, const unsigned char** out, unsigned char* outLen, const unsigned char* in, unsigned int inLen,
                 void*) {
  // kube-apiserver offers only http/1.1 to webhooks; an h2-only client gets no ALPN answer
  // rather than an HTTP/2 connection we do not speak.
  static constexpr unsigned char kHttp11[] = "http/1.1";
  for (unsigned int i = 0; i < inLen;) {
    const unsigned int len = in[i];
    if (i + 1 + len > inLen) break;
    if (len == sizeof kHttp11 - 1 && std::memcmp(in + i + 1, kHttp11, len) == 0) {
      *out = in + i + 1;
      *outLen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

namespace {

// A template only so that it can build the (private) KeyPair without being a member.
template <typename Pair>
std::shared_ptr<Pair> loadPair(const std::filesystem::path& certFile, const std::filesystem::path& keyFile,
                               std::string& error);

}  // namespace

CertificateReloader::CertificateReloader(std::filesystem::path certFile, std::filesystem::path keyFile,
                                         FileWatcher::Options options)
    : certFile_(std::move(certFile)), keyFile_(std::move(keyFile)), options_(options) {}

CertificateReloader::~CertificateReloader() { stop(); }

void CertificateReloader::start() {
  reload();
  if (!watcher_) {
    watcher_ = std::make_unique<FileWatcher>(
        std::vector<std::filesystem::path>{certFile_, keyFile_}, [this] { reload(); }, options_);
  }
  watcher_->start();
}

void CertificateReloader::stop() {
  if (watcher_) watcher_->stop();
}

void CertificateReloader::setReloadListener(std::function<void(bool success)> listener) {
  listener_ = std::move(listener);
}

std::string CertificateReloader::reload() {
  std::string error;
  std::shared_ptr<const KeyPair> pair = loadPair<KeyPair>(certFile_, keyFile_, error);
  std::uint64_t generation = 0;
  bool hadPair = false;
  {
    std::lock_guard lock(mutex_);
    hadPair = pair_ != nullptr;
    if (pair) {
      pair_ = pair;
      generation = ++generation_;
      lastError_.clear();
    } else {
      lastError_ = error;
    }
  }
  if (pair) {
    log::info(logger(), "serving certificate loaded",
              {{"cert", certFile_.string()},
               {"key", keyFile_.string()},
               {"subject", pair->subject},
               {"notAfter", pair->notAfter},
               {"generation", generation}});
    if (X509_cmp_current_time(X509_get0_notAfter(pair->cert)) < 0) {
      log::warn(logger(), "serving certificate has expired: clients will refuse it; renew it",
                {{"cert", certFile_.string()}, {"notAfter", pair->notAfter}});
    }
  } else {
    log::error(logger(),
               hadPair ? "serving certificate not loaded, still serving the previous one"
                       : "serving certificate not loaded, TLS handshakes fail until it is fixed",
               {{"error", error}});
  }
  if (listener_) listener_(pair != nullptr);
  return error;
}

bool CertificateReloader::loaded() const {
  std::lock_guard lock(mutex_);
  return pair_ != nullptr;
}

std::uint64_t CertificateReloader::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

std::string CertificateReloader::lastError() const {
  std::lock_guard lock(mutex_);
  return lastError_;
}

std::optional<std::chrono::system_clock::time_point> CertificateReloader::notAfter() const {
  const auto pair = current();
  if (!pair) return std::nullopt;
  return pair->expiry;
}

std::shared_ptr<const CertificateReloader::KeyPair> CertificateReloader::current() const {
  std::lock_guard lock(mutex_);
  return pair_;
}

void CertificateReloader::configure(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_alpn_select_cb(ctx, selectHttp11, nullptr);
  SSL_CTX_set_cert_cb(ctx, &CertificateReloader::certificateCallback, this);
}

int CertificateReloader::certificateCallback(SSL* ssl, void* self) {
  const auto pair = static_cast<CertificateReloader*>(self)->current();
  if (!pair) return 0;  // nothing to serve: fail this handshake
  return SSL_use_cert_and_key(ssl, pair->cert, pair->key, pair->chain, 1) == 1 ? 1 : 0;
}

namespace {

template <typename Pair>
std::shared_ptr<Pair> loadPair(const std::filesystem::path& certFile, const std::filesystem::path& keyFile,
                               std::string& error) {
  ERR_clear_error();
  std::string certPem;
  std::string keyPem;
  if (!readFile(certFile, certPem, error) || !readFile(keyFile, keyPem, error)) return nullptr;

  auto pair = std::make_shared<Pair>();
  BioPtr certBio(BIO_new_mem_buf(certPem.data(), static_cast<int>(certPem.size())));
  pair->cert = PEM_read_bio_X509(certBio.get(), nullptr, noPassword, nullptr);
  if (pair->cert == nullptr) {
    error = certFile.string() + ": no PEM certificate found (" + opensslReason() +
            "): the file must hold the serving certificate as a '-----BEGIN CERTIFICATE-----' block, "
            "followed by any intermediates";
    return nullptr;
  }
  pair->chain = sk_X509_new_null();
  while (X509* extra = PEM_read_bio_X509(certBio.get(), nullptr, noPassword, nullptr)) sk_X509_push(pair->chain, extra);
  ERR_clear_error();  // the loop ends on "no start line", which is not an error

  BioPtr keyBio(BIO_new_mem_buf(keyPem.data(), static_cast<int>(keyPem.size())));
  pair->key = PEM_read_bio_PrivateKey(keyBio.get(), nullptr, noPassword, nullptr);
  if (pair->key == nullptr) {
    error = keyFile.string() + ": no usable PEM private key found (" + opensslReason() +
            "): the file must hold an unencrypted '-----BEGIN PRIVATE KEY-----' (or RSA/EC PRIVATE KEY) block";
    return nullptr;
  }
  if (X509_check_private_key(pair->cert, pair->key) != 1) {
    ERR_clear_error();
    error = keyFile.string() + ": private key does not match the certificate in " + certFile.string() +
            ": write the key that was issued with this certificate (tls.crt and tls.key of the same Secret)";
    return nullptr;
  }
  pair->subject = subjectOf(pair->cert);
  pair->notAfter = isoTime(X509_get0_notAfter(pair->cert));
  pair->expiry = timePoint(X509_get0_notAfter(pair->cert));
  return pair;
}

}  // namespace

}  // namespace mka::net
