#include "reprise_rt/log.h"

#include <atomic>
#include <mutex>

namespace reprise::detail {

namespace {
std::atomic<int> g_level{int(LogLevel::Warning)};
std::mutex g_write_mutex;
const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Spew:
      return "spew";
    case LogLevel::Debug:
      return "debug";
    case LogLevel::Info:
      return "info";
    case LogLevel::Print:
      return "print";
    case LogLevel::Warning:
      return "warning";
    case LogLevel::Error:
      return "error";
  }
  return "?";
}
}  // namespace

LogLevel log_level() {
  return LogLevel(g_level.load(std::memory_order_relaxed));
}
void set_log_level(LogLevel level) {
  g_level.store(int(level), std::memory_order_relaxed);
}

void log_write(LogLevel level, std::string_view msg) {
  std::lock_guard<std::mutex> g(g_write_mutex);
  fmt::print(stderr, "[reprise {}] {}\n", level_name(level), msg);
}

}  // namespace reprise::detail
