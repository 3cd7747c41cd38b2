#include "mka/net/event_server.h"

// Beast's string_view is std::string_view in this file, the only one that includes Beast.
#define BOOST_BEAST_USE_STD_STRING_VIEW 1

#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/optional.hpp>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "listen.h"
#include "log.h"
#include "mka/common/errors.h"
#include "mka/common/thread_name.h"
#include "mka/net/certificate_reloader.h"

namespace mka::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Bytes asked of the TLS stream per read: a whole TLS record.
constexpr std::size_t kReadChunk = 16 * 1024;
// A connection's buffers keep their capacity between requests up to this; a rare large
// request does not pin its memory for the connection's life.
constexpr std::size_t kKeptCapacity = 64 * 1024;
// How long a refused request's unread body is drained before the socket closes: closing with
// unread data sends a reset, which can destroy the answer before the client reads it.
constexpr std::chrono::milliseconds kLinger{500};
// How long a closing connection waits for the client's close_notify after sending its own.
constexpr std::chrono::milliseconds kShutdownWait{1000};

// What the server reads of a request head; the strings keep their capacity across requests.
struct RequestHead {
  std::string method;
  std::string target;
  std::string contentType;
  std::string body;
  bool transferEncoding = false;
  bool contentEncoding = false;
  bool expectContinue = false;

  void clear() {
    method.clear();
    target.clear();
    contentType.clear();
    body.clear();
    if (body.capacity() > kKeptCapacity) body.shrink_to_fit();
    transferEncoding = contentEncoding = expectContinue = false;
  }
};

// Beast's parser, keeping only the fields the server and the handler read: no map of fields,
// no allocation beyond the head's reused strings.
class RequestParser final : public http::basic_parser<true> {
 public:
  explicit RequestParser(RequestHead& head) : head_(head) {}

 private:
  void on_request_impl(http::verb, std::string_view method, std::string_view target, int, beast::error_code&) override {
    head_.method.assign(method);
    head_.target.assign(target);
  }
  void on_response_impl(int, std::string_view, int, beast::error_code&) override {}
  void on_field_impl(http::field name, std::string_view, std::string_view value, beast::error_code&) override {
    switch (name) {
      case http::field::content_type: head_.contentType.assign(value); break;
      case http::field::transfer_encoding: head_.transferEncoding = true; break;
      case http::field::content_encoding:
        head_.contentEncoding = head_.contentEncoding || !beast::iequals(value, "identity");
        break;
      case http::field::expect: head_.expectContinue = beast::iequals(value, "100-continue"); break;
      default: break;
    }
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, beast::error_code&) override {
    if (length) head_.body.reserve(static_cast<std::size_t>(*length));  // within body_limit
  }
  std::size_t on_body_impl(std::string_view data, beast::error_code&) override {
    head_.body.append(data);
    return data.size();
  }
  // Chunked bodies are refused once the head is read, before any chunk is parsed.
  void on_chunk_header_impl(std::uint64_t, std::string_view, beast::error_code& ec) override {
    ec = http::error::bad_transfer_encoding;
  }
  std::size_t on_chunk_body_impl(std::uint64_t, std::string_view, beast::error_code& ec) override {
    ec = http::error::bad_transfer_encoding;
    return 0;
  }
  void on_finish_impl(beast::error_code&) override {}

  RequestHead& head_;
};

