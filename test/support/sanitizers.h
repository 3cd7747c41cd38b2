#pragma once
// Which sanitizer this test binary runs under, for the few load tests that scripts/test.sh's
// ThreadSanitizer pass leaves out: they add minutes under TSan and run no thread that the other
// tests of their suite do not already run (they run under ASan).

namespace mka::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kUnderThreadSanitizer = true;
#else
inline constexpr bool kUnderThreadSanitizer = false;
#endif
#else
inline constexpr bool kUnderThreadSanitizer = false;
#endif

}  // namespace mka::test
