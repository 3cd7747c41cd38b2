// The webhook port's event-driven server end to end over real TLS sockets on 127.0.0.1.
#include "mka/net/event_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mka/common/errors.h"
#include "mka/net/certificate_reloader.h"
#include "support/eventually.h"
#include "support/handshake_cases.h"
#include "support/log_capture.h"
#include "support/ports.h"
#include "support/raw_http.h"
#include "support/sanitizers.h"
#include "support/serving_certificates.h"
#include "support/table_test.h"
#include "support/tls_record_proxy.h"

namespace mka::net {
namespace {

using namespace std::chrono_literals;
using test::eventually;

// A TLS client that speaks HTTP/1.1 by hand, for what httplib's client hides: pipelining,
// idle connections, half-sent requests, interim answers.
class RawTls {
 public:
  explicit RawTls(int port) : fd_(test::connectLoopback(port)) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    if (SSL_connect(ssl_) != 1) {
      ERR_clear_error();
      throw std::runtime_error("TLS handshake failed");
    }
  }
  ~RawTls() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  RawTls(const RawTls&) = delete;
  RawTls& operator=(const RawTls&) = delete;

  bool send(std::string_view data) {
    return SSL_write(ssl_, data.data(), static_cast<int>(data.size())) == static_cast<int>(data.size());
  }

  // One answer with a Content-Length body; "" when the server closed instead.
  std::string readResponse() {
    for (;;) {
      if (auto response = test::takeHttpResponse(pending_)) return *response;
      if (!readSome()) return "";
    }
  }

  // The status line and header fields of one answer, without reading a body.
  std::string readHead() {
    for (;;) {
      const auto headerEnd = pending_.find("\r\n\r\n");
      if (headerEnd != std::string::npos) {
        std::string head = pending_.substr(0, headerEnd + 4);
        pending_.erase(0, headerEnd + 4);
        return head;
      }
      if (!readSome()) return "";
    }
  }

  // True once the server has closed the connection (after whatever it sent before closing).
  bool closedByServer() {
    while (readSome()) {
    }
    return closed_;
  }

 private:
  bool readSome() {
    char buf[4096];
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      pending_.append(buf, static_cast<std::size_t>(n));
      return true;
    }
    const int error = SSL_get_error(ssl_, n);
    // A close_notify, an EOF without one, or a reset: closed. A receive timeout: not.
    closed_ = error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && errno != EAGAIN);
    if (error == SSL_ERROR_SSL) closed_ = true;
    ERR_clear_error();
    return false;
  }

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string pending_;
  bool closed_ = false;
};

std::string post(std::string_view path, std::string_view body, std::string_view extra = "") {
  return std::string("POST ") + std::string(path) +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n" + std::string(extra) + "\r\n" + std::string(body);
}

