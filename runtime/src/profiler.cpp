#include "reprise_rt/profiler.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>

#include "reprise/error.h"
#include "reprise_rt/evtrace_recorder.h"
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
// Profiler::LaneScope: the lane this thread records in for now (null: its own) and its slot.
thread_local const char* t_lane = nullptr;
thread_local ThreadSlot t_lane_slot;

const char* category(Profiler::Kind k) {
  static const char* names[] = {"task",   "fill", "copy",   "send",    "receive", "analysis",
                                "replay", "wait", "record", "message", "range"};
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

namespace {
// Whether the kernel keeps time with the time-stamp counter (then it is invariant and the
// same on every core, and stamps may be read from it). Asked once, when profiling starts.
bool kernel_clock_is_tsc() {
#if defined(__x86_64__)
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (!f) return false;
  char name[32] = {};
  const bool tsc = std::fgets(name, sizeof name, f) && std::string(name).rfind("tsc", 0) == 0;
  std::fclose(f);
  return tsc;
#else
  return false;
#endif
}
}  // namespace

Profiler::Profiler(std::string file, std::uint32_t shard,
                   std::vector<std::shared_ptr<Observer>> observers)
    : path_(file.empty() ? std::string() : shard_file(file, shard)),
      shard_(shard),
      id_(g_next_id.fetch_add(1)),
      observers_(std::move(observers)),
      keep_records_(!path_.empty()) {
  static const bool tsc = kernel_clock_is_tsc();
  tsc_ = tsc;
  start_stamp_ = stamp();
  start_ns_ = origin_ns_ = now_ns();
  if (tsc_) {
    // A first rate, from 200 µs (observers convert with it as records are made; the file is
    // converted with the rate over the whole run).
    while (now_ns() < start_ns_ + 200'000) {
    }
    ns_per_stamp_ = measure_rate();
  }
}

double Profiler::measure_rate() const {
  if (!tsc_) return 1.0;
  const std::uint64_t s = stamp(), ns = now_ns();
  return s > start_stamp_ ? double(ns - start_ns_) / double(s - start_stamp_) : ns_per_stamp_;
}

Profiler::~Profiler() {
  try {
    write();
  } catch (const std::exception& e) {
    log_write(LogLevel::Error, LogCategory::Runtime, e.what());
  }
}

Profiler::LaneScope::LaneScope(const char* lane) : previous_(t_lane) {
  t_lane = lane;
}

Profiler::LaneScope::~LaneScope() {
  t_lane = previous_;
}

Profiler::Buffer& Profiler::buffer() {
  ThreadSlot& slot = t_lane ? t_lane_slot : t_slot;
  if (slot.owner != id_) {
    auto b = std::make_unique<Buffer>();
    b->thread = t_lane ? std::string(t_lane) : log_thread_name();
    // Room for 64 Ki records, touched now: growing the buffer (copies, and first touches of
    // fresh pages) would otherwise land on the thread's work (~0.1 µs per record measured
    // on the stencil, whose worker is its bottleneck).
    b->records.resize(std::size_t(1) << 16);
    b->records.clear();
    std::lock_guard<std::mutex> g(mutex_);
    slot = ThreadSlot{id_, b.get()};
    buffers_.push_back(std::move(b));
  }
  return *static_cast<Buffer*>(slot.buffer);
}

void Profiler::record(Kind kind, const Op& op, std::uint32_t point_index, const DomainPoint& point,
                      std::uint64_t begin, std::uint64_t end, std::uint64_t bytes,
                      std::uint32_t peer, std::uint64_t cpu_ns, std::uint32_t shard) {
  Record& r = push(kind, begin, end);
  r.peer = peer;
  r.shard = shard;
  r.cpu_ns = cpu_ns;
  r.replayed = op.replayed;
  r.trace = op.in_trace;
  r.seq = op.seq;
  r.bytes = bytes;
  if (op.task_info) r.task = op.task_info->name.c_str();
  r.point = point;
  const Node n = node_of(op, point_index);
  r.index = n.index;
  r.copy = n.copy;
  done(r);
}

void Profiler::to_evtrace(const Record& r) const {
  const bool message = r.kind == Kind::Message;
  evtrace_->on_record(EvtraceRecorder::Seen{int(r.kind), r.seq, r.op_kind, r.task, r.trace,
                                            r.cpu_ns ? r.cpu_ns : to_ns(r.end) - to_ns(r.begin),
                                            r.bytes, message ? r.index : r.peer,
                                            message && r.replayed, r.counted, r.shard});
}

void Profiler::notify(const Record& r) const {
  Activity a;
  a.kind = ActivityKind(r.kind);  // (the same order)
  a.shard = shard_;
  a.begin_ns = to_ns(r.begin);
  a.end_ns = to_ns(r.end);
  a.trace = r.trace;
  if (r.kind == Kind::Message) {
    a.incoming = r.replayed;
    a.channel = r.task ? r.task : "";
    a.peer = r.index;
    a.bytes = r.bytes;
  } else {
    a.op = r.seq;
    a.task = r.task ? r.task : "";  // (ranges: the name)
    a.point = r.point;
    a.replayed = r.replayed;
    a.bytes = r.bytes;
  }
  for (const auto& o : observers_) o->on_activity(a);
}

Profiler::Node Profiler::node_of(const Op& op, std::uint32_t point) {
  if (op.kind == OpKind::Copy && op.generated())
    return Node{op.seq, op.generated_copy()->index, true};
  return Node{op.seq, point, false};
}

void Profiler::produced(Event e, const Op& op, std::uint32_t point) {
  if (!e.exists()) return;
  std::lock_guard<std::mutex> g(deps_mutex_);
  producers_[key(e)] = node_of(op, point);
}

void Profiler::part_of_op(const Op& op, std::uint32_t point) {
  if (!op.done.exists()) return;
  std::lock_guard<std::mutex> g(deps_mutex_);
  op_points_[key(op.done)].push_back(node_of(op, point));
}

void Profiler::merged(Event result, std::span<const Event> inputs) {
  if (!result.exists()) return;
  std::vector<std::uint64_t> keys;
  for (Event e : inputs)
    if (e.exists()) keys.push_back(key(e));
  std::lock_guard<std::mutex> g(deps_mutex_);
  merges_[key(result)] = std::move(keys);
}

void Profiler::waits(const Op& op, std::uint32_t point, Event e) {
  if (!e.exists()) return;
  std::lock_guard<std::mutex> g(deps_mutex_);
  waits_.emplace_back(key(e), node_of(op, point));
}

void Profiler::follows(const Op& before, std::uint32_t before_point, const Op& after,
                       std::uint32_t after_point) {
  std::lock_guard<std::mutex> g(deps_mutex_);
  follows_.emplace_back(node_of(before, before_point), node_of(after, after_point));
}

void Profiler::follows_copy(std::uint64_t seq, std::uint32_t copy, const Op& after,
                            std::uint32_t after_point) {
  std::lock_guard<std::mutex> g(deps_mutex_);
  follows_.emplace_back(Node{seq, copy, true}, node_of(after, after_point));
}

void Profiler::write_flows(fmt::memory_buffer& out) {
  std::lock_guard<std::mutex> g(deps_mutex_);
  struct Where {
    std::size_t tid;
    std::uint64_t begin, end;
  };
  const auto hash = [](const Node& n) {
    return std::hash<std::uint64_t>()(n.seq * 0x9e3779b97f4a7c15ull + n.index * 2 + n.copy);
  };
  std::unordered_map<Node, Where, decltype(hash)> where(64, hash);
  for (std::size_t tid = 0; tid < buffers_.size(); ++tid)
    for (const Record& r : buffers_[tid]->records)
      if (is_work(r)) where[node_of(r)] = Where{tid, r.begin, r.end};
  std::uint64_t id = 0;
  for (const auto& [a, b] : edges()) {
    auto pa = where.find(a), pb = where.find(b);
    if (pa == where.end() || pb == where.end() || a == b) continue;  // (ran on another shard)
    ++id;
    const std::uint64_t a_end = file_ns(pa->second.end);
    const std::uint64_t ts = a_end - (a_end > file_ns(pa->second.begin));
    const std::uint64_t tf = file_ns(pb->second.begin);
    fmt::format_to(fmt::appender(out),
                   ",\n{{\"name\":\"dep\",\"cat\":\"dep\",\"ph\":\"s\",\"id\":{},\"pid\":{},"
                   "\"tid\":{},\"ts\":{}.{:03}}}"
                   ",\n{{\"name\":\"dep\",\"cat\":\"dep\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{},"
                   "\"pid\":{},\"tid\":{},\"ts\":{}.{:03}}}",
                   id, shard_, pa->second.tid, ts / 1000, ts % 1000, id, shard_, pb->second.tid,
                   tf / 1000, tf % 1000);
  }
}

std::vector<std::pair<Profiler::Node, Profiler::Node>> Profiler::edges() const {
  std::vector<std::pair<Node, Node>> out = follows_;
  std::vector<Node> from;
  for (const auto& [event, waiter] : waits_) {
    from.clear();
    resolve(event, from, 0);
    for (const Node& n : from) out.emplace_back(n, waiter);
  }
  return out;
}

void Profiler::write_spy() {
  std::lock_guard<std::mutex> g(deps_mutex_);
  std::error_code ec;
  std::filesystem::create_directories(spy_dir_, ec);
  const std::string path = fmt::format("{}/spy_{}.dot", spy_dir_, shard_);
  const auto name = [](const Node& n) {
    return fmt::format("n{}_{}{}", n.seq, n.copy ? "c" : "p", n.index);
  };
  fmt::memory_buffer out;
  auto put = fmt::appender(out);
  fmt::format_to(put, "digraph shard_{} {{\n  rankdir=TB;\n", shard_);
  // Nodes grouped by op, in op order.
  std::map<std::uint64_t, std::vector<const Record*>> by_op;
  for (const auto& b : buffers_)
    for (const Record& r : b->records)
      if (is_work(r)) by_op[r.seq].push_back(&r);
  std::set<std::string> present;
  for (const auto& [seq, records] : by_op) {
    const Record& first = *records.front();
    fmt::format_to(put, "  subgraph cluster_op{} {{\n    label=\"op #{}{}{}{}\";\n", seq, seq,
                   first.task ? " " : "", first.task ? first.task : "",
                   first.replayed ? " (replayed)" : "");
    for (const Record* r : records) {
      const Node n = node_of(*r);
      present.insert(name(n));
      if (r->kind == Kind::Task)
        fmt::format_to(put, "    {} [label=\"{} {}\"];\n", name(n), first.task ? first.task : "?",
                       r->point.str());
      else if (r->kind == Kind::Fill)
        fmt::format_to(put, "    {} [label=\"fill\", shape=box];\n", name(n));
      else
        fmt::format_to(put, "    {} [label=\"{} {} B\", shape=box];\n", name(n), category(r->kind),
                       r->bytes);
    }
    fmt::format_to(put, "  }}\n");
  }
  std::set<std::pair<std::string, std::string>> drawn;
  for (const auto& [a, b] : edges()) {
    const std::string na = name(a), nb = name(b);
    if (a == b || !present.count(na) || !present.count(nb) || !drawn.insert({na, nb}).second)
      continue;
    fmt::format_to(put, "  {} -> {};\n", na, nb);
  }
  fmt::format_to(put, "}}\n");
  std::FILE* f = std::fopen(path.c_str(), "w");
  const bool ok = f && std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (f) std::fclose(f);
  if (!ok) throw Error(fmt::format("-lg:spy: cannot write '{}'", path));
}

void Profiler::resolve(std::uint64_t event, std::vector<Node>& out, int depth) const {
  if (auto p = producers_.find(event); p != producers_.end()) {
    out.push_back(p->second);
    return;
  }
  if (auto o = op_points_.find(event); o != op_points_.end()) {
    out.insert(out.end(), o->second.begin(), o->second.end());
    return;
  }
  if (depth > 16) return;  // (merges of merges: deep chains add nothing to a picture)
  if (auto m = merges_.find(event); m != merges_.end())
    for (std::uint64_t in : m->second) resolve(in, out, depth + 1);
}

Profiler::Record& Profiler::push(Kind kind, std::uint64_t begin, std::uint64_t end) {
  thread_local Record scratch;  // observers only: nothing is kept
  Record& r = keep_records_ ? buffer().records.emplace_back() : (scratch = Record{});
  r.kind = kind;
  r.begin = begin;
  r.end = end;
  return r;
}

std::uint64_t Profiler::thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

void Profiler::record_analysis(const Op& op, std::uint64_t begin, std::uint64_t end,
                               std::uint64_t cpu_ns) {
  Record& r = push(Kind::Analysis, begin, end);
  r.cpu_ns = cpu_ns;
  r.counted = op.counted;
  r.op_kind = std::uint8_t(op.kind);
  r.seq = op.seq;
  r.trace = op.in_trace;
  if (op.task_info) r.task = op.task_info->name.c_str();
  done(r);
}

void Profiler::record_replay(std::uint32_t trace, std::uint64_t ops, std::uint64_t begin,
                             std::uint64_t end) {
  Record& r = push(Kind::Replay, begin, end);
  r.trace = trace;
  r.bytes = ops;
  done(r);
}

void Profiler::record_recording(std::uint32_t trace, std::uint64_t ops, std::uint64_t begin,
                                std::uint64_t end) {
  Record& r = push(Kind::Record, begin, end);
  r.trace = trace;
  r.bytes = ops;
  done(r);
}

void Profiler::record_message(bool incoming, const char* channel, std::uint32_t peer,
                              std::uint64_t bytes, std::uint64_t begin, std::uint64_t end) {
  Record& r = push(Kind::Message, begin, end);
  r.replayed = incoming;  // (for messages: received rather than sent)
  r.task = channel;
  r.index = peer;
  r.bytes = bytes;
  done(r);
}

void Profiler::record_range(const std::string& name, std::uint64_t begin, std::uint64_t end) {
  const char* text;
  {
    std::lock_guard<std::mutex> g(mutex_);
    text = range_names_.emplace_back(name).c_str();
  }
  Record& r = push(Kind::Range, begin, end);
  r.task = text;
  done(r);
}

void Profiler::record_wait(std::uint64_t begin, std::uint64_t end) {
  done(push(Kind::Wait, begin, end));
}

void Profiler::write() {
  std::lock_guard<std::mutex> g(mutex_);
  if (written_) return;
  written_ = true;
  file_ns_per_stamp_ = measure_rate();  // the rate over the whole run
  if (!path_.empty()) write_json();
  if (!spy_dir_.empty()) write_spy();
}

void Profiler::write_json() {
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
        case Kind::Record:
          fmt::format_to(put, "recording of trace {} ({} ops)", r.trace, r.bytes);
          break;
        case Kind::Message:
          fmt::format_to(put, "{} {} {} {}", r.replayed ? "received" : "sent", r.task,
                         r.replayed ? "from" : "to", r.index);
          break;
        case Kind::Wait:
          fmt::format_to(put, "wait");
          break;
        case Kind::Range:
          append_escaped(out, r.task);
          break;
        default:  // fills, copies and copy halves
          fmt::format_to(put, "{} (op #{})", category(r.kind), r.seq);
          break;
      }
      // (Microseconds with three decimals, from integers: formatting doubles costs more.)
      const std::uint64_t ts = file_ns(r.begin), dur = file_ns(r.end) - ts;
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
        case Kind::Record:
          fmt::format_to(put, "\"trace\":{},\"ops\":{}", r.trace, r.bytes);
          break;
        case Kind::Wait:
        case Kind::Range:
          break;
        case Kind::Message:
          fmt::format_to(put, "\"channel\":\"{}\",\"peer\":{},\"bytes\":{},\"received\":{}", r.task,
                         r.index, r.bytes, r.replayed);
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
  if (deps_) write_flows(out);
  fmt::format_to(put, "\n]}}\n");
  flush();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw Error(fmt::format("-lg:prof: cannot write '{}'", path_));
}

}  // namespace reprise::detail
