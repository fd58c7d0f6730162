#pragma once
// Levelled logging through fmt, by category; quiet by default (warnings and errors only).
// Each line names the shard, the thread and the time since start, so that the lines of a run
// under mpirun can be told apart and merged:
//   [reprise s1 t3 0.012345 warning ctrlrepl] message
// Lines go to stderr, or to a file per shard (-logfile, `%` becomes the shard number).
#include <fmt/core.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reprise::detail {

enum class LogLevel : int { Spew = 0, Debug = 1, Info = 2, Print = 3, Warning = 4, Error = 5 };

enum class LogCategory : std::uint8_t {
  Runtime,
  Analysis,
  Tracing,    // manual traces: recording and replay
  AutoTrace,  // automatic trace identification
  CtrlRepl,   // control replication: messages between shards, their checks
  Gpu,
  Count
};
constexpr int kLogCategories = int(LogCategory::Count);
const char* to_string(LogCategory c);
std::optional<LogCategory> log_category(std::string_view name);

LogLevel log_level(LogCategory c);
void set_log_level(LogLevel level);  // every category
void set_log_level(LogCategory c, LogLevel level);
// Where lines go from now on: the shard written in the prefix, and a file (empty: stderr;
// `%` in the name becomes the shard number). Throws reprise::Error if the file cannot be
// opened.
void set_log_output(std::uint32_t shard, const std::string& file);
// A file name per shard: `%` in pattern becomes the shard number (-logfile, -lg:prof).
std::string shard_file(const std::string& pattern, std::uint32_t shard);
void log_write(LogLevel level, LogCategory c, std::string_view msg);
// How log lines name the calling thread (app, util, cpu0, mpi, ...; otherwise t<number>).
void set_log_thread_name(std::string name);
const std::string& log_thread_name();

template <typename... Args>
void log(LogLevel level, LogCategory c, fmt::format_string<Args...> f, Args&&... args) {
  if (level < log_level(c)) return;
  log_write(level, c, fmt::format(f, std::forward<Args>(args)...));
}
#define REPRISE_LOG_DEBUG(cat, ...) \
  ::reprise::detail::log(::reprise::detail::LogLevel::Debug, ::reprise::detail::cat, __VA_ARGS__)
#define REPRISE_LOG_INFO(cat, ...) \
  ::reprise::detail::log(::reprise::detail::LogLevel::Info, ::reprise::detail::cat, __VA_ARGS__)
#define REPRISE_LOG_WARN(cat, ...) \
  ::reprise::detail::log(::reprise::detail::LogLevel::Warning, ::reprise::detail::cat, __VA_ARGS__)

}  // namespace reprise::detail