std::string bodyOf(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// The tests' limits: 64 KiB bodies, 4 KiB of header fields.
EventServerOptions limitedEventServerOptions() {
  EventServerOptions options;
  options.host = "127.0.0.1";
  options.maxBodyBytes = 64 * 1024;
  options.maxHeaderBytes = 4 * 1024;
  return options;
}

// Echoes what it was given: "<method> <path> <content type> <body>".
void echoRequest(const ServerRequest& req, ServerResponse& res) {
  res.contentType = "text/plain";
  res.body = std::string(req.method) + " " + std::string(req.path) + " " + std::string(req.contentType) + " " +
             std::string(req.body);
}

class EventServerTest : public ::testing::Test {
 protected:
  void SetUp() override { options_ = limitedEventServerOptions(); }

  void TearDown() override {
    if (server_) server_->stop();
  }

  // The handler echoes by default.
  void start(EventServer::Handler handler = {}) {
    if (!handler) handler = echoRequest;
    server_ = std::make_unique<EventServer>(options_, certs_.reloader, std::move(handler));
    port_ = server_->start();
  }

  std::unique_ptr<httplib::SSLClient> client(const std::filesystem::path& caFile) {
    return certs_.client(port_, caFile);
  }

  test::ServingCertificates certs_;
  EventServerOptions options_;
  std::unique_ptr<EventServer> server_;
  int port_ = 0;
};

TEST_F(EventServerTest, AConnectionClosedDuringTheHandshakeIsLoggedAtDebugAndGarbageAtInfo) {
  test::LogCapture logs("net");
  start();
  test::expectHandshakeRecords(port_, logs);
  server_->stop();  // before the capture goes: no loop logs while its sink is removed
  server_.reset();
}

struct CpuCount {
  unsigned cpus;
  std::size_t loops;
  std::string name = "cpus=" + std::to_string(cpus);
};

// 0 is what std::thread::hardware_concurrency() answers when it cannot tell.
std::vector<CpuCount> cpuCounts() { return {{0, 2}, {1, 2}, {2, 4}, {3, 6}, {4, 8}, {5, 8}, {64, 8}}; }

MKA_TABLE_TEST(EventLoopsForTest, TwoLoopsPerCpuBetweenTwoAndEight, CpuCount, cpuCounts()) {
  const CpuCount& c = testCase();
  EXPECT_EQ(eventLoopsFor(c.cpus), c.loops);
}

TEST_F(EventServerTest, AnswersOverVerifiedTlsAndKeepsTheConnection) {
  start();
  auto c = client(certs_.ca1File);
  for (int i = 0; i < 3; ++i) {
    auto res = c->Post("/mutate?timeout=10s", "{\"n\":" + std::to_string(i) + "}", "application/json");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    // The query string is not part of the path (kube-apiserver appends ?timeout=...).
    EXPECT_EQ(res->body, "POST /mutate application/json {\"n\":" + std::to_string(i) + "}");
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain");
  }
  EXPECT_EQ(server_->connectionsAccepted(), 1u);

  auto stranger = client(certs_.ca2File)->Get("/");
  EXPECT_FALSE(stranger);
}

TEST_F(EventServerTest, AnAnswerLeavesAsOneTlsRecord) {
  start();
  test::TlsRecordProxy proxy(port_);
  httplib::SSLClient c("127.0.0.1", proxy.port());
  c.enable_server_certificate_verification(false);
  c.set_keep_alive(true);
  c.set_read_timeout(10, 0);
  ASSERT_TRUE(c.Post("/x", "{}", "application/json"));  // the handshake and the session tickets
  for (int i = 0; i < 3; ++i) {
    const auto before = proxy.recordsToClient();
    auto res = c.Post("/x", std::string(2000, 'a'), "application/json");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(proxy.recordsToClient() - before, 1u);
  }
}

TEST_F(EventServerTest, PipelinedRequestsAreAnsweredInOrder) {
  start();
  RawTls raw(port_);
  ASSERT_TRUE(raw.send(post("/a", "1") + post("/b", "22") + "GET /c?x=y HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(bodyOf(raw.readResponse()), "POST /a application/json 1");
  EXPECT_EQ(bodyOf(raw.readResponse()), "POST /b application/json 22");
  EXPECT_EQ(bodyOf(raw.readResponse()), "GET /c  ");
  // A request split across writes is put together.
  const std::string split = post("/d", std::string(3000, 'z'));
  ASSERT_TRUE(raw.send(split.substr(0, 40)));
  ASSERT_TRUE(raw.send(split.substr(40, 100)));
  ASSERT_TRUE(raw.send(split.substr(140)));
  EXPECT_EQ(bodyOf(raw.readResponse()), "POST /d application/json " + std::string(3000, 'z'));
}

// A loop reads every connection into one buffer; a connection that must wait for the rest of
// its request keeps what it has, while the loop serves the others in between.
TEST_F(EventServerTest, HalfSentRequestsKeepTheirBytesWhileTheLoopServesOtherConnections) {
  options_.threads = 1;
  start();
  RawTls a(port_);
  RawTls b(port_);
  RawTls c(port_);
  const std::string requestA = post("/a", std::string(3000, 'a'));
  const std::string requestB = post("/b", std::string(200, 'b'));
  ASSERT_TRUE(a.send(requestA.substr(0, 30)));                                // within the head
  ASSERT_TRUE(b.send(requestB.substr(0, 100)));                               // past the head, within the body
  ASSERT_TRUE(c.send(post("/c", "sea") + post("/c2", "two").substr(0, 20)));  // one whole, one begun
  EXPECT_EQ(bodyOf(c.readResponse()), "POST /c application/json sea");
  ASSERT_TRUE(a.send(requestA.substr(30, 1000)));
  ASSERT_TRUE(b.send(requestB.substr(100)));
  EXPECT_EQ(bodyOf(b.readResponse()), "POST /b application/json " + std::string(200, 'b'));
  ASSERT_TRUE(c.send(post("/c2", "two").substr(20)));
  EXPECT_EQ(bodyOf(c.readResponse()), "POST /c2 application/json two");
  ASSERT_TRUE(a.send(requestA.substr(1030)));
  EXPECT_EQ(bodyOf(a.readResponse()), "POST /a application/json " + std::string(3000, 'a'));
  EXPECT_EQ(server_->connectionsAccepted(), 3u);
}

// kube-apiserver holds a keep-alive connection per concurrent call; a fleet's worth of them,
// each with requests in flight back to back, all get their own answers.
TEST_F(EventServerTest, AThousandKeepAliveConnectionsWithPipelinedRequestsEachGetTheirAnswers) {
  if (mka::test::kUnderThreadSanitizer)
    GTEST_SKIP() << "a thousand connections: minutes under TSan, on the loops the other tests run";
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 2100 && files.rlim_max >= 2100) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4096);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  ASSERT_GE(files.rlim_cur, 2100u) << "the test needs 2 descriptors per connection";
  start();
  constexpr int kConnections = 1000;
  constexpr int kClients = 4;
  constexpr int kRounds = 2;
  std::atomic<int> wrong{0};
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      std::vector<std::unique_ptr<RawTls>> connections;
      for (int i = t; i < kConnections; i += kClients) connections.push_back(std::make_unique<RawTls>(port_));
      for (int round = 0; round < kRounds; ++round) {
        // Every connection gets two requests in one write before any answer is read.
        for (std::size_t i = 0; i < connections.size(); ++i) {
          const std::string id = std::to_string(t) + "-" + std::to_string(i) + "-" + std::to_string(round);
          if (!connections[i]->send(post("/p", id + "a") + post("/q", id + "b"))) ++wrong;
        }
        for (std::size_t i = 0; i < connections.size(); ++i) {
          const std::string id = std::to_string(t) + "-" + std::to_string(i) + "-" + std::to_string(round);
          for (const auto& [path, suffix] : {std::pair{"/p", "a"}, std::pair{"/q", "b"}}) {
            const auto response = connections[i]->readResponse();
            if (bodyOf(response) == std::string("POST ") + path + " application/json " + id + suffix) {
              ++answered;
            } else {
              ++wrong;
            }
          }
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(answered.load(), kConnections * kRounds * 2);
  EXPECT_EQ(server_->connectionsAccepted(), static_cast<std::uint64_t>(kConnections));
}

struct EventServerRefusal {
  std::string name;
  std::string request;
  std::string status;
};
std::vector<EventServerRefusal> eventServerRefusals() {
  return {
      {"body over the limit", post("/x", std::string(64 * 1024 + 1, 'a')), "413"},
      {"chunked body", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "411"},
      {"POST without Content-Length", "POST /x HTTP/1.1\r\nHost: x\r\n\r\n", "411"},
      {"content-encoded body", post("/x", "{}", "Content-Encoding: gzip\r\n"), "415"},
      {"headers over the limit", post("/x", "{}", "X-Big: " + std::string(5000, 'h') + "\r\n"), "431"},
      {"not HTTP", "HELLO\r\n\r\n", "400"},
  };
}

// One echoing server for every case of a table, started once: each case has a connection of
// its own, which the server closes.
class EventServerRefusals : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = std::make_unique<test::ServingCertificates>();
    server_ = std::make_unique<EventServer>(limitedEventServerOptions(), certs_->reloader, echoRequest);
    port_ = server_->start();
  }
  static void TearDownTestSuite() {
    if (server_) server_->stop();
    server_.reset();
    certs_.reset();
    port_ = 0;
  }
  void SetUp() override { ASSERT_NE(port_, 0) << "the server did not start (SetUpTestSuite failed)"; }

  inline static std::unique_ptr<test::ServingCertificates> certs_;
  inline static std::unique_ptr<EventServer> server_;
  inline static int port_ = 0;
};

MKA_TABLE_TEST_F(EventServerRefusals, RefusesWhatItWillNotReadAndClosesTheConnection, EventServerRefusal,
                 eventServerRefusals()) {
  const auto& c = testCase();
  RawTls raw(port_);
  ASSERT_TRUE(raw.send(c.request));
  const auto response = raw.readResponse();
  EXPECT_EQ(response.substr(0, 12), "HTTP/1.1 " + c.status) << response;
  EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos) << response;
  EXPECT_TRUE(raw.closedByServer());
}

