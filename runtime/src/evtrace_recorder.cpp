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

EvtraceRecorder::Work& EvtraceRecorder::work_of(Pending& p, std::uint32_t shard) {
  if (p.shards.empty()) p.shards.resize(played_);
  return p.shards[played_ > 1 ? shard % played_ : 0];
}

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
          ++work_of(pending_[current_], 0).asks[offset(s.peer, 0)];
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
    case K::Task: {
      Work& w = work_of(p, s.shard);
      ++w.work.points;
      w.point_ns.add(s.ns);
      return;
    }
    case K::Fill:
    case K::Copy:
      if (played_ > 1 && kind == K::Copy && s.shard != s.peer) {
        // One process copied between two shards' memories: under mpirun, a send half on
        // the source's shard and a receive half on the destination's.
        work_of(p, s.shard).sends[offset(s.peer, s.shard)] += s.bytes;
        work_of(p, s.peer).recvs[offset(s.shard, s.peer)] += s.bytes;
        sent_["data"] += 1;
        return;
      }
      {
        Work& w = work_of(p, s.shard);
        ++w.work.copies;
        w.copy_ns.add(s.ns);
      }
      return;
    case K::Send:
      work_of(p, s.shard).sends[offset(s.peer, s.shard)] += s.bytes;
      return;
    case K::Receive:
      work_of(p, s.shard).recvs[offset(s.peer, s.shard)] += s.bytes;
      return;
    default:
      return;
  }
}

void EvtraceRecorder::ask(std::uint32_t from, std::uint32_t to) {
  std::lock_guard<std::mutex> g(mutex_);
  ++sent_["request"];
  if (current_ < written_below_)
    ++late_;
  else
    ++work_of(pending_[current_], from).asks[offset(to, from)];
}

void EvtraceRecorder::replay_shares(std::span<const std::uint32_t> shares) {
  std::lock_guard<std::mutex> g(mutex_);
  if (current_ < written_below_ || shares.size() != played_) return;
  Pending& p = pending_[current_];
  p.replay_shares.resize(played_, 0);
  for (std::uint32_t s = 0; s < played_; ++s) p.replay_shares[s] += shares[s];
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
  std::uint64_t replayed = 0;  // every shard's instructions in the op's simulated replays
  for (std::uint64_t n : p.replay_shares) replayed += n;
  for (std::uint32_t i = 0; i < played_; ++i) {
    Work& w = work_of(p, i);
    evtrace::Node leaf;
    evtrace::Element& e = leaf.element;
    e.kind = kind_word(p.op_kind);
    e.task = p.task ? p.task : "";
    e.trace = p.trace;
    e.then_waits = p.then_waits;
    evtrace::Variant& v = w.work;
    v.ranks = {played_ > 1 ? i : shard_};
    // (Every shard analyses every op: the simulated shards' utility threads each take the
    // time this one took — except for replays, where each shard's part of the instructions
    // this process replayed for all of them is its part of the time.)
    if (replayed)
      e.util.add(std::uint64_t(double(p.util_ns) * double(p.replay_shares[i]) / double(replayed)));
    else
      e.util.add(p.util_ns);
    e.issue_ns.add(p.issue_ns);
    e.point_ns = std::move(w.point_ns);
    e.copy_ns = std::move(w.copy_ns);
    auto peers = [](const std::map<std::int32_t, std::uint64_t>& by_offset,
                    std::vector<evtrace::Peer>& out) {
      for (const auto& [offset, value] : by_offset) {
        out.push_back(evtrace::Peer{offset, {}});
        out.back().bytes.add(value);
      }
    };
    peers(w.sends, v.sends);
    peers(w.recvs, v.recvs);
    peers(w.asks, v.asks);
    e.variants.push_back(std::move(v));
    compressors_[i].append(std::move(leaf));
  }
}

evtrace::Trace EvtraceRecorder::finish() {
  std::lock_guard<std::mutex> g(mutex_);
  for (auto& [seq, p] : pending_)
    if (p.analysed) write(seq, p);
  pending_.clear();
  evtrace::Trace t;
  t.shards = shards_;
  for (std::uint32_t i = 0; i < played_; ++i) {
    evtrace::Trace one;
    one.shards = shards_;
    one.groups.push_back(evtrace::Group{{played_ > 1 ? i : shard_}, compressors_[i].take()});
    evtrace::merge(t, std::move(one));
  }
  // (Per shard: a simulated run's messages are spread over the shards it played.)
  for (const auto& [channel, n] : sent_)
    for (std::uint32_t i = 0; i < played_; ++i) t.messages[channel].add(n / played_);
  t.waits_ns = waits_;
  t.late_records = late_;
  return t;
}

}  // namespace reprise::detail
