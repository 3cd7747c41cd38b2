#include "client.h"

#include "../common/process_stats.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <zlib.h>

namespace mka::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string sslErrors() {
  std::string out;
  unsigned long code;
  while ((code = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool gunzip(std::string_view in, std::string& out) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return false;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  out.clear();
  char chunk[4096];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(chunk, sizeof chunk - zs.avail_out);
  } while (rc != Z_STREAM_END);
  inflateEnd(&zs);
  return rc == Z_STREAM_END;
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Busy CPU time of the whole machine (every CPU, every process, steal included).
double machineBusySeconds() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return 0;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait,
                            &irq, &softirq, &steal);
  std::fclose(f);
  if (n < 8) return 0;
  return static_cast<double>(user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double processCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

bool validate(const PhaseSpec& spec, const HttpResult& r, std::string& error) {
  if (r.status != 200) {
    error = "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 300);
    return false;
  }
  if (r.body.find("\"allowed\":true") == std::string::npos) {
    error = "response without \"allowed\":true: " + r.body.substr(0, 300);
    return false;
  }
  if (spec.expectPatch && r.body.find("\"patch\"") == std::string::npos) {
    error = "response without \"patch\": " + r.body.substr(0, 300);
    return false;
  }
  return true;
}

}  // namespace

// ---- ClientTls ----

ClientTls::ClientTls(const std::string& caFile, std::string serverName)
    : ctx_(SSL_CTX_new(TLS_client_method())), serverName_(std::move(serverName)) {
  if (!ctx_) throw std::runtime_error("SSL_CTX_new: " + sslErrors());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  if (SSL_CTX_load_verify_locations(ctx_, caFile.c_str(), nullptr) != 1) {
    std::string e = sslErrors();
    SSL_CTX_free(ctx_);
    throw std::runtime_error("loading CA " + caFile + ": " + e);
  }
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx_, alpn, sizeof alpn);
}

ClientTls::~ClientTls() { SSL_CTX_free(ctx_); }

// ---- Connection ----

Connection::Connection(const ClientTls& tls, std::string host, int port)
    : tls_(tls), host_(std::move(host)), port_(port) {}

Connection::~Connection() { close(); }

bool Connection::open(std::string& error) {
  close();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(port_);
  if (int rc = getaddrinfo(host_.c_str(), port.c_str(), &hints, &res); rc != 0) {
    error = "resolve " + host_ + ": " + gai_strerror(rc);
    return false;
  }
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd_ < 0) continue;
    if (::connect(fd_, ai->ai_addr, ai->ai_addrlen) == 0) break;
    ::close(fd_);
    fd_ = -1;
  }
  freeaddrinfo(res);
  if (fd_ < 0) {
    error = "connect " + host_ + ":" + port + ": " + std::strerror(errno);
    return false;
  }
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const timeval timeout{10, 0};  // a hung server fails the request instead of the benchmark
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);

  ssl_ = SSL_new(tls_.ctx());
  SSL_set_fd(ssl_, fd_);
  SSL_set_tlsext_host_name(ssl_, tls_.serverName().c_str());
  SSL_set1_host(ssl_, tls_.serverName().c_str());
  if (SSL_connect(ssl_) != 1) {
    error = "TLS handshake: " + sslErrors();
    close();
    return false;
  }
  buffer_.clear();
  return true;
}