TEST_F(EventServerTest, TheErrorRendererWritesTheServersOwnRefusals) {
  server_ = std::make_unique<EventServer>(options_, certs_.reloader, [](const ServerRequest&, ServerResponse&) {});
  server_->setErrorRenderer([](int status, std::string_view message, ServerResponse& res) {
    res.contentType = "application/json";
    res.body = "{\"code\":" + std::to_string(status) + ",\"message\":\"" + std::string(message) + "\"}";
  });
  port_ = server_->start();
  RawTls raw(port_);
  ASSERT_TRUE(raw.send("POST /x HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto response = raw.readResponse();
  EXPECT_NE(response.find("Content-Type: application/json\r\n"), std::string::npos) << response;
  EXPECT_EQ(bodyOf(response),
            "{\"code\":411,\"message\":\"request has no Content-Length header: send the body with its length\"}");
}

TEST_F(EventServerTest, AHandlerThatThrowsGets500AndTheConnectionGoesOn) {
  start([](const ServerRequest& req, ServerResponse& res) {
    if (req.path == "/throw") throw std::runtime_error("boom");
    res.body = "fine";
  });
  RawTls raw(port_);
  ASSERT_TRUE(raw.send(post("/throw", "{}")));
  EXPECT_EQ(raw.readResponse().substr(0, 12), "HTTP/1.1 500");
  ASSERT_TRUE(raw.send(post("/ok", "{}")));
  EXPECT_EQ(bodyOf(raw.readResponse()), "fine");
}

TEST_F(EventServerTest, HeadAnswersCarryNoBodyAndExpectContinueGetsTheInterimAnswer) {
  start();
  RawTls raw(port_);
  ASSERT_TRUE(raw.send("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto head = raw.readHead();
  EXPECT_NE(head.find("Content-Length: 9\r\n"), std::string::npos) << head;  // what GET would carry
  // The next answer starts right after the head: no body came between them.
  ASSERT_TRUE(raw.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  const auto interim = raw.readResponse();
  EXPECT_EQ(interim.substr(0, 12), "HTTP/1.1 100") << interim;
  ASSERT_TRUE(raw.send("{}"));
  EXPECT_EQ(bodyOf(raw.readResponse()), "POST /e  {}");
}

TEST_F(EventServerTest, IdleAndStalledConnectionsAreClosedAtTheirTimeouts) {
  options_.keepAliveTimeout = 300ms;
  options_.readTimeout = 300ms;
  start();
  RawTls idle(port_);
  ASSERT_TRUE(idle.send(post("/x", "{}")));
  ASSERT_FALSE(idle.readResponse().empty());
  RawTls stalled(port_);
  ASSERT_TRUE(stalled.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"));
  EXPECT_TRUE(idle.closedByServer());
  EXPECT_TRUE(stalled.closedByServer());
  EXPECT_TRUE(eventually([&] { return server_->openConnections() == 0; }));
}

TEST_F(EventServerTest, StopAnswersTheRequestInFlightClosesIdleConnectionsAndRefusesNewOnes) {
  options_.threads = 1;
  std::promise<void> entered;
  std::promise<void> release;
  auto released = release.get_future().share();
  start([&](const ServerRequest& req, ServerResponse& res) {
    if (req.path == "/slow") {
      entered.set_value();
      released.wait();
    }
    res.body = "done";
  });
  RawTls idle(port_);
  ASSERT_TRUE(idle.send(post("/x", "{}")));
  ASSERT_FALSE(idle.readResponse().empty());
  RawTls busy(port_);
  ASSERT_TRUE(busy.send(post("/slow", "{}")));
  entered.get_future().wait();

  auto stopped = std::async(std::launch::async, [&] { server_->stop(); });
  EXPECT_EQ(stopped.wait_for(200ms), std::future_status::timeout);  // waits for the request in flight
  release.set_value();
  const auto answer = busy.readResponse();
  EXPECT_EQ(bodyOf(answer), "done");
  EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos) << answer;
  EXPECT_TRUE(busy.closedByServer());
  EXPECT_TRUE(idle.closedByServer());
  stopped.get();
  EXPECT_THROW(RawTls{port_}, std::runtime_error);
  server_.reset();
}

TEST_F(EventServerTest, RotationKeepsOpenConnectionsAndServesTheNewCertificateToNewOnes) {
  start();
  auto c = client(certs_.ca1File);
  ASSERT_TRUE(c->Post("/x", "{}", "application/json"));

  ASSERT_TRUE(certs_.rotate(certs_.ca2.issue({.commonName = "serving-two"})));

  auto again = c->Post("/x", "{}", "application/json");
  ASSERT_TRUE(again) << httplib::to_string(again.error());
  EXPECT_EQ(server_->connectionsAccepted(), 1u);
  const auto seen = test::probeTls("127.0.0.1", port_, {.caPem = certs_.ca2.certPem()});
  ASSERT_TRUE(seen.ok) << seen.error;
  EXPECT_EQ(seen.peerCommonName, "serving-two");
}

TEST_F(EventServerTest, RefusesTlsBelow12) {
  start();
  const auto old = test::probeTls("127.0.0.1", port_, {.caPem = certs_.ca1.certPem(), .maxVersion = TLS1_1_VERSION});
  EXPECT_FALSE(old.ok);
  const auto current = test::probeTls("127.0.0.1", port_, {.caPem = certs_.ca1.certPem()});
  EXPECT_TRUE(current.ok) << current.error;
}

TEST_F(EventServerTest, APortInUseIsAnErrorNamingTheAddress) {
  start();
  options_.port = port_;
  EventServer second(options_, certs_.reloader, [](const ServerRequest&, ServerResponse&) {});
  try {
    second.start();
    FAIL() << "a second server listened on a port in use";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port_)), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mka::net
