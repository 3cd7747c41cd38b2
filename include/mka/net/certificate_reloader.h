#pragma once
// Serving certificate and key, re-read when the files change (Secret volumes update by
// symlink swap, so the directory is watched, not the inode). Each TLS handshake takes the
// newest good pair; connections already open keep theirs. A bad new pair (unreadable, not
// PEM, key not matching the certificate) is refused and the previous pair stays in use.
//
// Threads: reload() runs on the watcher thread; handshakes read concurrently.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "mka/common/file_watcher.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;  // declared here so that `struct ssl_st` below names OpenSSL's type

namespace mka::net {

class CertificateReloader {
 public:
  CertificateReloader(std::filesystem::path certFile, std::filesystem::path keyFile, FileWatcher::Options options = {});
  ~CertificateReloader();

  void start();  // loads now (errors are logged, not thrown) and starts watching
  void stop();

  // Reads both files now. Returns an empty string on success, else what went wrong (with
  // the file name and how to fix it); on failure the previous pair stays in use.
  std::string reload();
  bool loaded() const;
  std::uint64_t generation() const;  // bumps on every successful load
  std::string lastError() const;
  // When the certificate in use expires (its notAfter); nullopt before the first good load.
  std::optional<std::chrono::system_clock::time_point> notAfter() const;

  // Sets TLS 1.2 as the minimum, http/1.1 ALPN, and a certificate callback that serves the
  // current pair. Called once per SSL_CTX.
  void configure(SSL_CTX* ctx);

  // Called after every load attempt (true: a new pair is in use), on the thread that loaded
  // it: e.g. to count reloads in metrics. Set before start().
  void setReloadListener(std::function<void(bool success)> listener);

 private:
  struct KeyPair;
  static int certificateCallback(struct ssl_st* ssl, void* self);
  std::shared_ptr<const KeyPair> current() const;

  std::filesystem::path certFile_;
  std::filesystem::path keyFile_;
  FileWatcher::Options options_;
  std::unique_ptr<FileWatcher> watcher_;
  mutable std::mutex mutex_;
  std::shared_ptr<const KeyPair> pair_;
  std::uint64_t generation_ = 0;
  std::string lastError_;
  std::function<void(bool)> listener_;
};

}  // namespace mka::net
