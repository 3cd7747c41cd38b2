#include "mka/net/event_server.h"

// Beast's string_view is std::string_view in this file, the only one that includes Beast.
#define BOOST_BEAST_USE_STD_STRING_VIEW 1

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/optional.hpp>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "listen.h"
#include "log.h"
#include "mka/common/errors.h"
#include "mka/common/thread_name.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/openssl.h"
#include "mka/net/record_buffers.h"

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
// Record buffers a loop keeps for reuse: a read and a write buffer for the connection it is
// driving, and room for one more connection's.
constexpr std::size_t kRecordBuffersPerLoop = 4;

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

// The client's address as the connection was accepted: a client that has gone (a probe that
// closed) has none left to ask for when the record is written.
tcp::endpoint peerEndpoint(const tcp::socket& socket) {
  beast::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  return ec ? tcp::endpoint{} : endpoint;
}

std::string peerOf(const tcp::endpoint& endpoint) {
  if (endpoint.port() == 0) return "unknown";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

bool methodHasBody(std::string_view method) { return method == "POST" || method == "PUT" || method == "PATCH"; }

class Session;

// One event loop: its thread is the only one that runs its handlers, so what it owns (the
// sessions' state, `sessions`, the buffers) needs no lock.
struct Loop {
  std::unordered_set<Session*> sessions;  // destroyed after `context`, whose handlers hold sessions
  // What the connection being driven has read and not yet parsed. The loop drives one
  // connection at a time, and a connection that must wait takes its few unparsed bytes with
  // it, so one 16 KB buffer serves all of them instead of one per connection.
  beast::flat_buffer input;
  char scratch[4096];  // a refused request's unread body is read into this and dropped
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
  OpensslPtr<SSL_CTX> tls;
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
// OpenSSL reads and writes the socket itself; the loop only says when the socket is ready. An
// idle connection holds only its SSL (whose record buffers OpenSSL gives back while it waits)
// and its parse and answer strings: it reads into its loop's buffer.
class Session final : public std::enable_shared_from_this<Session> {
 public:
  Session(EventServer::Runtime& runtime, Loop& loop, tcp::socket socket)
      : rt_(runtime), loop_(loop), socket_(std::move(socket)), peer_(peerEndpoint(socket_)) {}

  ~Session() {
    loop_.sessions.erase(this);
    rt_.connectionClosed();
  }

  void start() {
    if (rt_.stopping) return;
    loop_.sessions.insert(this);
    beast::error_code ec;
    socket_.non_blocking(true, ec);
    ssl_.reset(SSL_new(rt_.tls.get()));
    if (ec || !ssl_ || SSL_set_fd(ssl_.get(), socket_.native_handle()) != 1) {
      log::error(logger(), "cannot create TLS session",
                 {{"server", rt_.options.name}, {"error", ec ? ec.message() : opensslErrors()}});
      return closeSocket();
    }
    SSL_set_accept_state(ssl_.get());
    state_ = State::Handshake;
    expireAfter(rt_.options.readTimeout);
    drive();
  }

  // The loop's sweep: a session past its deadline (the phase's timeout) is closed.
  void closeIfExpired(std::chrono::steady_clock::time_point now) {
    if (now >= deadline_) closeSocket();
  }

  // stop() asks: a connection waiting for its next request (or still shaking hands) closes
  // now; one in the middle of a request answers it first, with "Connection: close".
  void drain() {
    closeAfter_ = true;
    if (state_ == State::Handshake || state_ == State::Idle) closeSocket();
  }

 private:
  enum class State { Handshake, Idle, Reading, Writing, Closed };
  enum class Then { NextRequest, Close, Linger, Continue };

  // Moves the connection on until it must wait for the socket, or closes it: handshake, then
  // parse what is buffered, answer, write, read more. One loop, so that pipelined requests are
  // answered without recursion.
  void drive() {
    const Input input(*this);
    if (state_ == State::Handshake && !handshake()) return;
    for (;;) {
      if (state_ == State::Closed) return;
      if (state_ == State::Writing) {
        if (!flush() || !afterWrite()) return;
        continue;
      }
      if (parseBuffered()) continue;  // an answer (or a refusal) is ready to write
      if (!readSome()) return;
    }
  }

  // Puts the connection's unparsed bytes into the loop's buffer for drive(), and takes back
  // what is left when drive() returns.
  class Input {
   public:
    explicit Input(Session& session) : session_(session) {
      std::string& spill = session_.spill_;
      if (spill.empty()) return;
      auto space = session_.loop_.input.prepare(spill.size());
      std::memcpy(space.data(), spill.data(), spill.size());
      session_.loop_.input.commit(spill.size());
      spill.clear();
      spill.shrink_to_fit();
    }
    ~Input() {
      beast::flat_buffer& input = session_.loop_.input;
      if (input.size() > 0 && session_.state_ != State::Closed)
        session_.spill_.assign(static_cast<const char*>(input.data().data()), input.size());
      input.consume(input.size());
      if (input.capacity() > kKeptCapacity) input.shrink_to_fit();
    }
    Input(const Input&) = delete;
    Input& operator=(const Input&) = delete;

   private:
    Session& session_;
  };

  bool handshake() {
    ERR_clear_error();
    const int result = SSL_do_handshake(ssl_.get());
    if (result == 1) {
      beginRequest();
      return true;
    }
    const int error = SSL_get_error(ssl_.get(), result);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      waitFor(error);
      return false;
    }
    logFailedHandshake(rt_.options.name, peerOf(peer_));
    closeSocket();
    return false;
  }

  // Resumes drive() once the socket can be read (or written, as OpenSSL asks). Only ever
  // called after OpenSSL met EAGAIN, so the readiness edge that ends the wait is still to come.
  void waitFor(int sslError) {
    const auto what = sslError == SSL_ERROR_WANT_WRITE ? tcp::socket::wait_write : tcp::socket::wait_read;
    socket_.async_wait(what, [self = shared_from_this()](beast::error_code ec) {
      if (ec || self->state_ == State::Closed) return;  // closed by the sweep, drain() or stop()
      self->drive();
    });
  }

  void beginRequest() {
    head_.clear();
    parser_.emplace(head_);
    parser_->header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(rt_.options.maxHeaderBytes, UINT32_MAX)));
    parser_->body_limit(static_cast<std::uint64_t>(rt_.options.maxBodyBytes));
    headChecked_ = false;
    requestStarted_ = false;
    state_ = State::Reading;
  }

  // Parses what the buffer holds. True when an answer is ready to write (state_ Writing).
  bool parseBuffered() {
    while (buffer_.size() > 0) {
      beast::error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) return false;
      if (ec) {
        refuseMalformed(ec);
        return true;
      }
      if (parser_->is_header_done() && !headChecked_) {
        headChecked_ = true;
        if (!checkHead()) return true;
      }
      if (parser_->is_done()) {
        answer();
        return true;
      }
    }
    return false;
  }

  // Reads what the socket holds into the buffer. False when it must wait (or closed).
  bool readSome() {
    const bool idle = !parser_->got_some() && buffer_.size() == 0;
    if (idle && closeAfter_) {
      closeSocket();
      return false;
    }
    if (idle) {
      if (state_ != State::Idle) {
        state_ = State::Idle;
        // A new connection's client sends its request right away; later ones may idle.
        expireAfter(served_ == 0 ? rt_.options.readTimeout : rt_.options.keepAliveTimeout);
      }
    } else if (!requestStarted_) {
      // The request's whole reading, from its first byte, has the read timeout.
      requestStarted_ = true;
      state_ = State::Reading;
      expireAfter(rt_.options.readTimeout);
    }
    const auto space = buffer_.prepare(kReadChunk);
    std::size_t n = 0;
    ERR_clear_error();
    if (SSL_read_ex(ssl_.get(), space.data(), space.size(), &n) == 1) {
      buffer_.commit(n);
      return true;
    }
    waitOrClose(SSL_get_error(ssl_.get(), 0));
    return false;
  }

  // After a read or write OpenSSL could not complete: wait for the socket, or close when the
  // client closed (with or without close_notify), reset, or sent what TLS refuses; an
  // unfinished request or answer has no one left to receive it.
  void waitOrClose(int sslError) {
    if (sslError == SSL_ERROR_WANT_READ || sslError == SSL_ERROR_WANT_WRITE) return waitFor(sslError);
    ERR_clear_error();
    closeSocket();
  }

  // The server's own refusals of a head, before its body is read. False when an answer (a
  // refusal, or the interim 100 Continue) is to be written instead of reading on.
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
      startWrite(Then::Continue);
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
              {{"server", rt_.options.name}, {"peer", peerOf(peer_)}, {"status", status}, {"reason", message}});
    render(status, message);
    serialize(true, false);
    startWrite(Then::Linger);
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
    startWrite(close ? Then::Close : Then::NextRequest);
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

  void startWrite(Then then) {
    state_ = State::Writing;
    then_ = then;
    written_ = 0;
    expireAfter(rt_.options.writeTimeout);
  }

  // Writes what is left of out_. False when it must wait (or closed).
  bool flush() {
    while (written_ < out_.size()) {
      std::size_t n = 0;
      ERR_clear_error();
      // Retried with the same buffer after a wait, as OpenSSL requires; out_ does not move.
      if (SSL_write_ex(ssl_.get(), out_.data() + written_, out_.size() - written_, &n) == 1) {
        written_ += n;
        continue;
      }
      waitOrClose(SSL_get_error(ssl_.get(), 0));
      return false;
    }
    return true;
  }

  // What follows a written answer. False when the connection closes.
  bool afterWrite() {
    switch (then_) {
      case Then::Continue:
        state_ = State::Reading;
        expireAfter(rt_.options.readTimeout);
        return true;
      case Then::NextRequest:
        if (closeAfter_) break;  // stop() began while the answer was on its way
        beginRequest();
        return true;
      case Then::Close: break;
      case Then::Linger: linger(); return false;
    }
    sendCloseNotify();
    closeSocket();
    return false;
  }

  // Best effort, without waiting for the client's own: the answer carried its length (and said
  // "Connection: close"), so the client already has all of it.
  void sendCloseNotify() {
    ERR_clear_error();
    SSL_shutdown(ssl_.get());
    ERR_clear_error();
  }

  // Stops sending and reads whatever the client still sends, briefly, so that closing does not
  // reset the connection under the answer.
  void linger() {
    sendCloseNotify();
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return closeSocket();
    state_ = State::Reading;  // not Idle: drain() leaves it to its deadline
    expireAfter(kLinger);
    discardInput();
  }

  void discardInput() {
    for (;;) {
      const ssize_t n = ::recv(socket_.native_handle(), loop_.scratch, sizeof loop_.scratch, 0);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return closeSocket();  // the client closed, or the connection broke
    }
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      if (ec || self->state_ == State::Closed) return;
      self->discardInput();
    });
  }

  void closeSocket() {
    state_ = State::Closed;
    deadline_ = std::chrono::steady_clock::time_point::max();
    beast::error_code ec;
    socket_.close(ec);  // pending waits end with operation_aborted, releasing the session
  }

  void expireAfter(std::chrono::milliseconds timeout) { deadline_ = std::chrono::steady_clock::now() + timeout; }

  EventServer::Runtime& rt_;
  Loop& loop_;
  tcp::socket socket_;
  tcp::endpoint peer_;
  OpensslPtr<SSL> ssl_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  beast::flat_buffer& buffer_ = loop_.input;  // this connection's while drive() runs
  std::string spill_;                         // unparsed bytes kept while it waits
  RequestHead head_;
  std::optional<RequestParser> parser_;
  ServerResponse response_;
  std::string out_;
  std::size_t written_ = 0;
  Then then_ = Then::NextRequest;
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

