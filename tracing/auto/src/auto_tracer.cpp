#include "reprise_tracing/auto_tracer.h"

#include <tbb/task_group.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <thread>

#include "reprise_tracing/repeats.h"

namespace reprise::tracing {

struct AutoTracer::Background {
#if defined(REPRISE_NO_TBB_TASKS)
  std::vector<std::future<void>> tasks;
  template <typename F>
  void run(F&& f) {
    std::erase_if(tasks, [](auto& t) {
      return t.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    });
    tasks.push_back(std::async(std::launch::async, std::forward<F>(f)));
  }
  void help() {}  // std::async threads run by themselves
  ~Background() {
    for (auto& t : tasks) t.wait();
  }
#else
  tbb::task_group group;
  // Whether anything was run: waiting on a group joins oneTBB's arena, which the first time
  // on a thread costs ~0.5 M instructions (the thread's stack bounds, read from
  // /proc/self/maps) — for nothing where every analysis ran inline.
  bool used = false;
  template <typename F>
  void run(F&& f) {
    used = true;
    group.run(std::forward<F>(f));
  }
  // Runs pending analyses on the calling thread: where TBB has no worker threads (one core
  // per MPI rank) nobody else would.
  void help() {
    if (used) group.wait();
  }
  ~Background() {
    if (used) group.wait();
  }
#endif
};

namespace {
std::vector<std::vector<std::uint64_t>> find_candidates(const std::vector<std::uint64_t>& slice,
                                                        std::size_t min_length,
                                                        std::size_t max_length) {
  RepeatOptions ro;
  ro.min_length = std::max<std::size_t>(1, min_length);
  ro.min_repeats = 2;
  std::vector<std::vector<std::uint64_t>> out;
  for (const RepeatGroup& g : find_repeats(slice, ro)) {
    const Occurrence& o = g.occurrences.front();
    std::vector<std::uint64_t> found(slice.begin() + std::ptrdiff_t(o.start),
                                     slice.begin() + std::ptrdiff_t(o.end));
    // Occurrences back to back are iterations of a loop whose body is the repeat: handed on
    // as that many periods, so that the loop is recognised as one (AutoTracer::insert).
    std::size_t run = 1, longest = 1;
    for (std::size_t i = 1; i < g.occurrences.size(); ++i) {
      run = g.occurrences[i].start == g.occurrences[i - 1].end ? run + 1 : 1;
      longest = std::max(longest, run);
    }
    if (longest >= 2 && found.size() <= max_length) {
      std::vector<std::uint64_t> body = found;
      for (std::size_t k = 1; k < longest; ++k) found.insert(found.end(), body.begin(), body.end());
    }
    out.push_back(std::move(found));
  }
  return out;
}

std::string key_of(const std::vector<std::uint64_t>& tokens) {
  return std::string(reinterpret_cast<const char*>(tokens.data()),
                     tokens.size() * sizeof(std::uint64_t));
}
}  // namespace

namespace {
// A found repeat that is a loop (at least two periods): its body in the phase it was found in
// (after a barrier, the phase the loop starts in), the body's canonical rotation (the
// lexicographically smallest: one name for every phase of the loop, the same on every
// shard), and how many whole periods a candidate of it holds: at most the maximum length, at
// least the minimum (one when the body is longer than the maximum) — see as_cycle for which.
struct Cycle {
  std::vector<std::uint64_t> body, canonical;
  std::size_t periods = 0;
};
std::optional<Cycle> as_cycle(const std::vector<std::uint64_t>& found, std::size_t min_length,
                              std::size_t max_length) {
  const std::size_t n = found.size();
  // The smallest period, from the prefix function (KMP): found[i] == found[i + p] for all i.
  std::vector<std::size_t> border(n, 0);
  for (std::size_t i = 1; i < n; ++i) {
    std::size_t k = border[i - 1];
    while (k > 0 && found[i] != found[k]) k = border[k - 1];
    if (found[i] == found[k]) ++k;
    border[i] = k;
  }
  const std::size_t p = n - border[n - 1];
  if (2 * p > n) return std::nullopt;
  Cycle c;
  // As few periods as reach a quarter of the maximum length (where that exceeds the minimum)
  // when the run seen holds that many: every replay has a fixed cost (~1.5 k instructions; Task
  // Bench's stencil replayed its 6-op traces at ~200 instructions an op more than 16-op ones), and
  // a loop seen that long is likely to run on. The same count from every slice that sees that much:
  // a loop found again in another slice is the same candidate, not a longer version that takes over
  // where runs break (a 24-op one recorded in the second of four 100-op runs between waits, say). A
  // loop seen for less: as few periods as reach the minimum length, among the counts that divide
  // the run seen (a loop between two barriers then fits whole traces): a short trace is recorded
  // sooner and leaves a shorter tail untraced (as many periods as were seen made a 3-op loop wait
  // 48 ops for its first trace and leave up to 47 at the end). Tails are replayed as prefixes of a
  // trace (replay_held).
  const std::size_t seen = n / p;
  c.periods = 0;
  if (const std::size_t few = (max_length / 4 + p - 1) / p;
      max_length / 4 > min_length && few <= seen && few * p <= max_length) {
    c.periods = few;
  } else {
    const std::size_t need = (min_length + p - 1) / p;
    for (std::size_t k = std::max<std::size_t>(1, need); k <= seen && k * p <= max_length; ++k)
      if (seen % k == 0) {
        c.periods = k;
        break;
      }
  }
  if (c.periods == 0) {
    c.periods = std::max<std::size_t>(1, std::min(seen, max_length / p));
    while (c.periods * p < min_length) ++c.periods;
  }
  std::size_t best = 0;
  for (std::size_t r = 1; r < p; ++r)
    for (std::size_t i = 0; i < p; ++i) {
      const std::uint64_t x = found[(r + i) % p], y = found[(best + i) % p];
      if (x != y) {
        if (x < y) best = r;
        break;
      }
    }
  c.body.assign(found.begin(), found.begin() + std::ptrdiff_t(p));
  c.canonical.resize(p);
  for (std::size_t i = 0; i < p; ++i) c.canonical[i] = found[(best + i) % p];
  return c;
}
}  // namespace

AutoTracer::AutoTracer(const AutoTraceOptions& options, AutoTraceSink& sink,
                       LateAgreement* agreement)
    : opt_(options),
      sink_(sink),
      agreement_(agreement),
      delay_(std::max<std::size_t>(1, options.ingest_delay)),
      background_(std::make_unique<Background>()) {
  opt_.min_trace_length = std::max<std::size_t>(1, opt_.min_trace_length);
  opt_.max_trace_length = std::max(opt_.max_trace_length, opt_.min_trace_length);
  opt_.multi_scale_factor = std::max<std::size_t>(1, opt_.multi_scale_factor);
  opt_.batchsize = std::max(opt_.batchsize, opt_.multi_scale_factor);
  trie_.emplace_back();  // the root
}

AutoTracer::~AutoTracer() = default;

CoverageSummary summarize_coverage(const std::vector<bool>& replayed) {
  CoverageSummary out;
  const std::size_t n = replayed.size();
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (replayed[i]) {
      ++count;
      if (out.first_replay < 0) out.first_replay = (long long)i;
    }
  out.coverage = n ? double(count) / double(n) : 0.0;
  // Scanning back from the last replayed op (the ops after it are the program's tail): the
  // earliest start of a stretch replayed at >= 99%.
  std::size_t last = n;
  while (last > 0 && !replayed[last - 1]) --last;
  std::size_t suffix = 0;
  for (std::size_t i = last; i-- > 0;) {
    suffix += replayed[i] ? 1 : 0;
    if (double(suffix) >= 0.99 * double(last - i)) out.steady_at = (long long)i;
  }
  return out;
}

std::uint64_t AutoTracer::recorded_not_replayed() const {
  std::uint64_t n = 0;
  for (const Candidate& c : candidates_)
    if (c.replays == 1) n += c.tokens.size();
  return n;
}

void AutoTracer::finish_background() {
  if (background_) background_->help();
}

void AutoTracer::push(std::uint64_t token) {
  const std::uint64_t op = next_op_++;
  ++stats_.ops;
  history_.push_back(token);
  pending_tokens_.push_back(token);
  ++since_barrier_;
  maybe_analyse();
  if (analysis_due()) ingest_due();
  if (follow_run(token, op)) return;
  advance(token, op);
  issue_ready();
}

const std::vector<std::uint64_t>* AutoTracer::run_ahead(std::uint32_t& trace_id) const {
  if (!(saturated_ || settled_) || pending_from_ != next_op_ || last_issued_ == ~0u) return nullptr;
  const Candidate& c = candidates_[last_issued_];
  if (c.demoted || c.last_issue_end != next_op_) return nullptr;
  trace_id = c.trace_id;
  return &c.tokens;
}

std::size_t AutoTracer::follow(std::span<const std::uint64_t> tokens) {
  // follow_run's second case, for many ops at once: the one pointer continues the run.
  if (!only_run_pointer()) return 0;
  Pointer& p = pointers_.front();
  if (p.start != pending_from_ || next_op_ == pending_from_) return 0;
  // push analyses (maybe_analyse) once history_ reaches analyse_at_, and takes in the
  // analysis due at its op (ingest_due): the k-th token here (from 0) leaves both alone while
  // history_.size() + k + 1 < analyse_at_ and next_op_ + k + 1 < its ingest_at.
  std::size_t room = tokens.size();
  const std::size_t h = history_.size();
  room = std::min(room, analyse_at_ > h + 1 ? analyse_at_ - h - 1 : 0);
  if (!jobs_.empty()) {
    const std::uint64_t at = jobs_.front().ingest_at;
    room = std::min<std::size_t>(room, at > next_op_ + 1 ? at - next_op_ - 1 : 0);
  }
  std::uint32_t node = p.node;
  std::size_t k = 0;
  for (; k < room; ++k) {
    const std::uint32_t next = trie_[node].child(tokens[k]);
    if (next == Node::kNone || !goes_on(trie_[next])) break;
    node = next;
  }
  if (k == 0) return 0;
  p.node = node;
  next_op_ += k;
  stats_.ops += k;
  since_barrier_ += k;
  history_.insert(history_.end(), tokens.begin(), tokens.begin() + std::ptrdiff_t(k));
  pending_tokens_.insert(pending_tokens_.end(), tokens.begin(), tokens.begin() + std::ptrdiff_t(k));
  return k;
}

bool AutoTracer::follow_run(std::uint64_t token, std::uint64_t op) {
  // Only the pointer that continues the run is alive, and this op does not complete a trace:
  // advance would only step that pointer (or, after a trace was issued, replace it). Then
  // issue_ready does nothing either: where a match is held back for that pointer's longer
  // candidate, it looks again only once the pointers or the trie changed; otherwise no match waits,
  // and the pointer still claims the held ops (its node has an eligible candidate further down).
  if (!only_run_pointer()) return false;
  Pointer& p = pointers_.front();
  if (op == pending_from_ && p.start < pending_from_ && !held_back_) {
    // The op after a trace was issued: the pointer that completed it ends here, and the one
    // that can continue the run starts — what advance does; issue_ready would find the new
    // pointer claiming this op, and nothing to issue or forward.
    if (trie_[p.node].child(token) != Node::kNone) return false;
    const std::uint32_t root = trie_[0].child(token);
    if (root == Node::kNone || !goes_on(trie_[root])) return false;
    p = Pointer{root, op};
    ++stats_.pointers_started;
    return true;
  }
  if (p.start != pending_from_ || op == pending_from_) return false;
  const std::uint32_t next = trie_[p.node].child(token);
  if (next == Node::kNone || !goes_on(trie_[next])) return false;
  p.node = next;
  return true;
}

void AutoTracer::barrier() {
  flush();
  pointers_.clear();
  ready_.clear();
  // A unique break in the history, so no repeat spans the barrier.
  barriers_.push_back(history_.size());
  history_.push_back(0xB000000000000000ull ^ next_op_);
  since_barrier_ = 0;
  analyse_at_ = 0;  // (the early probes' schedule starts again)
  maybe_analyse();
}

void AutoTracer::flush() {
  saturated_ = false;
  settled_ = false;
  held_back_ = false;
  replay_held(next_op_, true);
  forward_until(next_op_);
  pointers_.clear();
  ready_.clear();
}

void AutoTracer::maybe_analyse() {
  if (history_.size() < analyse_at_) return;
  analyse_due();
  analyse_at_ = next_analysis(history_.size());
}

std::array<std::size_t, 2> AutoTracer::early_probes() const {
  const std::size_t early = opt_.multi_scale_factor / 2;
  return {early / 2, early};
}

std::size_t AutoTracer::next_analysis(std::size_t n) const {
  // The first length after n at which analyse_due() acts: the batch is full, a unit of the
  // ruler schedule ends, or (since_barrier_ growing with history_) an early probe is due.
  std::size_t at = std::max(n + 1, opt_.batchsize);
  if (opt_.algorithm == IdentifierAlgorithm::MultiScale) {
    const std::size_t unit = opt_.multi_scale_factor;
    at = std::min(at, (n / unit + 1) * unit);
    for (const std::size_t probe : early_probes())
      if (probe > since_barrier_) at = std::min(at, n + (probe - since_barrier_));
  }
  return at;
}

void AutoTracer::analyse_due() {
  const std::size_t n = history_.size();
  if (saturated_) {
    // Replaying maximal traces back to back: mining could not find anything longer.
    if (n >= opt_.batchsize ||
        (opt_.algorithm == IdentifierAlgorithm::MultiScale && n % opt_.multi_scale_factor == 0))
      ++stats_.analyses_skipped;
    if (n >= opt_.batchsize) clear_history();
    return;
  }
  if (n >= opt_.batchsize) {
    if (MinedSlice m = worth_mining(n);
        m.tokens.empty() || (last_mined_ == m.to - m.from && last_mined_from_ == m.from)) {
      ++stats_.analyses_skipped;
    } else {
      launch(std::move(m.tokens));
    }
    clear_history();
    return;
  }
  if (opt_.algorithm != IdentifierAlgorithm::MultiScale) return;
  // A new phase (the program's start, or after a barrier) is looked at early, over its own
  // ops only, twice (at a quarter and half a unit), and at once: a loop that starts there is
  // found within a few iterations. (A slice that short costs microseconds to mine, and mined
  // here it is taken in at the same op on every shard.)
  for (const std::size_t probe : early_probes())
    if (since_barrier_ == probe && probe >= 2 * opt_.min_trace_length && n >= probe &&
        n % opt_.multi_scale_factor) {
      const MinedSlice m = worth_mining(probe);
      if (m.tokens.empty()) {
        ++stats_.analyses_skipped;
        continue;
      }
      ++stats_.analyses;
      for (const auto& c : find_candidates(m.tokens, opt_.min_trace_length, opt_.max_trace_length))
        insert(c);
    }
  if (n % opt_.multi_scale_factor != 0) return;
  // The ruler function: after k units, analyse the last lowbit(k) units.
  std::size_t k = n / opt_.multi_scale_factor;
  std::size_t len = (k & (~k + 1)) * opt_.multi_scale_factor;
  MinedSlice m = worth_mining(len);
  if (m.tokens.empty()) {
    ++stats_.analyses_skipped;
    return;
  }
  // The same tokens as the last slice mined (a run that goes on leaves the part before it to
  // mine at every scale: 31 ops of Task Bench's stencil at 100, 200, 400 and 800 ops) would
  // find the same repeats again.
  if (m.to - m.from == last_mined_ && m.from == last_mined_from_) {
    ++stats_.analyses_skipped;
    return;
  }
  last_mined_from_ = m.from;
  last_mined_ = m.to - m.from;
  launch(std::move(m.tokens));
}

bool AutoTracer::long_loop_run(std::uint64_t end) const {
  return loop_run_from_ != kNoRun && end - loop_run_from_ >= 4 * opt_.max_trace_length;
}

AutoTracer::MinedSlice AutoTracer::worth_mining(std::size_t len) const {
  // A chain of tiny tasks traced by a short loop's traces back to back spent two thirds of the
  // utility thread mining slices of that loop (4.6 k instructions per op with a 1-op body:
  // mining costs 1.4-2.3 k per token, and the ruler function mines ~3.8 tokens per op). Such
  // a run holds repeats of the loop only (any repeat of a periodic word at least two periods
  // long has the loop's period) and fragments shorter than two periods, which never outscore
  // its trace; the loop's longer versions matter only once its runs break (issue()). So a
  // slice inside the run is not mined, and one reaching back before the run only up to where
  // the run starts: what came before is still mined at every scale. (Keeping a trace's length
  // of the run in the slice changed what the greedy selection picked there, and lost coverage
  // in AutoTrace.ATailReplaysAPrefixOfItsTrace.) Decided from the op stream alone: every shard
  // mines alike.
  const std::size_t n = history_.size(), first = n - std::min(len, n);
  auto whole = [&](std::size_t to) -> MinedSlice {
    return MinedSlice{std::vector<std::uint64_t>(history_.begin() + std::ptrdiff_t(first),
                                                 history_.begin() + std::ptrdiff_t(to)),
                      first, to};
  };
  if (last_issued_ == ~0u) return whole(n);
  const Candidate& c = candidates_[last_issued_];
  const std::size_t p = c.period;
  if (c.demoted || p == 0) return whole(n);
  if (loop_run_from_ == kNoRun) {
    // A slice after the last barrier (an early probe's, or any while no run of the loop is
    // under way) that is the loop last traced, after fewer than a minimum length of other
    // ops: mining it would find that loop again (before a phase's first trace is issued, say:
    // a loop's traces can be longer than an early probe's slice).
    const bool in_phase = barriers_.empty() || barriers_.back() < first;
    if (in_phase && loop_phase(c, first, n)) return {{}, first, first};
    return whole(n);
  }
  // Where the run starts in the slice (op numbers map to history positions unless a barrier's
  // marker lies between: then the periodicity test below fails).
  const std::size_t run_ops = std::size_t(next_op_ - loop_run_from_);
  const std::size_t run_at = run_ops >= n - first ? first : n - run_ops;
  if (n - run_at < 2 * p) return whole(n);
  // The run and the held ops after it go on with the loop's body: every token equals the one
  // a period later (a barrier's unique marker never does).
  if (last_break(p) > run_at) return whole(n);
  // Barriers before the run cut the slice into phases no occurrence of a repeat spans. A
  // phase that is the loop (two periods or more of its body, to its end) after fewer than a
  // minimum length of other ops adds nothing but the loop's own repeats, and ones of its few
  // first ops followed by the loop — a phase's start, as the run's start is, which the cut
  // at the run leaves out too. So it is not mined: the run before the last barrier, say, in a
  // program that waits on a fence every few hundred timesteps — mined whole by the ruler
  // function's longer slices, ~1.5 k instructions a token, inline with the ops on one core.
  // (Without a barrier, the slice is mined up to the run as it is: a loop's stretches inside
  // an outer loop make that loop's repeats.)
  auto at = std::lower_bound(barriers_.begin(), barriers_.end(), first);
  if (at == barriers_.end() || *at >= run_at) {
    // (Fewer than two minimum lengths hold no repeat worth a trace.)
    if (run_at - first < 2 * opt_.min_trace_length) return {{}, first, first};
    return whole(run_at);
  }
  MinedSlice m;
  for (std::size_t from = first; from < run_at;) {
    const std::size_t to = at != barriers_.end() && *at < run_at ? *at : run_at;
    if (!loop_phase(c, from, to)) {
      if (m.tokens.empty())
        m.from = from;
      else
        m.tokens.push_back(history_[from - 1]);  // (the barrier's unique marker)
      m.tokens.insert(m.tokens.end(), history_.begin() + std::ptrdiff_t(from),
                      history_.begin() + std::ptrdiff_t(to));
      m.to = to;
    }
    from = to + 1;
    if (at != barriers_.end()) ++at;
  }
  if (m.tokens.size() < 2 * opt_.min_trace_length) m.tokens.clear();
  return m;
}

std::size_t AutoTracer::last_break(std::size_t p) const {
  // Each position is compared once: asked at every analysis point, over a run as long as the
  // history, the scan from the run's start cost ~20 instructions an op.
  PeriodScan& s = period_scan_;
  if (s.period != p) s = PeriodScan{p, 0, 0};
  for (std::size_t i = s.checked; i + p < history_.size(); ++i)
    if (history_[i] != history_[i + p]) s.break_end = i + 1;
  s.checked = std::max(s.checked, history_.size() - std::min(p, history_.size()));
  return s.break_end;
}

void AutoTracer::clear_history() {
  history_.clear();
  barriers_.clear();
  last_mined_ = 0;
  period_scan_ = PeriodScan{};
}

bool AutoTracer::loop_phase(const Candidate& c, std::size_t from, std::size_t to) const {
  const std::size_t p = c.period;
  if (to - from < 2 * p) return false;
  std::size_t j = to - p;  // [j, to) has period p
  while (j > from && history_[j - 1] == history_[j - 1 + p]) --j;
  return to - j >= 2 * p && j - from < opt_.min_trace_length && starts_with_body(c, j);
}

bool AutoTracer::starts_with_body(const Candidate& c, std::size_t at) const {
  const std::size_t p = c.period;
  for (std::size_t r = 0; r < p; ++r) {
    std::size_t j = 0;
    while (j < p && history_[at + j] == c.tokens[(r + j) % p]) ++j;
    if (j == p) return true;
  }
  return false;
}

void AutoTracer::launch(std::vector<std::uint64_t> slice) {
  ++stats_.analyses;
  Job job;
  job.ingest_at = next_op_ + delay_;
  auto promise = std::make_shared<std::promise<std::vector<std::vector<std::uint64_t>>>>();
  job.result = promise->get_future();
  const std::size_t min_len = opt_.min_trace_length, max_len = opt_.max_trace_length;
  if (opt_.synchronous) {
    promise->set_value(find_candidates(slice, min_len, max_len));
  } else {
    background_->run(
        [promise, s = std::move(slice), min_len, max_len, slow = opt_.analysis_delay_us] {
          try {
            if (slow) std::this_thread::sleep_for(std::chrono::microseconds(slow));
            promise->set_value(find_candidates(s, min_len, max_len));
          } catch (...) {
            promise->set_exception(std::current_exception());
          }
        });
  }
  jobs_.push_back(std::move(job));
}

void AutoTracer::ingest_due() {
  while (analysis_due()) {
    Job& j = jobs_.front();
    const bool late = j.result.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
    if (late) {
      // Wait for it (every shard takes it in at this op), and give later ones longer.
      ++stats_.late_analyses;
      background_->help();
    }
    for (const auto& c : j.result.get()) insert(c);
    jobs_.pop_front();
    const std::uint64_t k = ingested_++;
    if (!agreement_) {
      if (late) raise_delay();
      continue;
    }
    // Shards raise the delay together: for analysis k - lag, once all have reported it.
    agreement_->report(k, late);
    ingested_at_.push_back(next_op_);
    if (k < kAgreementLag) continue;
    // A shard that has not reported k - lag yet may be waiting for one of our ops from before
    // that point (a future, its window): none of them may stay held while we wait for it.
    // Deterministic (a point in the op stream), and a no-op unless traces are longer than the
    // ops between analyses.
    forward_until(ingested_at_.front());
    ingested_at_.pop_front();
    if (agreement_->any_late(k - kAgreementLag)) raise_delay();
  }
}

void AutoTracer::raise_delay() {
  delay_ = std::min<std::size_t>(delay_ * 2, 1 << 16);
}

void AutoTracer::insert(const std::vector<std::uint64_t>& found) {
  if (found.size() < opt_.min_trace_length) return;
  std::optional<Cycle> cycle = as_cycle(found, opt_.min_trace_length, opt_.max_trace_length);
  if (!cycle) {
    add_pieces(found);
    return;
  }
  // Every phase and multiple of a loop's body is one loop, known by its canonical rotation.
  // A loop seen twice in a row shows which shorter loops are nested in it.
  std::string key = key_of(cycle->canonical);
  demote_inner_loops(found, &key);
  const std::size_t p = cycle->body.size();
  if (p > opt_.max_trace_length) {
    // A body longer than a trace: its pieces, cut from the canonical rotation so that every
    // analysis that finds this loop, in whatever phase, cuts it alike (pieces already known
    // are not added again).
    add_pieces(cycle->canonical);
    return;
  }
  auto [it, fresh] = cycles_.try_emplace(key, 0u);
  std::vector<std::uint64_t> tokens;
  tokens.reserve(cycle->periods * p);
  for (std::size_t k = 0; k < cycle->periods; ++k)
    tokens.insert(tokens.end(), cycle->body.begin(), cycle->body.end());
  if (!fresh) {
    Candidate& known = candidates_[it->second];
    // A candidate of this loop with as many periods exists: nothing new to trace.
    if (known.tokens.size() >= tokens.size() ||
        (known.longer.size() >= tokens.size() && known.replays > 0))
      return;
    if (known.replays > 0) {
      // Recorded already: the longer one would only record the same loop again, unless the
      // loop's runs do not fit the shorter one (a replay of it that does not follow the
      // previous one directly: see issue()). Kept until then.
      known.longer = std::move(tokens);
      return;
    }
    // Not recorded yet: the longer one takes its place.
    demote(it->second);
  }
  add_loop(key, std::move(tokens), p, fresh ? std::nullopt : std::optional(it->second));
}

void AutoTracer::add_loop(const std::string& key, std::vector<std::uint64_t> tokens,
                          std::size_t period, std::optional<std::uint32_t> shorter) {
  // The longer one inherits the shorter one's sightings, and its bonus once that one has
  // replayed: it is the same loop, and should win the score as soon as it can be traced.
  // (Read before add_candidate, which may move candidates_.)
  const Candidate* was = shorter ? &candidates_[*shorter] : nullptr;
  const double inherited = was ? was->visits : 0.0;
  const bool replayed = was && (was->replays > 0 || was->replayed_loop);
  const bool still_traced = was && !was->demoted;
  const std::string tokens_key = key_of(tokens);
  if (!add_candidate(std::move(tokens), period)) {
    // The same tokens are a candidate already (found as a plain repeat): it stands for the
    // loop from now on; or they are too short to trace, and the loop has no candidate.
    auto known = known_.find(tokens_key);
    if (known == known_.end()) {
      // (A shorter one still traced keeps standing for the loop.)
      if (!still_traced) cycles_.erase(key);
      return;
    }
    cycles_[key] = known->second;
    candidates_[known->second].cycle = key;
    candidates_[known->second].period = period;
    return;
  }
  cycles_[key] = std::uint32_t(candidates_.size() - 1);
  Candidate& added = candidates_.back();
  added.cycle = key;
  if (added.visits < inherited) added.visits = inherited;
  added.replayed_loop = replayed;
}

void AutoTracer::add_pieces(const std::vector<std::uint64_t>& tokens) {
  // Longer than the maximum: cut into pieces of the maximum length; a tail shorter than the
  // minimum joins the last piece (dropping it would leave those ops untraced every time).
  for (std::size_t at = 0; at < tokens.size();) {
    std::size_t len = std::min(opt_.max_trace_length, tokens.size() - at);
    if (tokens.size() - at - len < opt_.min_trace_length) len = tokens.size() - at;
    if (len < opt_.min_trace_length) break;
    add_candidate(std::vector<std::uint64_t>(tokens.begin() + std::ptrdiff_t(at),
                                             tokens.begin() + std::ptrdiff_t(at + len)),
                  0);
    at += len;
  }
}

void AutoTracer::demote_inner_loops(const std::vector<std::uint64_t>& found,
                                    const std::string* cycle_of_found) {
  for (std::size_t k = 0; k < loops_.size();) {
    const std::uint32_t ci = loops_[k];
    Candidate& c = candidates_[ci];
    const std::size_t p = c.period;
    // The same loop (found again, in any phase or multiple) is no reason.
    const bool same = cycle_of_found && *cycle_of_found == c.cycle;
    bool inside = false;
    if (!same && found.size() >= 2 * p + 1)
      for (std::size_t at = 0; at + 2 * p <= found.size() && !inside; ++at) {
        bool twice = true;
        for (std::size_t i = 0; i < 2 * p && twice; ++i) twice = found[at + i] == c.tokens[i % p];
        inside = twice;
      }
    if (!inside) {
      ++k;
      continue;
    }
    // (demote() takes it out of loops_: k now names the next one.)
    // An inner loop of a longer repeating structure: its traces would cut that structure at
    // places that change from one outer iteration to the next; the outer pieces tile it.
    demote(ci);
    ++stats_.inner_loops_demoted;
  }
}

void AutoTracer::demote(std::uint32_t ci) {
  ++trie_changes_;
  candidates_[ci].demoted = true;
  std::uint32_t node = 0;
  for (std::uint64_t t : candidates_[ci].tokens) {
    node = trie_[node].child(t);
    std::erase(trie_[node].eligible, ci);
  }
  trie_[node].candidate = -1;
  std::erase_if(ready_, [&](const Match& m) { return m.candidate == ci; });
  std::erase(loops_, ci);
}

bool AutoTracer::add_candidate(std::vector<std::uint64_t> piece, std::size_t period) {
  if (piece.size() < opt_.min_trace_length) return false;
  std::string key = key_of(piece);
  if (known_.count(key)) return false;
  ++trie_changes_;
  std::uint32_t node = 0;
  for (std::uint64_t t : piece) {
    std::uint32_t next = trie_[node].child(t);
    if (next == Node::kNone) {
      trie_.emplace_back();
      next = std::uint32_t(trie_.size() - 1);
      trie_[node].add_child(t, next);
    }
    node = next;
  }
  Candidate c;
  c.tokens = std::move(piece);
  c.trace_id = kFirstTraceId + std::uint32_t(candidates_.size());
  c.inserted_at = next_op_;
  trie_[node].candidate = std::int32_t(candidates_.size());
  known_.emplace(std::move(key), std::uint32_t(candidates_.size()));
  sink_.candidate_found(c.trace_id, c.tokens.size(), next_op_);
  candidates_.push_back(std::move(c));
  ++stats_.candidates;
  // A loop (the analysis saw its body at least twice in a row, then again) is as good as
  // sighted already: it may be traced from its next occurrence on.
  if (period) {
    Candidate& added = candidates_.back();
    added.period = period;
    loops_.push_back(std::uint32_t(candidates_.size() - 1));
    added.sightings = opt_.visit_threshold;
    added.visits = double(opt_.visit_threshold);
    mark_eligible(std::uint32_t(candidates_.size() - 1));
  }
  return true;
}

void AutoTracer::mark_eligible(std::uint32_t ci) {
  ++trie_changes_;
  // Pointers along its path now hold their ops back.
  std::uint32_t node = 0;
  for (std::uint64_t t : candidates_[ci].tokens) {
    node = trie_[node].child(t);
    trie_[node].eligible.push_back(ci);
  }
}

namespace {
// A sighting's weight after `since` trace lengths: 0.99^since (as exp: a pow cost ~120
// instructions, asked at every op while a longer match holds a shorter one back).
double decay(double since) {
  static const double kLogDecay = std::log(0.99);
  if (since == 0) return 1.0;  // (back to back: every sighting of a loop's run)
  return std::exp(since * kLogDecay);
}
}  // namespace

double AutoTracer::score(const Candidate& c, std::uint64_t now) const {
  const double len = double(c.tokens.size());
  const double since = double(now - std::min(now, c.last_visit_end)) / len;
  const double visits = c.visits * decay(since);
  // "Slightly" more for a trace already replayed (paper §4.3): enough to break near-ties,
  // small enough that a clearly longer candidate still takes over.
  const double bonus = c.replays > 0 || c.replayed_loop ? 1.25 : 1.0;
  return std::min(visits, 10.0) * len * bonus;
}

double AutoTracer::score_at_now(std::uint32_t ci) {
  if (score_now_.size() <= ci) {
    score_now_.resize(candidates_.size(), 0.0);
    score_stamp_.resize(candidates_.size(), ~std::uint64_t(0));
  }
  if (score_stamp_[ci] != next_op_) {
    score_now_[ci] = score(candidates_[ci], next_op_);
    score_stamp_[ci] = next_op_;
  }
  return score_now_[ci];
}

void AutoTracer::advance(std::uint64_t token, std::uint64_t op) {
  // Step every pointer (keeping their order by start), start one at the root, and handle the
  // pointers that complete a candidate — all in one pass.
  std::size_t live = 0;
  const std::size_t old = pointers_.size();
  for (std::size_t i = 0; i <= old; ++i) {
    Pointer p;
    if (i < old) {
      std::uint32_t next = trie_[pointers_[i].node].child(token);
      if (next == Node::kNone) {
        pointers_changed_ = true;
        continue;
      }
      p = Pointer{next, pointers_[i].start};
    } else {
      // Saturated, only the pointer that can continue the run of traces is worth starting.
      if ((saturated_ || settled_) && op != pending_from_) break;
      std::uint32_t root = trie_[0].child(token);
      if (root == Node::kNone) break;
      p = Pointer{root, op};
      ++stats_.pointers_started;
      pointers_changed_ = true;
    }
    if (live < old) {
      pointers_[live] = p;
    } else {
      pointers_.push_back(p);
    }
    ++live;
    if (trie_[p.node].candidate >= 0) {
      complete(p, op);
      pointers_changed_ = true;
    }
  }
  pointers_.resize(live);
}

void AutoTracer::complete(const Pointer& p, std::uint64_t op) {
  const std::uint32_t ci = std::uint32_t(trie_[p.node].candidate);
  Candidate& c = candidates_[ci];
  const std::uint64_t end = op + 1;
  if (p.start >= c.inserted_at && p.start >= c.last_visit_end) {
    // A sighting: decay the old count by the trace lengths since the last one.
    const double since =
        double(p.start - std::min(p.start, c.last_visit_end)) / double(c.tokens.size());
    c.visits = c.visits * decay(since) + 1.0;
    c.last_visit_end = end;
    if (++c.sightings == opt_.visit_threshold) mark_eligible(ci);
  }
  // A match can be issued only if all of its ops are still held.
  if (c.sightings >= opt_.visit_threshold && p.start >= pending_from_)
    ready_.push_back(Match{ci, p.start, end, score(c, end)});
}

void AutoTracer::forward_until(std::uint64_t op) {
  if (pending_from_ < op) {  // the run of traces is broken
    saturated_ = false;
    settled_ = false;
    loop_run_from_ = kNoRun;
  }
  // (Advance first: if the analysis of an op throws, that op is not forwarded again.)
  while (pending_from_ < op) {
    pending_tokens_.pop_front();
    sink_.forward_untraced(pending_from_++);
  }
}

void AutoTracer::issue(std::uint32_t ci, std::uint64_t start, std::uint64_t end) {
  forward_until(start);
  if (Candidate& was = candidates_[ci];
      was.replays > 0 && was.last_issue_end != start && !was.longer.empty()) {
    // The loop's runs do not fit this candidate: its longer version, found meanwhile, may.
    // (Traced from its next occurrence on: this issue goes ahead.)
    std::vector<std::uint64_t> longer = std::move(was.longer);
    was.longer.clear();
    const std::string key = was.cycle;  // (add_loop may move candidates_)
    add_loop(key, std::move(longer), was.period, ci);
  }
  Candidate& c = candidates_[ci];
  const bool run_goes_on =
      loop_run_from_ != kNoRun && ci == last_issued_ && c.last_issue_end == start;
  if (!run_goes_on) loop_run_from_ = c.period ? start : kNoRun;
  c.last_issue_end = end;
  ++c.replays;
  last_issued_ = ci;
  hand_on(c.trace_id, start, end, false);
}

bool AutoTracer::worth_lengthening(const Candidate& c) const {
  // (A loop, not lengthened yet, with room for another period.)
  const std::size_t p = c.period;
  if (c.lengthened || p == 0 || c.tokens.size() + p > opt_.max_trace_length) return false;
  const double s = double(c.tokens.size()), l = double(opt_.max_trace_length / p * p);
  const double rent_paid = double(c.replays) * s * (1.0 / s - 1.0 / l);
  return rent_paid >= l * opt_.record_op_in_replays;
}

void AutoTracer::lengthen(std::uint32_t ci) {
  Candidate& c = candidates_[ci];
  if (!worth_lengthening(c)) return;
  const std::size_t p = c.period;
  c.lengthened = true;
  std::vector<std::uint64_t> tokens;
  tokens.reserve(opt_.max_trace_length);
  for (std::size_t k = 0; k < opt_.max_trace_length / p; ++k)
    tokens.insert(tokens.end(), c.tokens.begin(), c.tokens.begin() + std::ptrdiff_t(p));
  ++stats_.loops_lengthened;
  const std::string key = c.cycle;  // (add_loop may move candidates_)
  add_loop(key, std::move(tokens), p, ci);
}

void AutoTracer::hand_on(std::uint32_t trace_id, std::uint64_t start, std::uint64_t end,
                         bool prefix) {
  // The trace's ops leave the pending window before they are handed on (if their analysis
  // throws, they are not handed on again).
  pending_tokens_.erase(pending_tokens_.begin(),
                        pending_tokens_.begin() + std::ptrdiff_t(end - pending_from_));
  pending_from_ = end;
  ++stats_.traces_issued;
  stats_.ops_traced += end - start;
  if (prefix) {
    loop_run_from_ = kNoRun;  // (a prefix ends a loop's run)
    sink_.begin_prefix(trace_id, start, std::size_t(end - start));
  } else {
    sink_.begin_trace(trace_id, start, std::size_t(end - start));
  }
  sink_.forward_trace_ops(start, end);
  sink_.end_trace(trace_id);
}

void AutoTracer::replay_held(std::uint64_t until, bool prefixes) {
  // Only candidates already replaying: a recording here could not be replayed before the
  // barrier, and might never be.
  const auto replayed = [&](std::int32_t ci) {
    return ci >= 0 && candidates_[std::size_t(ci)].replays > 0 &&
           !candidates_[std::size_t(ci)].demoted &&
           candidates_[std::size_t(ci)].sightings >= opt_.visit_threshold;
  };
  for (std::uint64_t at = pending_from_; at < until;) {
    std::uint64_t best_end = at, prefix_end = at;
    std::uint32_t best = 0, prefix_of = 0;
    std::uint32_t node = 0;
    for (std::uint64_t i = at; i < until; ++i) {
      node = trie_[node].child(pending_tokens_[std::size_t(i - pending_from_)]);
      if (node == Node::kNone) break;
      if (const std::int32_t ci = trie_[node].candidate; replayed(ci)) {
        best = std::uint32_t(ci);
        best_end = i + 1;
      }
      // The ops so far begin a candidate that has replayed (eligible: those ending here or
      // further down).
      for (std::uint32_t ci : trie_[node].eligible)
        if (replayed(std::int32_t(ci))) {
          prefix_of = ci;
          prefix_end = i + 1;
          break;
        }
    }
    if (best_end > at) {
      issue(best, at, best_end);
      ++stats_.held_replays;
      at = best_end;
    } else if (prefixes && prefix_end - at >= kMinPrefix) {
      // (A tail: the rest of a loop's last iteration before the barrier or the end.)
      forward_until(at);
      hand_on(candidates_[prefix_of].trace_id, at, prefix_end, true);
      ++stats_.held_replays;
      ++stats_.prefix_replays;
      at = prefix_end;
    } else {
      ++at;
    }
  }
}

void AutoTracer::issue_ready() {
  // pointers_ is ordered by start (new pointers are appended, survivors keep their order).
  auto first_held = [&] {
    return std::lower_bound(pointers_.begin(), pointers_.end(), pending_from_,
                            [](const Pointer& p, std::uint64_t v) { return p.start < v; });
  };
  auto earliest_live = [&] {
    for (auto it = first_held(); it != pointers_.end(); ++it)
      if (!trie_[it->node].eligible.empty()) return it->start;
    return next_op_;
  };
  if (held_back_ && !pointers_changed_ && held_back_at_ == trie_changes_) return;
  held_back_ = pointers_changed_ = false;
  const bool following = saturated_ || settled_;
  while (!ready_.empty()) {
    std::erase_if(ready_, [&](const Match& m) { return m.start < pending_from_; });
    if (ready_.empty()) break;
    // Best score first; among equals the earliest.
    auto best = std::min_element(ready_.begin(), ready_.end(), [](const Match& a, const Match& b) {
      return a.score != b.score ? a.score > b.score : a.start < b.start;
    });
    Match m = *best;
    // No speculation: wait while a match in progress that overlaps this one could still become
    // a longer trace that scores better. Overlapping matches that would not win are not worth
    // waiting for (in a periodic stream one starts at every period).
    const std::size_t len = std::size_t(m.end - m.start);
    bool blocked = false;
    for (auto it = first_held(); it != pointers_.end() && !blocked && it->start < m.end; ++it) {
      const Pointer& p = *it;
      for (std::uint32_t ci : trie_[p.node].eligible)
        if (candidates_[ci].tokens.size() > len && score_at_now(ci) > m.score) {
          blocked = true;
          break;
        }
    }
    if (blocked) {
      held_back_ = true;
      held_back_at_ = trie_changes_;
      break;
    }
    const bool back_to_back = m.start == pending_from_ && m.candidate == last_issued_;
    issue(m.candidate, m.start, m.end);
    // A maximal trace repeating back to back is a steady state nothing can improve on: stop
    // mining and watching for other candidates until the run breaks (an op goes untraced).
    saturated_ = back_to_back && len >= opt_.max_trace_length;
    // A loop's trace that has run back to back for four maximal lengths is one too, as far as
    // watching goes: nothing overtook it meanwhile, and nothing in its run can (the slices
    // mined are decided as before: worth_mining skips those inside the run).
    // One that settled before settles again as soon as it runs back to back once more (after a
    // wait, say: a timed loop after its warm-up spent its first 256 ops watching again, at
    // ~200 instructions an op with a 1-op body).
    Candidate& issued = candidates_[m.candidate];
    settled_ = back_to_back && (issued.settled_before || long_loop_run(m.end));
    if (settled_) {
      issued.settled_before = true;
      lengthen(m.candidate);
    }
    // Pointers that started inside the issued trace stay: they can no longer produce a trace,
    // but their sightings still count, so a longer candidate can overtake the one in use.
  }
  // Ops no held pointer or ready match can still claim go on untraced.
  std::uint64_t keep = earliest_live();
  for (const Match& m : ready_) keep = std::min(keep, m.start);
  if (following && keep > pending_from_) replay_held(keep, false);
  forward_until(keep);
}

}  // namespace reprise::tracing
