#include "mka/common/thread_name.h"

#include <pthread.h>

#include <algorithm>

namespace mka {

void nameThisThread(std::string_view name) {
  std::size_t length = std::min(name.size(), kThreadNameMax);
  // Back up over UTF-8 continuation bytes so a multi-byte character is not split.
  if (length < name.size())
    while (length > 0 && (static_cast<unsigned char>(name[length]) & 0xC0) == 0x80) --length;
  const std::string cut(name.substr(0, length));
  ::pthread_setname_np(::pthread_self(), cut.c_str());
}

std::string thisThreadName() {
  char buffer[kThreadNameMax + 1] = {};
  if (::pthread_getname_np(::pthread_self(), buffer, sizeof buffer) != 0) return "";
  return buffer;
}

}  // namespace mka
