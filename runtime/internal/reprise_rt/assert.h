#pragma once
// REPRISE_ASSERT(cond, "sentence"): an invariant of the runtime, stated as the sentence that
// holds. Checked in Debug and sanitizer builds (and wherever REPRISE_ASSERTS is defined);
// compiled out of Release builds, where it costs nothing on the launch path. A broken
// invariant is a bug of the runtime, not of the program: it aborts with the sentence.
#include <cstdio>
#include <cstdlib>

#if !defined(NDEBUG) || defined(REPRISE_ASSERTS)
#define REPRISE_ASSERT(cond, sentence)                                                     \
  do {                                                                                     \
    if (!(cond)) ::reprise::detail::assertion_failed(#cond, sentence, __FILE__, __LINE__); \
  } while (0)
#else
#define REPRISE_ASSERT(cond, sentence) \
  do {                                 \
  } while (0)
#endif

namespace reprise::detail {

[[noreturn]] inline void assertion_failed(const char* cond, const char* sentence, const char* file,
                                          int line) {
  std::fprintf(stderr, "reprise: internal error at %s:%d: %s (%s does not hold)\n", file, line,
               sentence, cond);
  std::fflush(stderr);
  std::abort();
}

}  // namespace reprise::detail