void appendNumber(std::string& out, std::uint64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

std::string peerOf(const tcp::socket& socket) {
  beast::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

bool methodHasBody(std::string_view method) { return method == "POST" || method == "PUT" || method == "PATCH"; }

class Session;

// One event loop: its thread is the only one that runs its handlers, so what it owns (the
// sessions' state, `sessions`) needs no lock.
struct Loop {
  std::unordered_set<Session*> sessions;  // destroyed after `context`, whose handlers hold sessions
  asio::io_context context{1};
  // Closes the sessions whose deadline passed. A timer per session and operation would cost a
  // timer-queue update per read and write, and a timerfd_settime call for every few requests.
  std::optional<asio::steady_timer> sweep;
  std::thread thread;

  void sweepEvery(std::chrono::milliseconds period);
};

}  // namespace

struct EventServer::Runtime {
  const EventServerOptions& options;
  const Handler& handler;
  const ErrorRenderer& errorRenderer;
  std::string address;  // for logs
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::size_t> open{0};
  std::mutex closedMutex;  // with `closed`: stop() waits for the last connection
  std::condition_variable closed;
  asio::ssl::context tls{asio::ssl::context::tls_server};
  std::vector<std::unique_ptr<Loop>> loops;
  // Declared after the loops, destroyed before them: both belong to loops[0]'s context.
  std::optional<tcp::acceptor> acceptor;
  std::optional<asio::steady_timer> acceptRetry;
  std::size_t nextLoop = 0;  // loops[0]'s thread only

  Runtime(const EventServerOptions& o, const Handler& h, const ErrorRenderer& e)
      : options(o), handler(h), errorRenderer(e) {}
  void accept();
  void connectionClosed() {
    std::lock_guard lock(closedMutex);
    open.fetch_sub(1, std::memory_order_relaxed);
    closed.notify_all();
  }
};

namespace {

// One connection, from handshake to close; owned by the handlers of its loop that are pending.
class Session final : public std::enable_shared_from_this<Session> {
 public:
  Session(EventServer::Runtime& runtime, Loop& loop, tcp::socket socket)
      : rt_(runtime), loop_(loop), stream_(std::move(socket), runtime.tls) {}

  // The loop's sweep: a session past its deadline (the phase's timeout) is closed.
  void closeIfExpired(std::chrono::steady_clock::time_point now) {
    if (now >= deadline_) closeSocket();
  }

  ~Session() {
    loop_.sessions.erase(this);
    rt_.connectionClosed();
  }

  void start() {
    if (rt_.stopping) return;
    loop_.sessions.insert(this);
    state_ = State::Handshake;
    expireAfter(rt_.options.readTimeout);
    stream_.async_handshake(asio::ssl::stream_base::server,
                            [self = shared_from_this()](beast::error_code ec) { self->onHandshake(ec); });
  }

  // stop() asks: a connection waiting for its next request (or still shaking hands) closes
  // now; one in the middle of a request answers it first, with "Connection: close".
  void drain() {
    closeAfter_ = true;
    if (state_ == State::Handshake || state_ == State::Idle) closeSocket();
  }

 private:
  enum class State { Handshake, Idle, Reading, Writing, Closing };
  enum class Then { NextRequest, Close, Linger, Continue };

  void onHandshake(beast::error_code ec) {
    if (ec) {
      // A TCP probe or a port scan closes without a word: not worth more than debug.
      const bool aborted = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
                           ec == asio::error::connection_reset || ec == asio::error::operation_aborted;
      if (aborted) {
        log::debug(logger(), "TLS handshake aborted by peer",
                   {{"server", rt_.options.name}, {"peer", peerOf(socket())}, {"error", ec.message()}});
      } else {
        log::info(logger(), "TLS handshake failed",
                  {{"server", rt_.options.name}, {"peer", peerOf(socket())}, {"error", ec.message()}});
      }
      return;
    }
    beginRequest();
    parse();
  }

  void beginRequest() {
    head_.clear();
    parser_.emplace(head_);
    parser_->header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(rt_.options.maxHeaderBytes, UINT32_MAX)));
    parser_->body_limit(static_cast<std::uint64_t>(rt_.options.maxBodyBytes));
    headChecked_ = false;
    requestStarted_ = false;
  }

  // Parses what the buffer holds; reads more, refuses, or answers.
  void parse() {
    for (;;) {
      if (buffer_.size() == 0) return readMore();
      beast::error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) return readMore();
      if (ec) return refuseMalformed(ec);
      if (parser_->is_header_done() && !headChecked_) {
        headChecked_ = true;
        if (!checkHead()) return;
      }
      if (parser_->is_done()) return answer();
    }
  }

  void readMore() {
    const bool idle = !parser_->got_some() && buffer_.size() == 0;
    if (idle && closeAfter_) return closeSocket();
    if (idle) {
      state_ = State::Idle;
      // A new connection's client sends its request right away; later ones may idle.
      expireAfter(served_ == 0 ? rt_.options.readTimeout : rt_.options.keepAliveTimeout);
    } else if (!requestStarted_) {
      // The request's whole reading, from its first byte, has the read timeout.
      requestStarted_ = true;
      state_ = State::Reading;
      expireAfter(rt_.options.readTimeout);
    }
    if (buffer_.capacity() > kKeptCapacity && buffer_.size() == 0) buffer_.shrink_to_fit();
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              // An error ends the connection: a timeout, the client gone, a TLS alert; an unfinished
                              // request has no one to answer it.
                              if (ec) return;
                              self->buffer_.commit(n);
                              self->parse();
                            });
  }

  // The server's own refusals of a head, before its body is read. False when refused.
  bool checkHead() {
    if (head_.transferEncoding) {
      refuse(411, "request bodies must be sent with a Content-Length header; Transfer-Encoding is not supported");
      return false;
    }
    if (methodHasBody(head_.method) && !parser_->content_length()) {
      refuse(411, "request has no Content-Length header: send the body with its length");
      return false;
    }
    if (head_.contentEncoding) {
      refuse(415, "request bodies must not be content-encoded: send the body as it is, without Content-Encoding");
      return false;
    }
    if (head_.expectContinue && !parser_->is_done() && buffer_.size() == 0) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      out_.assign(kContinue);
      write(Then::Continue);
      return false;
    }
    return true;
  }

  void refuseMalformed(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return refuse(413, "request body is larger than " + std::to_string(rt_.options.maxBodyBytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return refuse(
          431, "request line and headers are larger than " + std::to_string(rt_.options.maxHeaderBytes) + " bytes");
    }
    refuse(400, "malformed HTTP request: " + ec.message());
  }

  void resetResponse() {
    response_.status = 200;
    response_.contentType.clear();
    response_.body.clear();
    if (response_.body.capacity() > kKeptCapacity) response_.body.shrink_to_fit();
    response_.headers.clear();
  }

  void render(int status, std::string_view message) {
    resetResponse();
    response_.status = status;
    if (rt_.errorRenderer) {
      rt_.errorRenderer(status, message, response_);
    } else {
      response_.contentType = "text/plain; charset=utf-8";
      response_.body.assign(message).push_back('\n');
    }
  }

  // Answers a request the server will not hand to the handler, then closes: its body may be
  // unread, so the connection cannot carry another request.
  void refuse(int status, std::string_view message) {
    log::info(logger(), "request refused",
              {{"server", rt_.options.name}, {"peer", peerOf(socket())}, {"status", status}, {"reason", message}});
    render(status, message);
    serialize(true, false);
    write(Then::Linger);
  }

  void answer() {
    resetResponse();
    const std::string_view target = head_.target;
    const ServerRequest request{head_.method, target.substr(0, target.find('?')), head_.contentType, head_.body};
    try {
      rt_.handler(request, response_);
    } catch (const std::exception& e) {
      log::error(logger(), "request handler failed",
                 {{"server", rt_.options.name}, {"method", head_.method}, {"path", request.path}, {"error", e.what()}});
      render(500, "internal server error");
    }
    ++served_;
    const bool close = closeAfter_ || rt_.stopping || !parser_->keep_alive();
    serialize(close, head_.method == "HEAD");
    write(close ? Then::Close : Then::NextRequest);
  }

  // The status line, the header fields and the body, into one buffer: one write, one TLS record.
  void serialize(bool close, bool headOnly) {
    out_.clear();
    if (out_.capacity() > kKeptCapacity) out_.shrink_to_fit();
    out_.append("HTTP/1.1 ");
    appendNumber(out_, static_cast<std::uint64_t>(response_.status));
    out_.push_back(' ');
    out_.append(http::obsolete_reason(static_cast<http::status>(response_.status)));
    out_.append("\r\n");
    if (!response_.contentType.empty()) out_.append("Content-Type: ").append(response_.contentType).append("\r\n");
    out_.append("Content-Length: ");
    appendNumber(out_, response_.body.size());
    out_.append("\r\n");
    for (const auto& [name, value] : response_.headers) out_.append(name).append(": ").append(value).append("\r\n");
    if (close) out_.append("Connection: close\r\n");
    out_.append("\r\n");
    if (!headOnly) out_.append(response_.body);
  }

  void write(Then then) {
    state_ = State::Writing;
    expireAfter(rt_.options.writeTimeout);
    asio::async_write(stream_, asio::buffer(out_),
                      [self = shared_from_this(), then](beast::error_code ec, std::size_t) {
                        if (ec) return;
                        self->afterWrite(then);
                      });
  }

  void afterWrite(Then then) {
    switch (then) {
      case Then::Continue:
        state_ = State::Reading;
        expireAfter(rt_.options.readTimeout);
        return parse();
      case Then::NextRequest:
        if (closeAfter_) return shutdown();  // stop() began while the answer was on its way
        beginRequest();
        return parse();
      case Then::Close: return shutdown();
      case Then::Linger: return linger();
    }
  }

  // close_notify, then the client's own or the wait's end, then the socket closes. While the
  // server stops, it closes at once: the answer said "Connection: close" and carried its
  // length, so the client has all of it, and stop() need not wait on clients.
  void shutdown() {
    if (rt_.stopping) return closeSocket();
    state_ = State::Closing;
    expireAfter(kShutdownWait);
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->closeSocket(); });
  }

  // Stops sending and reads whatever the client still sends, briefly, so that closing does not
  // reset the connection under the answer.
  void linger() {
    state_ = State::Closing;
    beast::error_code ec;
    socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return closeSocket();
    expireAfter(kLinger);
    drainRaw();
  }

  void drainRaw() {
    stream_.next_layer().async_read_some(asio::buffer(scratch_),
                                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                           if (ec) return self->closeSocket();
                                           self->drainRaw();
                                         });
  }

  void closeSocket() {
    state_ = State::Closing;
    beast::error_code ec;
    socket().close(ec);  // pending operations end with operation_aborted, releasing the session
  }

  tcp::socket& socket() { return stream_.next_layer(); }

  void expireAfter(std::chrono::milliseconds timeout) { deadline_ = std::chrono::steady_clock::now() + timeout; }

  EventServer::Runtime& rt_;
  Loop& loop_;
  asio::ssl::stream<tcp::socket> stream_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  beast::flat_buffer buffer_;
  RequestHead head_;
  std::optional<RequestParser> parser_;
  ServerResponse response_;
  std::string out_;
  char scratch_[4096];
  State state_ = State::Handshake;
  std::uint64_t served_ = 0;
  bool headChecked_ = false;
  bool requestStarted_ = false;
  bool closeAfter_ = false;
};

}  // namespace

