#include "reprise_rt/profiler.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <iterator>

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

// JSON string contents (task names are the user's), appended.
void append_escaped(fmt::memory_buffer& out, const char* s) {
  for (; *s; ++s) {
    const char c = *s;
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fmt::format_to(fmt::appender(out), "\\u{:04x}", int(c));
    } else {
      out.push_back(c);
    }
  }
}

std::string escaped(const std::string& s) {
  fmt::memory_buffer b;
  append_escaped(b, s.c_str());
  return fmt::to_string(b);
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
  // Formatted into one memory buffer, written in large pieces: a long run's file is written
  // at a few hundred instructions per record.
  fmt::memory_buffer out;
  auto put = fmt::appender(out);
  bool ok = true;
  const auto flush = [&] {
    ok = ok && std::fwrite(out.data(), 1, out.size(), f) == out.size();
    out.clear();
  };
  fmt::format_to(put,
                 "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{{\"name\":\"process_name\","
                 "\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":\"shard {}\"}}}}",
                 shard_, shard_);
  const auto point = [&](const DomainPoint& p) {
    out.push_back('(');
    for (int d = 0; d < p.dim; ++d) {
      if (d) out.push_back(',');
      fmt::format_to(put, "{}", p.x[d]);
    }
    out.push_back(')');
  };
  for (std::size_t tid = 0; tid < buffers_.size(); ++tid) {
    const Buffer& b = *buffers_[tid];
    fmt::format_to(put,
                   ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{"
                   "\"name\":\"{}\"}}}}",
                   shard_, tid, escaped(b.thread));
    for (const Record& r : b.records) {
      fmt::format_to(put, ",\n{{\"name\":\"");
      switch (r.kind) {
        case Kind::Task:
          append_escaped(out, r.task ? r.task : "?");
          out.push_back(' ');
          point(r.point);
          break;
        case Kind::Analysis:
          if (r.task) {
            fmt::format_to(put, "op #{} ({} '", r.seq, to_string(OpKind(r.op_kind)));
            append_escaped(out, r.task);
            fmt::format_to(put, "')");
          } else
            fmt::format_to(put, "op #{} ({})", r.seq, to_string(OpKind(r.op_kind)));
          break;
        case Kind::Replay:
          fmt::format_to(put, "replay of trace {} ({} ops)", r.trace, r.bytes);
          break;
        case Kind::Wait:
          fmt::format_to(put, "wait");
          break;
        default:  // fills, copies and copy halves
          fmt::format_to(put, "{} (op #{})", category(r.kind), r.seq);
          break;
      }
      // (Microseconds with three decimals, from integers: formatting doubles costs more.)
      const std::uint64_t ts = r.begin_ns - start_ns_, dur = r.end_ns - r.begin_ns;
      fmt::format_to(put,
                     "\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{}.{:03},\"dur\":{}.{:03},\"pid\":{},"
                     "\"tid\":{},\"args\":{{",
                     category(r.kind), ts / 1000, ts % 1000, dur / 1000, dur % 1000, shard_, tid);
      switch (r.kind) {
        case Kind::Task:
          fmt::format_to(put, "\"op\":{},\"point\":\"", r.seq);
          point(r.point);
          fmt::format_to(put, "\",\"trace\":{},\"replayed\":{}", r.trace, r.replayed);
          break;
        case Kind::Analysis:
          fmt::format_to(put, "\"op\":{},\"trace\":{}", r.seq, r.trace);
          break;
        case Kind::Replay:
          fmt::format_to(put, "\"trace\":{},\"ops\":{}", r.trace, r.bytes);
          break;
        case Kind::Wait:
          break;
        default:
          fmt::format_to(put, "\"op\":{},\"bytes\":{},\"trace\":{},\"replayed\":{}", r.seq, r.bytes,
                         r.trace, r.replayed);
          break;
      }
      fmt::format_to(put, "}}}}");
      if (out.size() > (1 << 20)) flush();
    }
  }
  fmt::format_to(put, "\n]}}\n");
  flush();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw Error(fmt::format("-lg:prof: cannot write '{}'", path_));
}

}  // namespace reprise::detail
