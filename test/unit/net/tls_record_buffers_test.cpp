// OpenSSL keeps a read and a write buffer of about 17 KB per connection while a record is on
// its way. A webhook connection kube-apiserver keeps alive between calls must not keep them:
// it holds one per concurrent call, hundreds in a busy cluster. OpenSSL's allocations are counted here through its
// memory hooks, which must be installed before its first allocation. Shared libraries set
// OpenSSL up in their own initializers (httplib's does), so the hooks go in from the
// executable's .preinit_array, which runs before any library's; the tests check that it took.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "mka/net/certificate_reloader.h"
#include "mka/net/event_server.h"
#include "support/eventually.h"
#include "support/ports.h"
#include "support/raw_http.h"
#include "support/serving_certificates.h"

namespace mka::net {
namespace {

using namespace std::chrono_literals;
using test::eventually;

// A record buffer is at least a record's largest plaintext; nothing else OpenSSL keeps per
// connection after the handshake is that large.
constexpr std::size_t kRecordBufferSize = 16 * 1024;

std::mutex recordBuffersMutex;
std::unordered_set<void*>& recordBuffers() {
  static auto* live = new std::unordered_set<void*>;  // outlives every connection
  return *live;
}

void* countingMalloc(std::size_t size, const char*, int) {
  void* p = std::malloc(size);
  if (p != nullptr && size >= kRecordBufferSize) {
    std::lock_guard lock(recordBuffersMutex);
    recordBuffers().insert(p);
  }
  return p;
}

void countingFree(void* p, const char*, int) {
  if (p != nullptr) {
    std::lock_guard lock(recordBuffersMutex);
    recordBuffers().erase(p);
  }
  std::free(p);
}

void* countingRealloc(void* p, std::size_t size, const char* file, int line) {
  if (p == nullptr) return countingMalloc(size, file, line);
  void* moved = std::realloc(p, size);
  if (moved == nullptr && size != 0) return nullptr;  // p is untouched
  std::lock_guard lock(recordBuffersMutex);
  recordBuffers().erase(p);
  if (moved != nullptr && size >= kRecordBufferSize) recordBuffers().insert(moved);
  return moved;
}

bool kCounting = false;  // constant-initialized: set before any dynamic initializer runs

void installCounting(int, char**, char**) {
  kCounting = CRYPTO_set_mem_functions(countingMalloc, countingRealloc, countingFree) == 1;
}
[[gnu::section(".preinit_array"), gnu::used]] void (*const kInstallCounting)(int, char**, char**) = installCounting;

std::size_t liveRecordBuffers() {
  std::lock_guard lock(recordBuffersMutex);
  return recordBuffers().size();
}

using SslCtxPtr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;
using SslPtr = std::unique_ptr<SSL, decltype(&SSL_free)>;

SslCtxPtr clientContext() {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_RELEASE_BUFFERS);
  return ctx;
}

// The client side of one keep-alive connection, which gives its own buffers back once an
// answer is read, so that what is counted is the server's.
class Client {
 public:
  Client(SSL_CTX* ctx, int port) : fd_(test::connectLoopback(port)), ssl_(SSL_new(ctx), SSL_free) {
    SSL_set_fd(ssl_.get(), fd_);
    if (SSL_connect(ssl_.get()) != 1) {
      ERR_clear_error();
      throw std::runtime_error("TLS handshake failed");
    }
  }
  ~Client() {
    ssl_.reset();
    ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // One request and its whole answer; "" if the connection broke.
  std::string exchange(const std::string& request) {
    if (SSL_write(ssl_.get(), request.data(), static_cast<int>(request.size())) != static_cast<int>(request.size()))
      return "";
    std::string pending;
    for (;;) {
      if (auto response = test::takeHttpResponse(pending)) {
        SSL_free_buffers(ssl_.get());
        return *response;
      }
      char buf[4096];
      const int n = SSL_read(ssl_.get(), buf, sizeof buf);
      if (n <= 0) return "";
      pending.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  SslPtr ssl_;
};

TEST(TlsRecordBuffersTest, TheCountSeesOpensslsRecordBuffers) {
  ASSERT_TRUE(kCounting) << "OpenSSL allocated before the test's memory hooks were installed";
  auto ctx = clientContext();
  SslPtr ssl(SSL_new(ctx.get()), SSL_free);
  const std::size_t before = liveRecordBuffers();
  ASSERT_EQ(SSL_alloc_buffers(ssl.get()), 1);
  EXPECT_EQ(liveRecordBuffers(), before + 2);  // a read and a write buffer
  ASSERT_EQ(SSL_free_buffers(ssl.get()), 1);
  EXPECT_EQ(liveRecordBuffers(), before);
}

TEST(TlsRecordBuffersTest, TheWebhookServersIdleKeepAliveConnectionsHoldNone) {
  ASSERT_TRUE(kCounting);
  test::ServingCertificates certs;
  EventServerOptions options;
  options.host = "127.0.0.1";
  options.threads = 1;
  EventServer server(options, certs.reloader, [](const ServerRequest& req, ServerResponse& res) {
    res.contentType = "text/plain";
    res.body = std::string(req.body);
  });
  const int port = server.start();
  auto ctx = clientContext();
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<Client>(ctx.get(), port));
    const std::string body = "request " + std::to_string(i);
    const std::string answer = clients.back()->exchange(
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    ASSERT_TRUE(answer.ends_with("\r\n\r\n" + body)) << answer;
  }
  // The server reads on after each answer and finds nothing; the connections stay open.
  EXPECT_TRUE(eventually([] { return liveRecordBuffers() == 0; })) << liveRecordBuffers() << " buffers held";
  EXPECT_EQ(server.openConnections(), 8u);
  // And they still serve.
  EXPECT_TRUE(clients[3]->exchange("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok").ends_with("ok"));
  server.stop();
}

}  // namespace
}  // namespace mka::net
