#include "mka/net/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <latch>
#include <stdexcept>

#include "mka/common/errors.h"
#include "support/eventually.h"
#include "support/ports.h"
#include "support/raw_http.h"

namespace mka::net {
namespace {

using namespace std::chrono_literals;
using test::eventually;

// A client socket that speaks HTTP/1.1 by hand, for what httplib's client hides: pipelining,
// idle connections, half-sent requests.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(test::connectLoopback(port)) {}
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  int fd() const { return fd_; }
  void send(const std::string& data) {
    ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()));
  }

  // Reads one response with a Content-Length body; "" when the server closed instead.
  std::string readResponse() {
    for (;;) {
      if (auto response = test::takeHttpResponse(pending_)) return *response;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return "";
      pending_.append(buf, static_cast<std::size_t>(n));
    }
  }

  // True once the server has closed its side (after whatever it sent before closing).
  bool closedByServer() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return false;  // timeout or reset
    }
  }

 private:
  int fd_ = -1;
  std::string pending_;
};

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n"; }

// A keep-alive client of the server on `port` that gives up after 10 s without an answer.
httplib::Client keepAliveClient(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_keep_alive(true);
  c.set_read_timeout(10, 0);
  return c;
}

ServerOptions localOptions() {
  ServerOptions options;
  options.name = "test";
  options.host = "127.0.0.1";
  options.port = 0;
  return options;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions options = localOptions()) {
    server_ = std::make_unique<HttpServer>(std::move(options));
    server_->route("GET", "/ping",
                   [](const httplib::Request&, httplib::Response& res) { res.set_content("pong", "text/plain"); });
    server_->route("GET", "/conn", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.remote_port), "text/plain");
    });
    server_->route("POST", "/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "application/octet-stream");
    });
    server_->route("GET", "/throw",
                   [](const httplib::Request&, httplib::Response&) { throw std::runtime_error("boom"); });
    server_->route("GET", "/slow", [this](const httplib::Request&, httplib::Response& res) {
      slowEntered_.count_down();
      slowRelease_.wait();
      res.set_content("done", "text/plain");
    });
    server_->route("GET", "/stream", [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain", [this](std::size_t, httplib::DataSink& sink) {
        sink.write("first\n", 6);
        // The second piece waits until the client has the first (for at most 10 s).
        firstPieceArrived_ = firstPieceSeen_.get_future().wait_for(10s) == std::future_status::ready;
        sink.write("second\n", 7);
        sink.done();
        return true;
      });
    });
    port_ = server_->start();
  }

  httplib::Client client() { return keepAliveClient(port_); }

  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::latch slowEntered_{1};
  std::latch slowRelease_{1};
  std::promise<void> firstPieceSeen_;
  std::atomic<bool> firstPieceArrived_{false};
};

TEST_F(HttpServerTest, ServesManyRequestsOnOneKeepAliveConnection) {
  start();
  auto c = client();
  std::string firstPort;
  for (int i = 0; i < 200; ++i) {
    auto res = c.Get("/conn");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    ASSERT_EQ(res->status, 200);
    if (i == 0) firstPort = res->body;
    ASSERT_EQ(res->body, firstPort) << "request " << i << " came on a new connection";
  }
  EXPECT_EQ(server_->connectionsAccepted(), 1u);
}

// Answers are held until complete so that they leave in one piece (one TLS record); a
// streamed answer (a watch) must not be, or each event would wait for the next.
TEST_F(HttpServerTest, AStreamedAnswerIsSentPieceByPieceAsItIsWritten) {
  start();
  auto c = client();
  std::string body;
  bool told = false;
  auto res = c.Get("/stream", [&](const char* data, std::size_t length) {
    body.append(data, length);
    if (!told && body.find("first\n") != std::string::npos) {
      told = true;
      firstPieceSeen_.set_value();
    }
    return true;
  });
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(body, "first\nsecond\n");
  EXPECT_TRUE(firstPieceArrived_) << "the first piece reached the client only with the second";
  EXPECT_EQ(c.Get("/ping")->body, "pong");  // the connection carries the next answer whole
}

TEST_F(HttpServerTest, AdvertisesTheKeepAliveSettings) {
  auto options = localOptions();
  options.keepAliveTimeout = 120s;
  options.keepAliveMaxCount = 1'000'000;
  start(options);
  auto c = client();
  auto res = c.Get("/ping");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Keep-Alive"), "timeout=120, max=1000000");
}

