#pragma once
// Reading a stream whose size nobody checked (a file that may be a device, a pipe or simply too
// large) without ever holding more than a limit.
//
// Threads: a pure function over the caller's stream.

#include <cstddef>
#include <istream>
#include <string>

namespace mka {

// At most `limit + 1` bytes of `in`: a result longer than `limit` means the stream holds more.
std::string readAtMost(std::istream& in, std::size_t limit);

}  // namespace mka
