#include "reprise_rt/evtrace_recorder.h"

#include <string>
#include <string_view>

#include "reprise_rt/op.h"
#include "reprise_rt/profiler.h"

namespace reprise::detail {

namespace {
// One word per op kind ("index task" -> "index_task").
std::string kind_word(std::uint8_t op_kind) {
  std::string w = to_string(OpKind(op_kind));
  for (char& c : w)
    if (c == ' ') c = '_';
  return w;
}

// An op is written at the latest once the utility thread is this far past it (an op that
// never reports its completion must not hold the others back for ever).
constexpr std::uint64_t kMaxLag = 1u << 16;
}  // namespace

void EvtraceRecorder::on_record(const Seen& s) {
  using K = Profiler::Kind;
  const K kind = K(s.kind);
  std::lock_guard<std::mutex> g(mutex_);
  switch (kind) {
    case K::Message:
      if (s.incoming) return;
      ++sent_[s.task ? s.task : "?"];
      if (s.task && std::string_view(s.task) == "request") {
        if (current_ < written_below_)
          ++late_;
        else
          ++pending_[current_].asks[std::int32_t(s.peer) - std::int32_t(shard_)];
      }
      return;
    case K::Wait:
      waits_.add(s.ns);
      return;
    case K::Replay:
    case K::Record:
    case K::Range:
      return;  // their time is in the analysis record of the op that triggered them
    case K::Analysis:
      if (!s.counted) {
        // A flush or a mark the runtime made (their numbers are not the program's): what the
        // utility thread did for it (a replay it released) goes to the last program op.
        if (auto it = pending_.find(last_analysed_); it != pending_.end())
          it->second.util_ns += s.ns;
        else
          ++late_;
        return;
      }
      break;
    default:
      break;
  }
  if (s.seq < written_below_) {
    ++late_;
    return;
  }
  Pending& p = pending_[s.seq];
  if (s.trace) p.trace = s.trace;
  switch (kind) {
    case K::Analysis:
      p.analysed = true;
      p.op_kind = s.op_kind;
      p.task = s.task;
      p.util_ns += s.ns;
      last_analysed_ = std::max(last_analysed_, s.seq);
      flush_ready();
      return;
    case K::Task:
      ++p.work.points;
      p.point_ns.add(s.ns);
      return;
    case K::Fill:
    case K::Copy:
      ++p.work.copies;
      p.copy_ns.add(s.ns);
      return;
    case K::Send:
      p.sends[std::int32_t(s.peer) - std::int32_t(shard_)] += s.bytes;
      return;
    case K::Receive:
      p.recvs[std::int32_t(s.peer) - std::int32_t(shard_)] += s.bytes;
      return;
    default:
      return;
  }
}

void EvtraceRecorder::program_waits(std::uint64_t seq) {
  std::lock_guard<std::mutex> g(mutex_);
  if (seq < written_below_) {
    ++late_;
    return;
  }
  pending_[seq].then_waits = true;
}

void EvtraceRecorder::issued(std::uint64_t seq, std::uint64_t now_ns) {
  std::lock_guard<std::mutex> g(mutex_);
  const std::uint64_t gap = app_mark_ns_ && now_ns > app_mark_ns_ ? now_ns - app_mark_ns_ : 0;
  app_mark_ns_ = now_ns;
  if (seq < written_below_) return;  // (cannot be: ops are written after later ones are issued)
  pending_[seq].issue_ns = gap;
}

void EvtraceRecorder::program_resumes(std::uint64_t now_ns) {
  std::lock_guard<std::mutex> g(mutex_);
  app_mark_ns_ = now_ns;
}

void EvtraceRecorder::retired(std::uint64_t seq) {
  std::lock_guard<std::mutex> g(mutex_);
  if (seq < written_below_) return;
  pending_[seq].retired = true;
  flush_ready();
}

void EvtraceRecorder::flush_ready() {
  while (!pending_.empty()) {
    auto it = pending_.begin();
    Pending& p = it->second;
    const bool lagging = last_analysed_ > it->first + kMaxLag;
    // (Written once a later op has been analysed: the program has issued it, so whether it
    // blocked after this one is known.)
    if (!(p.analysed && last_analysed_ > it->first && (p.retired || lagging))) return;
    write(it->first, p);
    pending_.erase(it);
  }
}

void EvtraceRecorder::write(std::uint64_t seq, Pending& p) {
  written_below_ = seq + 1;
  evtrace::Node leaf;
  evtrace::Element& e = leaf.element;
  e.kind = kind_word(p.op_kind);
  e.task = p.task ? p.task : "";
  e.trace = p.trace;
  e.then_waits = p.then_waits;
  evtrace::Variant& v = p.work;
  v.ranks = {shard_};
  e.util.add(p.util_ns);
  e.issue_ns.add(p.issue_ns);
  e.point_ns = std::move(p.point_ns);
  e.copy_ns = std::move(p.copy_ns);
  for (const auto& [offset, bytes] : p.sends) {
    v.sends.push_back(evtrace::Peer{offset, {}});
    v.sends.back().bytes.add(bytes);
  }
  for (const auto& [offset, bytes] : p.recvs) {
    v.recvs.push_back(evtrace::Peer{offset, {}});
    v.recvs.back().bytes.add(bytes);
  }
  for (const auto& [offset, count] : p.asks) {
    v.asks.push_back(evtrace::Peer{offset, {}});
    v.asks.back().bytes.add(count);
  }
  e.variants.push_back(std::move(v));
  compressor_.append(std::move(leaf));
}

evtrace::Trace EvtraceRecorder::finish() {
  std::lock_guard<std::mutex> g(mutex_);
  for (auto& [seq, p] : pending_)
    if (p.analysed) write(seq, p);
  pending_.clear();
  evtrace::Trace t;
  t.shards = shards_;
  t.groups.push_back(evtrace::Group{{shard_}, compressor_.take()});
  for (const auto& [channel, n] : sent_) t.messages[channel].add(n);
  t.waits_ns = waits_;
  t.late_records = late_;
  return t;
}

}  // namespace reprise::detail
