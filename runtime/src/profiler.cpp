#include "reprise_rt/profiler.h"

#include <fmt/core.h>

#include <atomic>
#include <cstdio>

#include "reprise/error.h"
#include "reprise_rt/log.h"
#include "reprise_rt/op.h"
#include "reprise_rt/runtime.h"

namespace reprise::detail {

namespace {
std::atomic<std::uint64_t> g_next_id{1};
struct ThreadSlot {
  std::uint64_t owner = 0;  // the profiler the buffer belongs to
  void* buffer = nullptr;
};
thread_local ThreadSlot t_slot;

const char* category(Profiler::Kind k) {
  static const char* names[] = {"task",    "fill",     "copy",   "send",
                                "receive", "analysis", "replay", "wait"};
  return names[int(k)];
}

// JSON string contents (task names are the user's).
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", int(c));
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

Profiler::Profiler(std::string file, std::uint32_t shard)
    : shard_(shard), start_ns_(now_ns()), id_(g_next_id.fetch_add(1)) {
  for (char c : file) path_ += c == '%' ? std::to_string(shard) : std::string(1, c);
}

Profiler::~Profiler() {
  try {
    write();
  } catch (const std::exception& e) {
    log_write(LogLevel::Error, LogCategory::Runtime, e.what());
  }
}

Profiler::Buffer& Profiler::buffer() {
  if (t_slot.owner != id_) {
    auto b = std::make_unique<Buffer>();
    b->thread = log_thread_name();
    b->records.reserve(1024);
    std::lock_guard<std::mutex> g(mutex_);
    t_slot = ThreadSlot{id_, b.get()};
    buffers_.push_back(std::move(b));
  }
  return *static_cast<Buffer*>(t_slot.buffer);
}

void Profiler::record(Kind kind, const Op& op, const DomainPoint& point, std::uint64_t begin_ns,
                      std::uint64_t end_ns, std::uint64_t bytes) {
  Record r;
  r.kind = kind;
  r.replayed = op.replayed;
  r.trace = op.in_trace;
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  r.seq = op.seq;
  r.bytes = bytes;
  if (op.task_info) r.task = op.task_info->name.c_str();
  r.point = point;
  buffer().records.push_back(r);
}

void Profiler::record_analysis(const Op& op, std::uint64_t begin_ns, std::uint64_t end_ns) {
  Record r;
  r.kind = Kind::Analysis;
  r.op_kind = std::uint8_t(op.kind);
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  r.seq = op.seq;
  r.trace = op.in_trace;
  if (op.task_info) r.task = op.task_info->name.c_str();
  buffer().records.push_back(r);
}

void Profiler::record_replay(std::uint32_t trace, std::uint64_t ops, std::uint64_t begin_ns,
                             std::uint64_t end_ns) {
  Record r;
  r.kind = Kind::Replay;
  r.trace = trace;
  r.bytes = ops;
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  buffer().records.push_back(r);
}

void Profiler::record_wait(std::uint64_t begin_ns, std::uint64_t end_ns) {
  Record r;
  r.kind = Kind::Wait;
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  buffer().records.push_back(r);
}

void Profiler::write() {
  std::lock_guard<std::mutex> g(mutex_);
  if (written_) return;
  written_ = true;
  std::FILE* f = std::fopen(path_.c_str(), "w");
  if (!f) throw Error(fmt::format("-lg:prof: cannot write '{}'", path_));
  fmt::print(f, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  fmt::print(
      f, "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":\"shard {}\"}}}}",
      shard_, shard_);
  const auto us = [&](std::uint64_t ns) { return double(ns - start_ns_) / 1000.0; };
  for (std::size_t tid = 0; tid < buffers_.size(); ++tid) {
    const Buffer& b = *buffers_[tid];
    fmt::print(f,
               ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{"
               "\"name\":\"{}\"}}}}",
               shard_, tid, escaped(b.thread));
    for (const Record& r : b.records) {
      std::string name;
      std::string args;
      switch (r.kind) {
        case Kind::Task:
          name = fmt::format("{} {}", r.task ? r.task : "?", r.point.str());
          args = fmt::format("\"op\":{},\"point\":\"{}\",\"trace\":{},\"replayed\":{}", r.seq,
                             r.point.str(), r.trace, r.replayed ? "true" : "false");
          break;
        case Kind::Fill:
        case Kind::Copy:
        case Kind::Send:
        case Kind::Receive:
          name = fmt::format("{} (op #{})", category(r.kind), r.seq);
          args = fmt::format("\"op\":{},\"bytes\":{},\"trace\":{},\"replayed\":{}", r.seq, r.bytes,
                             r.trace, r.replayed ? "true" : "false");
          break;
        case Kind::Analysis:
          name = r.task
                     ? fmt::format("op #{} ({} '{}')", r.seq, to_string(OpKind(r.op_kind)), r.task)
                     : fmt::format("op #{} ({})", r.seq, to_string(OpKind(r.op_kind)));
          args = fmt::format("\"op\":{},\"trace\":{}", r.seq, r.trace);
          break;
        case Kind::Replay:
          name = fmt::format("replay of trace {} ({} ops)", r.trace, r.bytes);
          args = fmt::format("\"trace\":{},\"ops\":{}", r.trace, r.bytes);
          break;
        case Kind::Wait:
          name = "wait";
          break;
      }
      fmt::print(f,
                 ",\n{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},"
                 "\"pid\":{},\"tid\":{},\"args\":{{{}}}}}",
                 escaped(name), category(r.kind), us(r.begin_ns),
                 double(r.end_ns - r.begin_ns) / 1000.0, shard_, tid, args);
    }
  }
  fmt::print(f, "\n]}}\n");
  const bool ok = std::fclose(f) == 0;
  if (!ok) throw Error(fmt::format("-lg:prof: cannot write '{}'", path_));
}

}  // namespace reprise::detail