TEST_F(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  start();
  RawConnection conn(port_);
  conn.send(get("/ping") + get("/conn") + get("/ping"));
  EXPECT_NE(conn.readResponse().find("pong"), std::string::npos);
  EXPECT_NE(conn.readResponse().find("200 OK"), std::string::npos);
  EXPECT_NE(conn.readResponse().find("pong"), std::string::npos);
  EXPECT_EQ(server_->connectionsAccepted(), 1u);
}

TEST_F(HttpServerTest, HundredIdleKeepAliveConnectionsDoNotStarveANewRequest) {
  start();
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(std::make_unique<RawConnection>(port_));
    idle.back()->send(get("/ping"));
    ASSERT_NE(idle.back()->readResponse().find("pong"), std::string::npos);
  }
  // Every one of them now sits in its keep-alive wait, holding a thread.
  ASSERT_TRUE(eventually([&] { return server_->openConnections() == 100; }));

  auto c = client();
  auto res = c.Get("/ping");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "pong");
  EXPECT_EQ(server_->openConnections(), 101u);
}

TEST_F(HttpServerTest, BeyondMaxThreadsAConnectionWaitsForAFreeThread) {
  auto options = localOptions();
  options.maxThreads = 1;
  start(options);
  auto holder = std::make_unique<RawConnection>(port_);
  holder->send(get("/ping"));
  ASSERT_NE(holder->readResponse().find("pong"), std::string::npos);

  auto waiting = std::async(std::launch::async, [&] { return client().Get("/ping"); });
  ASSERT_TRUE(eventually([&] { return server_->openConnections() == 2; }));
  EXPECT_NE(waiting.wait_for(0ms), std::future_status::ready);  // the only thread is taken
  holder.reset();                                               // frees it
  auto res = waiting.get();
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "pong");
}

struct PayloadCase {
  std::string name;
  std::size_t size;
  bool chunked;
  int status;
  friend void PrintTo(const PayloadCase& c, std::ostream* os) { *os << c.name; }
};

class HttpServerPayloadTest : public HttpServerTest, public ::testing::WithParamInterface<PayloadCase> {};

TEST_P(HttpServerPayloadTest, LimitsTheBody) {
  const auto& p = GetParam();
  auto options = localOptions();
  options.payloadMaxLength = 1024;
  start(options);
  auto c = client();
  const std::string body(p.size, 'x');
  auto res = p.chunked ? c.Post(
                             "/echo",
                             [&](size_t offset, httplib::DataSink& sink) {
                               if (offset < body.size()) {
                                 sink.write(body.data() + offset, std::min<size_t>(256, body.size() - offset));
                               } else {
                                 sink.done();
                               }
                               return true;
                             },
                             "application/octet-stream")
                       : c.Post("/echo", body, "application/octet-stream");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, p.status);
  if (p.status == 200) {
    EXPECT_EQ(res->body, body);
  }
  // The client can go on (on the same connection, or a new one after a refused chunked body).
  auto after = c.Get("/ping");
  ASSERT_TRUE(after) << httplib::to_string(after.error());
  EXPECT_EQ(after->body, "pong");
}

INSTANTIATE_TEST_SUITE_P(Bodies, HttpServerPayloadTest,
                         ::testing::Values(PayloadCase{"AtLimit", 1024, false, 200},
                                           PayloadCase{"OverLimit", 1025, false, 413},
                                           PayloadCase{"FarOverLimit", 64 * 1024, false, 413},
                                           // httplib would read chunked bodies without a limit.
                                           PayloadCase{"ChunkedAtLimit", 1024, true, 411},
                                           PayloadCase{"ChunkedOverLimit", 4096, true, 411}),
                         [](const auto& info) { return info.param.name; });

TEST_F(HttpServerTest, BodyWithoutContentLengthIsRefusedAndTheConnectionClosed) {
  start();
  RawConnection conn(port_);
  conn.send("POST /echo HTTP/1.1\r\nHost: test\r\n\r\nendless body");
  EXPECT_NE(conn.readResponse().find("411 Length Required"), std::string::npos);
  EXPECT_TRUE(conn.closedByServer());
}

