#pragma once
// Levelled logging through fmt; quiet by default (warnings and errors only).
#include <fmt/core.h>

#include <cstdio>
#include <string_view>

namespace reprise::detail {

enum class LogLevel : int { Spew = 0, Debug = 1, Info = 2, Print = 3, Warning = 4, Error = 5 };

LogLevel log_level();
void set_log_level(LogLevel level);
void log_write(LogLevel level, std::string_view msg);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (level < log_level()) return;
  log_write(level, fmt::format(f, std::forward<Args>(args)...));
}
#define REPRISE_LOG_DEBUG(...) \
  ::reprise::detail::log(::reprise::detail::LogLevel::Debug, __VA_ARGS__)
#define REPRISE_LOG_INFO(...) ::reprise::detail::log(::reprise::detail::LogLevel::Info, __VA_ARGS__)
#define REPRISE_LOG_WARN(...) \
  ::reprise::detail::log(::reprise::detail::LogLevel::Warning, __VA_ARGS__)

}  // namespace reprise::detail
