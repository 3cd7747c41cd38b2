#pragma once
// Connections that end during a TLS server's handshake, and the record the server's "net" logger
// writes about each: one that closes is a probe or a client giving up (debug), one that sends
// what TLS refuses is worth an info record.

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/eventually.h"
#include "support/log_capture.h"
#include "support/ports.h"

namespace mka::test {

struct HandshakeCase {
  std::string name;
  std::string bytes;    // sent before the client closes
  std::string level;    // of the record
  std::string message;  // of the record
};

inline const std::vector<HandshakeCase>& handshakeCases() {
  static const std::vector<HandshakeCase> cases = {
      {"a TCP probe", "", "level=debug", "TLS handshake aborted by peer"},
      {"a ClientHello cut short", std::string("\x16\x03\x01\x00\x40\x01", 6), "level=debug",
       "TLS handshake aborted by peer"},
      {"plain HTTP", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "level=info", "TLS handshake failed"},
  };
  return cases;
}

// Sends `bytes` to 127.0.0.1:`port` and closes the connection.
inline void sendAndClose(int port, const std::string& bytes) {
  const int fd = connectLoopback(port);
  const auto sent = bytes.empty() ? 0 : ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  ::close(fd);
  EXPECT_EQ(sent, static_cast<ssize_t>(bytes.size()));
}

// Plays every case against the TLS server on `port` and checks the record `logs` (a capture of
// the "net" logger) receives for each, naming the client's address.
inline void expectHandshakeRecords(int port, const LogCapture& logs) {
  for (const auto& c : handshakeCases()) {
    SCOPED_TRACE(c.name);
    const auto before = logs.linesWith("TLS handshake").size();
    sendAndClose(port, c.bytes);
    ASSERT_TRUE(eventually([&] { return logs.linesWith("TLS handshake").size() == before + 1; }));
    const std::string record = logs.linesWith("TLS handshake").back();
    EXPECT_NE(record.find(c.level), std::string::npos) << record;
    EXPECT_NE(record.find(c.message), std::string::npos) << record;
    EXPECT_NE(record.find("peer=127.0.0.1:"), std::string::npos) << record;
  }
}

}  // namespace mka::test
