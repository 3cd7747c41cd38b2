#pragma once
// Listening sockets shared by the net module's servers (HttpServer, EventServer), so both
// bind, refuse a taken port and name the address in their errors the same way.

#include <string>

namespace mka::net {

// "host:port" as a log shows it: ":port" for all interfaces, brackets around IPv6.
std::string displayAddress(const std::string& host, int port);
// A non-blocking listening socket for host:port. Empty host: all interfaces, IPv6 dual-stack
// when the machine has IPv6, else IPv4. Throws mka::Error naming `name`'s server, the address,
// the reason and the fix.
int listenOn(const std::string& name, const std::string& host, int port);
// The port a bound socket listens on, or -1.
int boundPort(int fd);

}  // namespace mka::net
