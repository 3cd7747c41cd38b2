#pragma once
// Naming the calling thread, for `top -H`, `perf` and `/proc/<pid>/task/*/comm`.
//
// Threads: names the calling thread only.

#include <cstddef>
#include <string>
#include <string_view>

namespace mka {

// Linux keeps at most 15 bytes of a thread's name; longer names are cut to that.
inline constexpr std::size_t kThreadNameMax = 15;

// Names the calling thread `name`, cut to kThreadNameMax bytes (never in the middle of a
// UTF-8 character). Naming is best effort: a failure is ignored, as nothing depends on it.
void nameThisThread(std::string_view name);

// The calling thread's name ("" when it cannot be read). For tests and logs.
std::string thisThreadName();

}  // namespace mka