void Connection::close() {
  if (ssl_) {
    SSL_shutdown(ssl_);
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

std::string Connection::protocol() const {
  if (!ssl_) return "";
  return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
}

bool Connection::fill(std::string& error) {
  char chunk[16384];
  const int n = SSL_read(ssl_, chunk, sizeof chunk);
  if (n <= 0) {
    const int e = SSL_get_error(ssl_, n);
    error = e == SSL_ERROR_ZERO_RETURN ? "server closed the connection"
            : e == SSL_ERROR_SYSCALL   ? std::string("read: ") + (errno ? std::strerror(errno) : "EOF")
                                       : "SSL_read: " + sslErrors();
    return false;
  }
  buffer_.append(chunk, static_cast<std::size_t>(n));
  return true;
}

bool Connection::roundTrip(std::string_view request, HttpResult& result, std::string& error) {
  if (!ssl_) {
    error = "connection not open";
    return false;
  }
  auto failed = [&](std::string message) {
    error = std::move(message);
    close();
    return false;
  };
  ERR_clear_error();
  if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) != static_cast<int>(request.size())) {
    return failed("SSL_write: " + sslErrors());
  }

  std::size_t headerEnd;
  while ((headerEnd = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (buffer_.size() > 64 * 1024) return failed("response headers larger than 64 KiB");
    if (!fill(error)) return failed(error);
  }
  const std::string_view head(buffer_.data(), headerEnd);
  // Status line: HTTP/1.1 200 OK
  const std::size_t sp = head.find(' ');
  if (sp == std::string_view::npos || head.substr(0, 5) != "HTTP/") return failed("bad status line");
  result.status = std::atoi(std::string(head.substr(sp + 1, 3)).c_str());
  result.serverCloses = false;
  result.contentEncoding.clear();
  long long contentLength = -1;
  std::size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos < head.size()) {
    const std::size_t next = head.find("\r\n", pos + 2);
    const std::string_view line =
        head.substr(pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view name = line.substr(0, colon);
      const std::string_view value = trim(line.substr(colon + 1));
      if (equalsIgnoreCase(name, "content-length")) {
        contentLength = std::atoll(std::string(value).c_str());
      } else if (equalsIgnoreCase(name, "connection")) {
        result.serverCloses = equalsIgnoreCase(value, "close");
      } else if (equalsIgnoreCase(name, "content-encoding")) {
        result.contentEncoding = std::string(value);
      } else if (equalsIgnoreCase(name, "transfer-encoding")) {
        return failed("chunked responses are not supported by the benchmark client");
      }
    }
    pos = next;
  }
  if (contentLength < 0) return failed("response without Content-Length");
  const std::size_t total = headerEnd + 4 + static_cast<std::size_t>(contentLength);
  while (buffer_.size() < total) {
    if (!fill(error)) return failed(error);
  }
  const std::string_view raw(buffer_.data() + headerEnd + 4, static_cast<std::size_t>(contentLength));
  result.wireBodyBytes = raw.size();
  if (result.contentEncoding.empty()) {
    result.body.assign(raw);
  } else if (result.contentEncoding == "gzip") {
    if (!gunzip(raw, result.body)) return failed("bad gzip body");
  } else {
    return failed("unexpected Content-Encoding " + result.contentEncoding);
  }
  buffer_.erase(0, total);
  if (result.serverCloses) close();
  return true;
}

std::string buildRequest(std::string_view path, std::string_view hostHeader, std::string_view body, bool acceptGzip) {
  std::string r;
  r.reserve(body.size() + 256);
  r += "POST ";
  r += path;
  r += "?timeout=10s HTTP/1.1\r\nHost: ";
  r += hostHeader;
  r += "\r\nUser-Agent: kube-apiserver-admission\r\nContent-Type: application/json\r\n"
       "Accept: application/json, */*\r\n";
  if (acceptGzip) r += "Accept-Encoding: gzip\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  r += body;
  return r;
}

// ---- phases ----

double percentileMs(const std::vector<std::int64_t>& sortedNs, double p) {
  if (sortedNs.empty()) return 0;
  const auto n = sortedNs.size();
  std::size_t rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  return static_cast<double>(sortedNs[rank - 1]) / 1e6;
}

double PhaseResult::percentileMs(double p) const { return bench::percentileMs(latenciesNs, p); }