void Loop::sweepEvery(std::chrono::milliseconds period) {
  sweep->expires_after(period);
  sweep->async_wait([this, period](beast::error_code ec) {
    if (ec) return;  // the loop is stopping
    const auto now = std::chrono::steady_clock::now();
    std::vector<Session*> open(sessions.begin(), sessions.end());  // closing one ends it outside this walk
    for (Session* session : open) session->closeIfExpired(now);
    sweepEvery(period);
  });
}

void EventServer::Runtime::accept() {
  Loop& target = *loops[nextLoop++ % loops.size()];
  acceptor->async_accept(target.context, [this, &target](beast::error_code ec, tcp::socket socket) {
    if (stopping || ec == asio::error::operation_aborted) return;
    if (ec) {
      log::warn(logger(), "accept failed", {{"server", options.name}, {"error", ec.message()}});
      // Out of descriptors or memory: back off instead of spinning on a readable socket.
      acceptRetry->expires_after(std::chrono::milliseconds{100});
      acceptRetry->async_wait([this](beast::error_code waitError) {
        if (!waitError && !stopping) accept();
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // small answers, sent now
    accepted.fetch_add(1, std::memory_order_relaxed);
    open.fetch_add(1, std::memory_order_relaxed);
    auto session = std::make_shared<Session>(*this, target, std::move(socket));
    asio::post(target.context, [session = std::move(session)] { session->start(); });
    accept();
  });
}

EventServer::EventServer(EventServerOptions options, std::shared_ptr<CertificateReloader> certificates, Handler handler)
    : options_(std::move(options)), certificates_(std::move(certificates)), handler_(std::move(handler)) {
  if (!certificates_) throw Error(options_.name + " server: a TLS server needs a certificate source");
  if (options_.threads == 0) throw Error(options_.name + " server: threads must be at least 1");
}

EventServer::~EventServer() { stop(); }

void EventServer::setErrorRenderer(ErrorRenderer renderer) { errorRenderer_ = std::move(renderer); }

int EventServer::start() {
  if (runtime_) throw Error(options_.name + " server: start() called twice");
  auto rt = std::make_unique<Runtime>(options_, handler_, errorRenderer_);
  SSL_CTX* ctx = rt->tls.native_handle();
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  certificates_->configure(ctx);
  for (std::size_t i = 0; i < options_.threads; ++i) rt->loops.push_back(std::make_unique<Loop>());

  const int fd = listenOn(options_.name, options_.host, options_.port);
  port_ = boundPort(fd);
  rt->address = displayAddress(options_.host, port_);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  rt->acceptor.emplace(rt->loops[0]->context);
  beast::error_code ec;
  rt->acceptor->assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    throw Error(options_.name + " server: cannot listen on " + rt->address + ": " + ec.message());
  }
  rt->acceptRetry.emplace(rt->loops[0]->context);
  rt->accept();

  // Timeouts are enforced to within a quarter of the shortest.
  const auto period = std::clamp(std::min({options_.readTimeout, options_.writeTimeout, options_.keepAliveTimeout}) / 4,
                                 std::chrono::milliseconds{10}, std::chrono::milliseconds{1000});
  for (std::size_t i = 0; i < rt->loops.size(); ++i) {
    Loop& loop = *rt->loops[i];
    loop.sweep.emplace(loop.context);
    loop.sweepEvery(period);
    loop.thread = std::thread([&loop, name = options_.name, i] {
      nameThisThread(name.substr(0, 8) + "-loop" + std::to_string(i));
      auto work = asio::make_work_guard(loop.context);
      for (;;) {
        try {
          loop.context.run();
          return;
        } catch (const std::exception& e) {  // e.g. bad_alloc: lose a connection, not the loop
          log::error(logger(), "event loop handler failed", {{"server", name}, {"error", e.what()}});
        }
      }
    });
  }
  runtime_ = std::move(rt);
  log::info(logger(), "listening",
            {{"server", options_.name}, {"address", runtime_->address}, {"tls", true}, {"threads", options_.threads}});
  return port_;
}

void EventServer::stop() {
  if (!runtime_) return;
  Runtime& rt = *runtime_;
  rt.stopping = true;
  asio::post(rt.loops[0]->context, [&rt] {
    beast::error_code ignored;
    rt.acceptor->close(ignored);  // new connections are refused from here on
    rt.acceptRetry->cancel();
  });
  for (auto& loop : rt.loops) {
    asio::post(loop->context, [&loop = *loop] {
      // drain() may close a session, which then ends outside this walk.
      std::vector<Session*> open(loop.sessions.begin(), loop.sessions.end());
      for (Session* session : open) session->drain();
    });
  }
  {
    // A request already begun may take its read and write timeouts to finish.
    std::unique_lock lock(rt.closedMutex);
    rt.closed.wait_for(lock, options_.readTimeout + options_.writeTimeout + kShutdownWait,
                       [&rt] { return rt.open.load(std::memory_order_relaxed) == 0; });
  }
  for (auto& loop : rt.loops) loop->context.stop();
  for (auto& loop : rt.loops) loop->thread.join();
  const std::uint64_t accepted = rt.accepted.load();
  const std::string address = rt.address;
  runtime_.reset();  // what is still open closes here
  log::info(logger(), "stopped", {{"server", options_.name}, {"address", address}, {"connections", accepted}});
}

std::uint64_t EventServer::connectionsAccepted() const { return runtime_ ? runtime_->accepted.load() : 0; }

std::size_t EventServer::openConnections() const { return runtime_ ? runtime_->open.load() : 0; }

}  // namespace mka::net
