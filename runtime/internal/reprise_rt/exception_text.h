#pragma once
// What an exception says, whatever was thrown (a task or a top-level function may throw
// anything, not only a std::exception): the one wording every error report uses.
#include <exception>
#include <string>

namespace reprise::detail {

inline std::string exception_text(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
  }
  return "an exception not derived from std::exception";
}

}  // namespace reprise::detail