PhaseResult runPhase(const PhaseSpec& spec, std::vector<std::unique_ptr<Connection>>& connections) {
  struct PerThread {
    std::vector<std::int64_t> latencies;
    std::vector<std::int64_t> late;
    std::uint64_t ok = 0, errors = 0, reconnects = 0;
    double cpu = 0;
    std::string firstError;
  };
  const std::size_t n = connections.size();
  std::vector<PerThread> per(n);
  // Every thread starts at the same instant, once all of them exist.
  const auto start = Clock::now() + std::chrono::milliseconds(50);
  const auto end = start + spec.duration;
  const double interval = spec.mode == Mode::OpenLoop ? static_cast<double>(n) * 1e9 / spec.rate : 0;  // ns

  auto work = [&](std::size_t index) {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake up on schedule, not up to 50 us late
    pthread_setname_np(pthread_self(), ("client-" + std::to_string(index % 1000)).c_str());  // for profiles
    PerThread& me = per[index];
    Connection& conn = *connections[index];
    const double expected =
        spec.duration.count() * 1e-9 * (spec.mode == Mode::OpenLoop ? spec.rate / static_cast<double>(n) : 50000.0);
    me.latencies.reserve(static_cast<std::size_t>(std::min(expected, 4e6)) + 16);
    if (spec.mode == Mode::OpenLoop) me.late.reserve(static_cast<std::size_t>(std::min(expected, 4e6)) + 16);
    HttpResult result;
    std::string error;
    auto note = [&](std::string message) {
      ++me.errors;
      if (me.firstError.empty()) me.firstError = std::move(message);
    };
    auto once = [&](Clock::time_point from) {
      if (!conn.isOpen()) {
        ++me.reconnects;
        if (!conn.open(error)) {
          note(error);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          return;
        }
      }
      if (!conn.roundTrip(spec.request, result, error)) {
        note(error);
        return;
      }
      const auto done = Clock::now();
      if (!validate(spec, result, error)) {
        note(error);
        return;
      }
      ++me.ok;
      me.latencies.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(done - from).count());
    };

    std::this_thread::sleep_until(start);
    const double cpu0 = threadCpuSeconds();
    if (spec.mode == Mode::ClosedLoop) {
      for (auto now = Clock::now(); now < end; now = Clock::now()) once(now);
    } else {
      const double offset = interval * static_cast<double>(index) / static_cast<double>(n);
      for (std::uint64_t k = 0;; ++k) {
        const auto scheduled =
            start + std::chrono::nanoseconds(static_cast<std::int64_t>(offset + interval * static_cast<double>(k)));
        if (scheduled >= end) break;
        if (Clock::now() < scheduled) {
          std::this_thread::sleep_until(scheduled);
          // Timer and scheduler lateness of the load generator itself (not queueing behind a
          // slow answer, which the latency rightly charges to the server).
          me.late.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - scheduled).count());
        }
        once(scheduled);
      }
    }
    me.cpu = threadCpuSeconds() - cpu0;
  };

  const double machine0 = machineBusySeconds();
  const double process0 = processCpuSeconds();
  const double peer0 = spec.serverPid != 0 ? statsOf(spec.serverPid).cpuSeconds : 0;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t i = 0; i < n; ++i) threads.emplace_back(work, i);
  for (auto& t : threads) t.join();
  const auto finished = Clock::now();
  const double process1 = processCpuSeconds();
  const double peer1 = spec.serverPid != 0 ? statsOf(spec.serverPid).cpuSeconds : 0;
  const double machine1 = machineBusySeconds();

  PhaseResult out;
  out.spec = spec;
  out.connections = n;
  // Closed loop: until the last in-flight request came back. Open loop: the schedule's window
  // (requests scheduled in it are counted, however late they finish).
  out.seconds = spec.mode == Mode::ClosedLoop ? std::chrono::duration<double>(finished - start).count()
                                              : std::chrono::duration<double>(spec.duration).count();
  out.processCpuSeconds = process1 - process0;
  out.machineBusySeconds = machine1 - machine0;
  out.peerCpuSeconds = peer1 - peer0;
  for (auto& p : per) {
    out.ok += p.ok;
    out.errors += p.errors;
    out.reconnects += p.reconnects;
    out.clientCpuSeconds += p.cpu;
    if (out.firstError.empty()) out.firstError = p.firstError;
    out.latenciesNs.insert(out.latenciesNs.end(), p.latencies.begin(), p.latencies.end());
    out.sendLateNs.insert(out.sendLateNs.end(), p.late.begin(), p.late.end());
  }
  std::sort(out.latenciesNs.begin(), out.latenciesNs.end());
  std::sort(out.sendLateNs.begin(), out.sendLateNs.end());
  return out;
}

}  // namespace mka::bench