std::size_t eventLoopsFor(unsigned cpus) { return std::clamp<std::size_t>(2 * std::size_t{cpus}, 2, 8); }

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
  rt->tls.reset(SSL_CTX_new(TLS_server_method()));
  if (!rt->tls) throw Error(options_.name + " server: cannot create a TLS context: " + opensslErrors());
  SSL_CTX* ctx = rt->tls.get();
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // An idle keep-alive connection gives its 33 KB of TLS record buffers back; kube-apiserver
  // keeps one connection per concurrent call open.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  // A request's records come in one read() rather than a header read and a record read each.
  SSL_CTX_set_read_ahead(ctx, 1);
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
      // OpenSSL writes the socket with write(2), which raises SIGPIPE when the client has
      // gone; blocked on this thread, the signal stays pending and write(2) returns EPIPE.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      // A loop reads and writes a record or two per request, each in a buffer OpenSSL takes
      // and gives back; a few kept here serve them all (see record_buffers.h).
      RecordBufferCache recordBuffers(kRecordBuffersPerLoop);
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
            {{"server", options_.name},
             {"address", runtime_->address},
             {"tls", true},
             {"threads", options_.threads},
             {"recordBufferReuse", opensslAllocatorInstalled()}});
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
    rt.closed.wait_for(lock, options_.readTimeout + options_.writeTimeout + kLinger,
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