TEST_F(HttpServerTest, HugeDeclaredBodyIsRefusedWithoutReadingItAll) {
  auto options = localOptions();
  options.payloadMaxLength = 1024;
  start(options);
  RawConnection conn(port_);
  conn.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 10000000000\r\n\r\n");
  // More than the body limit plus the header allowance: httplib would drain all 10 GB.
  const std::string junk(256 * 1024, 'x');
  for (int i = 0; i < 8; ++i) {
    if (::send(conn.fd(), junk.data(), junk.size(), MSG_NOSIGNAL) < 0) break;  // server already closed
  }
  EXPECT_NE(conn.readResponse().find("413 Payload Too Large"), std::string::npos);
  EXPECT_TRUE(conn.closedByServer());
}

TEST_F(HttpServerTest, PreRoutingHandlerRunsAfterTheFramingChecks) {
  auto options = localOptions();
  server_ = std::make_unique<HttpServer>(options);
  server_->setPreRoutingHandler([](const httplib::Request& req, httplib::Response& res) {
    if (req.path != "/intercepted") return false;
    res.set_content("pre-routed", "text/plain");
    return true;
  });
  server_->route("GET", "/ping",
                 [](const httplib::Request&, httplib::Response& res) { res.set_content("pong", "text/plain"); });
  port_ = server_->start();
  auto c = client();
  EXPECT_EQ(c.Get("/intercepted")->body, "pre-routed");
  EXPECT_EQ(c.Get("/ping")->body, "pong");
  RawConnection conn(port_);
  conn.send("POST /intercepted HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_NE(conn.readResponse().find("411"), std::string::npos);
}

TEST_F(HttpServerTest, HandlerExceptionBecomes500) {
  start();
  auto c = client();
  auto res = c.Get("/throw");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_EQ(res->body, "internal server error\n");
  EXPECT_EQ(res->get_header_value("EXCEPTION_WHAT"), "");  // no internals leaked
}

TEST_F(HttpServerTest, StopLetsAnInFlightRequestFinish) {
  start();
  auto inFlight = std::async(std::launch::async, [&] { return client().Get("/slow"); });
  slowEntered_.wait();

  auto stopped = std::async(std::launch::async, [&] { server_->stop(); });
  // stop() has begun once new connections are refused...
  ASSERT_TRUE(eventually([&] {
    try {
      RawConnection probe(port_);
      return false;
    } catch (const std::runtime_error&) {
      return true;
    }
  }));
  // ...and it waits for the handler.
  EXPECT_NE(stopped.wait_for(0ms), std::future_status::ready);
  slowRelease_.count_down();

  auto res = inFlight.get();
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "done");
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(server_->running());
}

TEST_F(HttpServerTest, StopClosesIdleKeepAliveConnectionsPromptly) {
  auto options = localOptions();
  options.keepAliveTimeout = std::chrono::hours{1};
  options.readTimeout = std::chrono::hours{1};
  start(options);
  RawConnection afterRequest(port_);
  afterRequest.send(get("/ping"));
  ASSERT_NE(afterRequest.readResponse().find("pong"), std::string::npos);
  RawConnection neverSpoke(port_);
  ASSERT_TRUE(eventually([&] { return server_->openConnections() == 2; }));

  auto stopped = std::async(std::launch::async, [&] { server_->stop(); });
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready) << "stop() waited for idle connections";
  EXPECT_TRUE(afterRequest.closedByServer());
  EXPECT_TRUE(neverSpoke.closedByServer());
  EXPECT_EQ(server_->openConnections(), 0u);
}

TEST_F(HttpServerTest, ClosesAConnectionThatStallsMidRequest) {
  auto options = localOptions();
  options.readTimeout = 1s;
  start(options);
  RawConnection slowloris(port_);
  slowloris.send("GET /ping HTTP/1.1\r\nHost: te");
  ASSERT_TRUE(eventually([&] { return server_->connectionsAccepted() == 1; }));
  EXPECT_TRUE(eventually([&] { return server_->openConnections() == 0; }));
  EXPECT_TRUE(slowloris.closedByServer());
}

TEST_F(HttpServerTest, StopIsIdempotentAndTheServerCanRestart) {
  start();
  server_->stop();
  server_->stop();
  EXPECT_FALSE(server_->running());
  const int port = server_->start();
  EXPECT_TRUE(server_->running());
  httplib::Client c("127.0.0.1", port);
  auto res = c.Get("/ping");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "pong");
}

struct BindCase {
  std::string name;
  std::string host;
  friend void PrintTo(const BindCase& c, std::ostream* os) { *os << c.name; }
};

class HttpServerBindTest : public ::testing::TestWithParam<BindCase> {};

