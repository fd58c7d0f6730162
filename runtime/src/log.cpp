#include "reprise_rt/log.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "reprise/error.h"

namespace reprise::detail {

namespace {
constexpr int kDefaultLevel = int(LogLevel::Warning);
static_assert(kLogCategories == 6, "one initial level per category");
std::array<std::atomic<int>, kLogCategories> g_levels{kDefaultLevel, kDefaultLevel, kDefaultLevel,
                                                      kDefaultLevel, kDefaultLevel, kDefaultLevel};
std::mutex g_write_mutex;
std::FILE* g_file = nullptr;  // null: stderr
std::uint32_t g_shard = 0;
std::atomic<int> g_next_thread{0};
const auto g_start = std::chrono::steady_clock::now();

const char* level_name(LogLevel l) {
  static const char* names[] = {"spew", "debug", "info", "print", "warning", "error"};
  return names[int(l)];
}
constexpr const char* kCategoryNames[kLogCategories] = {"runtime",    "analysis", "tracing",
                                                        "auto_trace", "ctrlrepl", "gpu"};
thread_local std::string t_name;
const std::string& thread_name_or_number() {
  if (t_name.empty())
    t_name = fmt::format("t{}", g_next_thread.fetch_add(1, std::memory_order_relaxed));
  return t_name;
}
}  // namespace

const char* to_string(LogCategory c) {
  return kCategoryNames[int(c)];
}

std::optional<LogCategory> log_category(std::string_view name) {
  for (int i = 0; i < kLogCategories; ++i)
    if (name == kCategoryNames[i]) return LogCategory(i);
  return std::nullopt;
}

LogLevel log_level(LogCategory c) {
  return LogLevel(g_levels[int(c)].load(std::memory_order_relaxed));
}
void set_log_level(LogLevel level) {
  for (auto& l : g_levels) l.store(int(level), std::memory_order_relaxed);
}
void set_log_level(LogCategory c, LogLevel level) {
  g_levels[int(c)].store(int(level), std::memory_order_relaxed);
}

void set_log_output(std::uint32_t shard, const std::string& file) {
  std::lock_guard<std::mutex> g(g_write_mutex);
  g_shard = shard;
  if (g_file) std::fclose(g_file);
  g_file = nullptr;
  if (file.empty()) return;
  const std::string path = shard_file(file, shard);
  g_file = std::fopen(path.c_str(), "w");
  if (!g_file) throw Error(fmt::format("-logfile: cannot open '{}' for writing", path));
}

std::string shard_file(const std::string& pattern, std::uint32_t shard) {
  std::string path;
  for (char ch : pattern) path += ch == '%' ? std::to_string(shard) : std::string(1, ch);
  return path;
}

void set_log_thread_name(std::string name) {
  // The runtime's own threads carry the name for the system too (top -H, gdb, perf); the
  // application's thread keeps the program's name.
  if (name != "app") pthread_setname_np(pthread_self(), ("rp-" + name).substr(0, 15).c_str());
  t_name = std::move(name);
}
const std::string& log_thread_name() {
  return thread_name_or_number();
}

void log_write(LogLevel level, LogCategory c, std::string_view msg) {
  const double t =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
  const std::string& thread = thread_name_or_number();
  std::lock_guard<std::mutex> g(g_write_mutex);
  std::FILE* out = g_file ? g_file : stderr;
  fmt::print(out, "[reprise s{} {} {:.6f} {} {}] {}\n", g_shard, thread, t, level_name(level),
             to_string(c), msg);
  if (g_file) std::fflush(g_file);
}

}  // namespace reprise::detail
