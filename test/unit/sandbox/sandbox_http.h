#pragma once
// Talking to an emulated cluster over its real HTTPS port, as a client would: an
// httplib::SSLClient that trusts only the cluster's CA and sends its bearer token, and a watch
// reader that streams a watch on its own thread and collects the events.
//
// Threads: a client is used by one thread; a WatchReader's events may be read from any.

#include <httplib.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/net/openssl.h"
#include "mka/sandbox/sandbox.h"
#include "support/eventually.h"

namespace mka::sandbox::test {

// A client writing to a connection the server has closed (e.g. after setUnreachable) gets
// EPIPE instead of a SIGPIPE that would end the test binary.
inline const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

// A client for `cluster` (its CA, its token unless `token` says otherwise; "" = none).
inline std::unique_ptr<httplib::SSLClient> clientFor(const Cluster& cluster, std::optional<std::string> token = {}) {
  auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", cluster.port());
  client->set_ca_cert_store(net::certificateStore(cluster.caPem()).release());  // the client owns it from here
  client->enable_server_certificate_verification(true);
  client->set_keep_alive(true);
  client->set_connection_timeout(5, 0);
  client->set_read_timeout(30, 0);
  client->set_write_timeout(30, 0);
  const std::string bearer = token.value_or(cluster.token());
  if (!bearer.empty()) client->set_bearer_token_auth(bearer);
  return client;
}

// The status code, or -1 when the request got no response (a failed test, not a crash).
inline int statusOf(const httplib::Result& result) { return result ? result->status : -1; }

inline nlohmann::json bodyOf(const httplib::Result& result) {
  if (!result) return nullptr;
  return nlohmann::json::parse(result->body, nullptr, false);
}

// Streams GET `path` (a watch) on its own thread and keeps every event it reads.
class WatchReader {
 public:
  WatchReader(const Cluster& cluster, std::string path, httplib::Headers headers = {}) : client_(clientFor(cluster)) {
    client_->set_read_timeout(120, 0);
    thread_ = std::thread([this, path = std::move(path), headers = std::move(headers)] {
      auto result = client_->Get(
          path.c_str(), headers,
          [this](const httplib::Response& response) {
            std::lock_guard lock(mutex_);
            status_ = response.status;
            contentType_ = response.get_header_value("Content-Type");
            contentEncoding_ = response.get_header_value("Content-Encoding");
            return true;
          },
          [this](const char* data, std::size_t size) {
            std::lock_guard lock(mutex_);
            buffer_.append(data, size);
            for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
              events_.push_back(nlohmann::json::parse(buffer_.substr(0, nl), nullptr, false));
              buffer_.erase(0, nl + 1);
            }
            return !cancelled_.load();
          });
      ended_ = true;
    });
  }
  ~WatchReader() {
    cancel();
    thread_.join();
  }
  WatchReader(const WatchReader&) = delete;
  WatchReader& operator=(const WatchReader&) = delete;

  // Closes the connection from the client side and waits until the reader thread is done.
  void cancel() {
    cancelled_ = true;
    while (!ended_) {
      client_->stop();
      mka::test::eventually([this] { return ended_.load(); }, std::chrono::milliseconds{20});
    }
  }
  bool ended() const { return ended_; }
  int status() const {
    std::lock_guard lock(mutex_);
    return status_;
  }
  std::string contentType() const {
    std::lock_guard lock(mutex_);
    return contentType_;
  }
  std::string contentEncoding() const {
    std::lock_guard lock(mutex_);
    return contentEncoding_;
  }
  std::vector<nlohmann::json> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  std::vector<std::string> types() const {
    std::vector<std::string> out;
    for (const auto& e : events()) out.push_back(e.value("type", "?"));
    return out;
  }
  // True once an event of `type` arrived (for ADDED/MODIFIED/DELETED: about object `name`).
  bool saw(const std::string& type, const std::string& name = "") const {
    for (const auto& e : events()) {
      if (e.value("type", "") != type) continue;
      if (name.empty() || e["object"]["metadata"].value("name", "") == name) return true;
    }
    return false;
  }

 private:
  std::unique_ptr<httplib::SSLClient> client_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::string buffer_;
  std::vector<nlohmann::json> events_;
  int status_ = 0;
  std::string contentType_;
  std::string contentEncoding_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> cancelled_{false};
};

}  // namespace mka::sandbox::test
