#pragma once
// The load generator: persistent HTTP/1.1 keep-alive connections over TLS, one blocking OpenSSL
// client per connection, each on its own thread. A deliberately small client (one SSL_write per
// request, a minimal response parser) so that as much of the machine as possible is left to the
// server under test.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace mka::bench {

struct HttpResult {
  int status = 0;
  std::string body;  // decoded (gunzipped when the server compressed it)
  std::string contentEncoding;
  std::size_t wireBodyBytes = 0;  // as sent (before gunzip)
  bool serverCloses = false;      // "Connection: close" in the response
};

// TLS client settings shared by every connection.
class ClientTls {
 public:
  ClientTls(const std::string& caFile, std::string serverName);
  ~ClientTls();
  ClientTls(const ClientTls&) = delete;
  ClientTls& operator=(const ClientTls&) = delete;
  SSL_CTX* ctx() const { return ctx_; }
  const std::string& serverName() const { return serverName_; }

 private:
  SSL_CTX* ctx_;
  std::string serverName_;
};

class Connection {
 public:
  Connection(const ClientTls& tls, std::string host, int port);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // TCP connect + TLS handshake with certificate verification. false and `error` on failure.
  bool open(std::string& error);
  void close();
  bool isOpen() const { return ssl_ != nullptr; }
  // Writes `request` (a complete HTTP/1.1 request) and reads one response. false and `error`
  // on a transport or framing failure; the connection is then closed.
  bool roundTrip(std::string_view request, HttpResult& result, std::string& error);
  std::string protocol() const;  // "TLSv1.3 TLS_AES_256_GCM_SHA384"

 private:
  bool fill(std::string& error);  // reads more bytes into buffer_

  const ClientTls& tls_;
  std::string host_;
  int port_;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string buffer_;
};

// Builds the request kube-apiserver would send for a webhook at `path`.
std::string buildRequest(std::string_view path, std::string_view hostHeader, std::string_view body, bool acceptGzip);

// ---- load phases ----

enum class Mode { ClosedLoop, OpenLoop };

struct PhaseSpec {
  std::string endpoint;  // label for the report
  Mode mode = Mode::ClosedLoop;
  std::chrono::nanoseconds duration{std::chrono::seconds{5}};
  double rate = 0;  // OpenLoop: requests per second over all connections
  std::string request;
  bool expectPatch = false;  // /mutate: the body must carry "patch"
  int serverPid = 0;         // a server in another process (the Go peer): its CPU is measured too
};

struct PhaseResult {
  PhaseSpec spec;
  std::size_t connections = 0;
  double seconds = 0;  // wall time of the measured window
  std::uint64_t ok = 0;
  std::uint64_t errors = 0;
  std::uint64_t reconnects = 0;
  std::string firstError;
  std::vector<std::int64_t> latenciesNs;  // of successful requests, sorted
  double processCpuSeconds = 0;           // whole process (server + client) during the phase
  double clientCpuSeconds = 0;            // the load-generator threads only
  double peerCpuSeconds = 0;              // the server process of spec.serverPid, when set
  double machineBusySeconds = 0;          // all CPUs, every process (/proc/stat), to see other load
  std::vector<std::int64_t> sendLateNs;   // OpenLoop: wake-up time - scheduled time, when the sender slept; sorted

  double requestsPerSecond() const { return seconds > 0 ? static_cast<double>(ok) / seconds : 0; }
  // Nearest-rank percentile in milliseconds (p in [0, 1]); 0 when there are no samples.
  double percentileMs(double p) const;
  // CPU seconds of the server under test: its own process, or this one minus the load generator.
  double serverCpuSeconds() const {
    if (spec.serverPid != 0) return peerCpuSeconds;
    return processCpuSeconds > clientCpuSeconds ? processCpuSeconds - clientCpuSeconds : 0;
  }
  // CPU seconds used by other processes on the machine during the phase.
  double otherCpuSeconds() const {
    const double ours = processCpuSeconds + peerCpuSeconds;
    return machineBusySeconds > ours ? machineBusySeconds - ours : 0;
  }
};

// Nearest-rank percentile of sorted nanosecond samples, in milliseconds.
double percentileMs(const std::vector<std::int64_t>& sortedNs, double p);

// Runs one phase over `connections` (reopening any that fail) and returns its figures.
// ClosedLoop: each connection sends its next request as soon as the previous answer arrives;
// latency is send -> full response. OpenLoop: each connection follows a fixed schedule of
// rate/connections requests per second (connections staggered evenly); latency is measured
// from the *scheduled* send time, so a stalled server is charged for the requests queued
// behind the stall (no coordinated omission).
PhaseResult runPhase(const PhaseSpec& spec, std::vector<std::unique_ptr<Connection>>& connections);

}  // namespace mka::bench