TEST_P(HttpServerBindTest, BindFailureNamesTheAddressAndTheReason) {
  ServerOptions first = localOptions();
  first.host = GetParam().host;
  HttpServer taken(first);
  const int port = taken.start();

  ServerOptions second = first;
  second.name = "webhook";
  second.port = port;
  HttpServer clash(second);
  try {
    clash.start();
    FAIL() << "two servers listen on port " << port;
  } catch (const Error& e) {
    const std::string message = e.what();
    const std::string address = (first.host.empty() ? "" : first.host) + ":" + std::to_string(port);
    EXPECT_NE(message.find("webhook server: cannot listen on " + address), std::string::npos) << message;
    EXPECT_NE(message.find("Address already in use"), std::string::npos) << message;
  }
  EXPECT_FALSE(clash.running());
}

INSTANTIATE_TEST_SUITE_P(Hosts, HttpServerBindTest,
                         ::testing::Values(BindCase{"Loopback", "127.0.0.1"}, BindCase{"AllInterfaces", ""}),
                         [](const auto& info) { return info.param.name; });

class HandleEverythingTest : public ::testing::Test {
 protected:
  void start(ServerOptions options = localOptions()) {
    server_ = std::make_unique<HttpServer>(std::move(options));
    server_->handleEverything([this](const httplib::Request& req, httplib::Response& res) {
      ++calls_;
      res.set_content(req.method + " " + req.path + " " + req.body, "text/plain");
    });
    port_ = server_->start();
  }
  httplib::Client client() { return keepAliveClient(port_); }

  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::atomic<int> calls_{0};
};

TEST_F(HandleEverythingTest, EveryMethodAndPathReachesTheHandlerWithItsBody) {
  start();
  auto c = client();
  const auto body = [](const httplib::Result& r) { return r ? r->body : "error " + httplib::to_string(r.error()); };
  EXPECT_EQ(body(c.Post("/apis/a/b", "created", "application/json")), "POST /apis/a/b created");
  EXPECT_EQ(body(c.Put("/api/v1/x/status", "replaced", "application/json")), "PUT /api/v1/x/status replaced");
  EXPECT_EQ(body(c.Patch("/y", "patched", "application/merge-patch+json")), "PATCH /y patched");
  EXPECT_EQ(body(c.Get("/z")), "GET /z ");
  EXPECT_EQ(body(c.Delete("/z")), "DELETE /z ");
  EXPECT_EQ(body(c.Options("/")), "OPTIONS / ");
  EXPECT_EQ(calls_.load(), 6);
  EXPECT_EQ(server_->connectionsAccepted(), 1u) << "each body was read to its end: the connection stayed usable";
}

TEST_F(HandleEverythingTest, PipelinedRequestsEachGetTheirOwnBody) {
  start();
  RawConnection conn(port_);
  conn.send(
      "PUT /one HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
      "POST /two HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\ndefg");
  EXPECT_NE(conn.readResponse().find("PUT /one abc"), std::string::npos);
  EXPECT_NE(conn.readResponse().find("POST /two defg"), std::string::npos);
}

TEST_F(HandleEverythingTest, ABodyOverTheLimitIs413AndClosesTheConnection) {
  auto options = localOptions();
  options.payloadMaxLength = 1024;
  start(options);
  RawConnection conn(port_);
  conn.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n" + std::string(1025, 'x'));
  EXPECT_NE(conn.readResponse().find("413 Payload Too Large"), std::string::npos);
  EXPECT_TRUE(conn.closedByServer());
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HandleEverythingTest, ABodyCutShortNeverReachesTheHandler) {
  start();
  RawConnection conn(port_);
  conn.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly this");
  ::shutdown(conn.fd(), SHUT_WR);  // the client is gone before its body is complete
  EXPECT_TRUE(conn.closedByServer());
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HandleEverythingTest, AContentEncodedBodyIsDecodedOnItsWayToTheSameHandler) {
  start();
  auto c = client();
  c.set_compress(true);  // gzip: Content-Encoding on the request
  const std::string text(2000, 'z');
  auto res = c.Post("/gz", text, "text/plain");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "POST /gz " + text);
}

TEST(HttpServerOptionsTest, InvalidPortIsRefused) {
  ServerOptions options = localOptions();
  options.port = 70000;
  HttpServer server(options);
  EXPECT_THROW(server.start(), Error);
}

}  // namespace
}  // namespace mka::net
