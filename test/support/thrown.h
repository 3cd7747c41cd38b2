#pragma once
// What a call throws, for tests that inspect an error instead of only expecting one.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace mka::test {

// The exception of type E that `f` throws. When `f` throws nothing the test fails, and a
// std::logic_error ends it (there is no error to inspect).
template <class E, class F>
E thrownBy(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e;
  }
  ADD_FAILURE() << "expected an exception, but nothing was thrown";
  throw std::logic_error("expected an exception, but nothing was thrown");
}

// The message of the E that `f` throws, or "" when it throws nothing (for tests where not
// throwing is an outcome to compare, not a failure).
template <class E, class F>
std::string messageOf(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace mka::test
