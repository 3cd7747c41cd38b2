#include "mka/common/bounded_read.h"

#include <algorithm>

namespace mka {

std::string readAtMost(std::istream& in, std::size_t limit) {
  // In steps, so a small file costs a small buffer.
  constexpr std::size_t kStep = 64 * 1024;
  std::string out;
  while (in && out.size() <= limit) {
    const std::size_t before = out.size();
    out.resize(before + std::min(kStep, limit + 1 - before));
    in.read(out.data() + before, static_cast<std::streamsize>(out.size() - before));
    out.resize(before + static_cast<std::size_t>(in.gcount()));
  }
  return out;
}

}  // namespace mka
