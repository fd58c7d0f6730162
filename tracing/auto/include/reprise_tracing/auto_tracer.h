#pragma once
// Apophenia's front-end (ASPLOS'25, Algorithm 1) over a stream of op tokens: a history buffer
// mined for repeated substrings by asynchronous analyses on the ruler-function schedule, a
// trie of candidate traces, pointers that follow partial matches as tokens arrive, a queue of
// pending ops (no speculation: a trace is issued only once all of it has arrived) and a score
// that picks among overlapping matches. It knows nothing about ops: it tells its sink, in
// stream order, which ops to forward untraced and which to wrap in a trace.
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace reprise::tracing {

enum class IdentifierAlgorithm { MultiScale, Batched };

struct AutoTraceOptions {
  std::size_t min_trace_length = 5;
  std::size_t max_trace_length = 64;
  std::size_t batchsize = 1000;         // history buffer size (tumbling)
  std::size_t multi_scale_factor = 50;  // ruler-function unit
  IdentifierAlgorithm algorithm = IdentifierAlgorithm::MultiScale;
  std::size_t visit_threshold = 2;  // sightings of a candidate before it is traced
  // What recording one op costs, in replays' fixed costs (the work a replay does once,
  // whatever its length). Decides when a settled loop's maximal trace is worth recording
  // (AutoTracer::lengthen). Measured on Task Bench's stencil, utility-thread instructions: a
  // replay's fixed part ~1.4k (per timestep with manual traces of 6, 16, 64 ops: 902, 761,
  // 691), a recorded op ~10k.
  double record_op_in_replays = 7.0;
  bool synchronous = false;  // run analyses inline (simulator, tests)
  // Ops after an analysis starts before its result is taken in (raised when one was late):
  // every shard of a control-replicated run takes results in at the same op.
  std::size_t ingest_delay = 16;
  // Testing and experiments: every background analysis takes this much longer (µs).
  std::size_t analysis_delay_us = 0;
};

// Shards of a control-replicated run must take the same analysis results in at the same op
// (paper §5.1). Every shard reports whether it had to wait for analysis k; once every shard
// has reported, all raise the delay together, so later ingestion points agree everywhere.
class LateAgreement {
 public:
  virtual ~LateAgreement() = default;
  // This shard's verdict on the k-th analysis taken in.
  virtual void report(std::uint64_t k, bool late) = 0;
  // Whether any shard was late on analysis k; waits until every shard has reported it.
  virtual bool any_late(std::uint64_t k) = 0;
};

// Receives the decisions, in op order. Every op index is reported exactly once, either
// through forward_untraced or between begin_trace and end_trace.
class AutoTraceSink {
 public:
  virtual ~AutoTraceSink() = default;
  virtual void forward_untraced(std::uint64_t op) = 0;
  virtual void begin_trace(std::uint32_t trace_id, std::uint64_t first_op, std::size_t length) = 0;
  // Instead of begin_trace, for ops held at a barrier or the end that are the first `length`
  // ops of a trace already recorded: they replay that prefix of its template where one
  // matches and its conditions hold, and are analysed untraced otherwise (never recorded).
  // Then forward_traced and end_trace as for a trace. Default: as begin_trace.
  virtual void begin_prefix(std::uint32_t trace_id, std::uint64_t first_op, std::size_t length) {
    begin_trace(trace_id, first_op, length);
  }
  virtual void forward_traced(std::uint64_t op) = 0;
  // The ops [first, end) of the trace begun, in order.
  virtual void forward_trace_ops(std::uint64_t first, std::uint64_t end) {
    for (std::uint64_t i = first; i < end; ++i) forward_traced(i);
  }
  virtual void end_trace(std::uint32_t trace_id) = 0;
  // A candidate trace was taken in from an analysis (for inspection; optional).
  virtual void candidate_found(std::uint32_t /*trace_id*/, std::size_t /*length*/,
                               std::uint64_t /*at_op*/) {}
};

struct AutoTraceStats {
  std::uint64_t ops = 0;
  std::uint64_t analyses = 0;
  std::uint64_t late_analyses = 0;  // not finished when due: the op stream waited
  std::uint64_t candidates = 0;
  std::uint64_t traces_issued = 0;
  std::uint64_t ops_traced = 0;
  std::uint64_t held_replays = 0;    // traces issued for held ops at a barrier or the end
  std::uint64_t prefix_replays = 0;  // of those: prefixes of a trace (begin_prefix)
  std::uint64_t inner_loops_demoted = 0;
  // Analyses not run: their slice lay inside an unbroken run of one loop's traces, where
  // mining could only find that loop again (AutoTracer::worth_mining; a slice reaching back
  // before the run is mined up to where the run starts).
  std::uint64_t analyses_skipped = 0;
  // Matches followed from their first op (pointers into the candidates' trie): one per op
  // while anything may start there, one per trace once a loop's run has settled.
  std::uint64_t pointers_started = 0;
  // Settled loops whose maximal version was added (AutoTracer::lengthen).
  std::uint64_t loops_lengthened = 0;
};

// Of a run's ops in order, which ran in replayed traces: the fraction replayed, the first
// replayed op, and the first op from which on at least 99% of the ops up to the last replayed
// one are replayed (the steady state; -1: none). For the sim's RESULT line and the log.
struct CoverageSummary {
  double coverage = 0;
  long long first_replay = -1;
  long long steady_at = -1;
};
CoverageSummary summarize_coverage(const std::vector<bool>& replayed);

class AutoTracer {
 public:
  // agreement: the other shards (nullptr: a single process, where a late analysis raises the
  // delay at once).
  AutoTracer(const AutoTraceOptions& options, AutoTraceSink& sink,
             LateAgreement* agreement = nullptr);
  ~AutoTracer();
  AutoTracer(const AutoTracer&) = delete;
  AutoTracer& operator=(const AutoTracer&) = delete;

  // The next op's token; its index is the number of ops seen before it.
  void push(std::uint64_t token);
  // While a loop's traces follow each other back to back (saturated or settled) and every op
  // pushed has been handed on: the candidate the run goes on with, if it does — its trace id
  // and tokens; null otherwise. (What the tracer does with the next ops is still decided as
  // they are pushed: a caller that hands them on ahead must be ready for anything else.)
  const std::vector<std::uint64_t>* run_ahead(std::uint32_t& trace_id) const;
  // Takes in the leading tokens that only go on the run being followed — as push would, where
  // it would do nothing else (no analysis due, no candidate completed, nothing to hand on) —
  // and returns how many (0: push the next one).
  std::size_t follow(std::span<const std::uint64_t> tokens);
  // An op that cannot be traced (or a blocking wait): forwards everything pending untraced,
  // breaks the token stream so no repeat spans it. The op itself is not counted.
  void barrier();
  // Forwards everything pending untraced (end of stream, or before a blocking wait).
  void flush();
  // Waits for (and, where no TBB worker does, runs) the analyses still in flight.
  void finish_background();

  const AutoTraceStats& stats() const { return stats_; }
  // Ops recorded in traces issued only once so far (recordings not replayed, yet or ever).
  std::uint64_t recorded_not_replayed() const;
  std::uint64_t ops_seen() const { return next_op_; }
  // Ops between an analysis's start and the op that takes its result in (agreed by shards).
  std::size_t ingest_delay() const { return delay_; }
  // A shard raises its delay for late analysis k only when taking in analysis k + kAgreementLag:
  // by then every shard has long reported k, so waiting for the verdict rarely stalls.
  static constexpr std::uint64_t kAgreementLag = 2;

  static constexpr std::uint32_t kFirstTraceId = 0x40000000u;  // ids of automatic traces

 private:
  struct Candidate {
    std::vector<std::uint64_t> tokens;
    std::uint32_t trace_id = 0;
    std::uint64_t inserted_at = 0;  // op index when ingested
    std::uint64_t last_visit_end = 0;
    double visits = 0;          // decayed count of sightings, for the score
    std::size_t sightings = 0;  // sightings since insertion, for the visit threshold
    std::uint64_t replays = 0;  // times issued as a trace
    std::uint64_t last_issue_end = 0;
    // A loop's longer version found after it was recorded, waiting for a reason to be used.
    std::vector<std::uint64_t> longer;
    std::size_t period = 0;  // a loop's: its body is tokens[0, period)
    std::string cycle;       // and the key of the body's canonical rotation
    // A loop whose shorter candidate of the same loop has replayed: it scores as replayed
    // (the same loop; it should win over the shorter one as soon as it can be traced).
    bool replayed_loop = false;
    bool demoted = false;         // taken out of the trie (never matched or issued again)
    bool lengthened = false;      // a settled loop's: its maximal version was added (lengthen)
    bool settled_before = false;  // its run settled once (issue_ready)
  };
  struct Node {
    // Most nodes have one child: kept inline, so stepping a pointer is one comparison.
    static constexpr std::uint32_t kNone = 0xffffffffu;
    std::uint64_t first_token = 0;
    std::uint32_t first_child = kNone;
    std::unordered_map<std::uint64_t, std::uint32_t> more;
    std::uint32_t child(std::uint64_t t) const {
      if (first_child != kNone && first_token == t) return first_child;
      if (more.empty()) return kNone;
      auto it = more.find(t);
      return it == more.end() ? kNone : it->second;
    }
    void add_child(std::uint64_t t, std::uint32_t c) {
      if (first_child == kNone) {
        first_token = t;
        first_child = c;
      } else {
        more.emplace(t, c);
      }
    }
    std::int32_t candidate = -1;
    std::vector<std::uint32_t> eligible;  // eligible candidates ending here or further down
  };
  struct Pointer {
    std::uint32_t node;
    std::uint64_t start;
  };
  struct Match {
    std::uint32_t candidate;
    std::uint64_t start, end;  // [start, end)
    double score;
  };
  struct Job {
    std::uint64_t ingest_at;
    std::future<std::vector<std::vector<std::uint64_t>>> result;
  };

  void maybe_analyse();  // analyse_due(), once history_ reaches analyse_at_
  void analyse_due();
  std::size_t next_analysis(std::size_t n) const;
  // When a new phase is looked at early (ops since the barrier): at a quarter and at half a
  // unit of the ruler schedule. (analyse_due() probes then; next_analysis() stops there.)
  std::array<std::size_t, 2> early_probes() const;
  void launch(std::vector<std::uint64_t> slice);
  // Whether the oldest analysis in flight is to be taken in at this op (push asks it at every
  // op, before calling ingest_due).
  bool analysis_due() const { return !jobs_.empty() && jobs_.front().ingest_at <= next_op_; }
  void ingest_due();
  void raise_delay();
  void insert(const std::vector<std::uint64_t>& tokens);
  void mark_eligible(std::uint32_t candidate);
  // Takes a candidate out of the trie: it is never matched or issued again.
  void demote(std::uint32_t candidate);
  void add_pieces(const std::vector<std::uint64_t>& tokens);
  // A loop's candidate; `shorter`: the candidate of the same loop it takes over from.
  void add_loop(const std::string& key, std::vector<std::uint64_t> tokens, std::size_t period,
                std::optional<std::uint32_t> shorter);
  // period: a loop's (its tokens are whole periods of its cycle), else 0.
  // False when it is known already, or too short.
  bool add_candidate(std::vector<std::uint64_t> tokens, std::size_t period);
  // A loop found (`found`, known as `cycle_of_found`) that contains a loop candidate's body
  // twice in a row, and is not that loop itself, shows the candidate nested in it: the
  // candidate goes (its traces would cut the outer loop at places that change from one
  // outer iteration to the next).
  void demote_inner_loops(const std::vector<std::uint64_t>& found,
                          const std::string* cycle_of_found);
  // Before ops are forwarded at a barrier or the end: issue, among the ops still held, every
  // run that a candidate already replaying matches (longest first), instead of leaving it
  // untraced.
  // (Where no candidate matches a run whole, the longest prefix of one that has replayed.)
  // Also when a settled run breaks: the ops held for a longer match that did not complete
  // (before `until`, with no prefixes) go in the shorter traces that match them, not
  // untraced (only one match was followed in the run: nothing else claimed them).
  void replay_held(std::uint64_t until, bool prefixes);
  void issue(std::uint32_t candidate, std::uint64_t start, std::uint64_t end);
  // A loop's candidate that has settled (long_loop_run) but holds fewer periods than fit in
  // a maximal trace: that version of the loop is added, and takes over once sighted (every
  // replay has a fixed cost, and the loop's runs are long) — once the candidate's replays
  // have cost, in fixed costs the maximal trace would have saved, what recording it costs
  // (worth_lengthening). Once per candidate.
  void lengthen(std::uint32_t candidate);
  // Ski rental: the shorter trace is rented at (1/s - 1/L) replays' fixed costs per op more
  // than the maximal one, which is bought by recording its L ops. Buying once the rent paid
  // equals the price costs at most twice what knowing the loop's length would have: a run
  // that ends soon (Task Bench at 1,000 timesteps) never pays for a recording it cannot repay.
  bool worth_lengthening(const Candidate& c) const;
  // Hands ops start .. end-1 on as (a prefix of) trace trace_id.
  void hand_on(std::uint32_t trace_id, std::uint64_t start, std::uint64_t end, bool prefix);
  // A shorter run of held ops is left untraced (a prefix replay waits for everything before
  // it: for one op, analysing it costs less).
  static constexpr std::uint64_t kMinPrefix = 2;
  void advance(std::uint64_t token, std::uint64_t op);
  // A settled run's op inside its trace, or the first after one (saturated_ or settled_):
  // steps (or restarts) the one pointer alive, as advance() and issue_ready() would, and
  // returns true; false where they must run (a trace completes here, or anything else is
  // pending). ~180 instructions an op less on those ops.
  bool follow_run(std::uint64_t token, std::uint64_t op);
  // Only the pointer that continues the run of traces is alive, and no match waits to be issued
  // (or the one held back waits for nothing that has changed) — follow_run's and follow's case.
  bool only_run_pointer() const {
    return (saturated_ || settled_) && !pointers_changed_ && pointers_.size() == 1 &&
           (held_back_ ? held_back_at_ == trie_changes_ : ready_.empty());
  }
  // A pointer stepped to n completes no candidate and still claims the ops it holds (n lies
  // on an eligible candidate's path, or a match is held back for its longer candidate).
  bool goes_on(const Node& n) const {
    return n.candidate < 0 && (held_back_ || !n.eligible.empty());
  }
  void complete(const Pointer& p, std::uint64_t op);
  void issue_ready();
  void forward_until(std::uint64_t op);
  double score(const Candidate& c, std::uint64_t now) const;

  AutoTraceOptions opt_;
  AutoTraceSink& sink_;
  AutoTraceStats stats_;
  std::uint64_t next_op_ = 0;
  std::uint64_t pending_from_ = 0;            // first op not yet forwarded
  std::deque<std::uint64_t> pending_tokens_;  // tokens of ops pending_from_ … next_op_ - 1
  std::size_t since_barrier_ = 0;             // ops pushed since the last barrier
  // The length history_ must reach before analyse_due() can do anything (mine a slice, or
  // count one skipped): its schedule tested at every op cost ~50 instructions an op.
  std::size_t analyse_at_ = 0;
  std::vector<std::uint64_t> history_;
  std::vector<std::size_t> barriers_;  // positions of the barriers' markers in history_
  // The last slice of history_ mined on the ruler schedule, [from, from + length) (length 0:
  // none since history_ was last cleared).
  std::size_t last_mined_from_ = 0, last_mined_ = 0;
  std::deque<Job> jobs_;
  std::uint64_t ingested_ = 0;             // analyses taken in so far
  std::deque<std::uint64_t> ingested_at_;  // ops seen when the last few were taken in
  LateAgreement* agreement_;
  std::size_t delay_;
  std::vector<Node> trie_;
  std::vector<Candidate> candidates_;
  std::unordered_map<std::string, std::uint32_t> known_;   // candidate token string -> index
  std::unordered_map<std::string, std::uint32_t> cycles_;  // canonical cycle -> its candidate
  std::vector<std::uint32_t> loops_;                       // loop candidates still in the trie
  std::vector<Pointer> pointers_;
  std::vector<Match> ready_;
  // issue_ready's last pass stopped at a match that a longer one in progress held back. It is
  // looked at again only once something changed: a pointer stopped, started or completed, or
  // the trie did (trie_changes_; a held-back match waits its longer rival out, the scores'
  // decay meanwhile aside — in a settled loop's run the same verdict every op, ~100
  // instructions each).
  bool held_back_ = false;
  bool pointers_changed_ = true;
  std::uint64_t trie_changes_ = 0, held_back_at_ = 0;
  std::uint32_t last_issued_ = ~0u;  // candidate of the last trace issued
  bool saturated_ = false;           // maximal traces replaying back to back
  // A loop's trace replaying back to back for long (long_loop_run): only the pointer that can
  // continue the run is started (saturated_ also stops mining).
  bool settled_ = false;
  // First op of the unbroken run of back-to-back issues of one loop's trace (last_issued_)
  // that goes on to pending_from_; kNoRun when the last issue did not continue such a run.
  static constexpr std::uint64_t kNoRun = ~std::uint64_t(0);
  std::uint64_t loop_run_from_ = kNoRun;
  // Whether the loop whose trace was last issued has run back to back from loop_run_from_ to
  // op `end` for four maximal trace lengths.
  bool long_loop_run(std::uint64_t end) const;
  // The last `len` history tokens less what is not worth mining (AutoTracer::worth_mining):
  // if the run and the held ops after it go on with the loop's body, the run (none of a
  // slice inside it) and, before it, phases between barriers that are the loop's run
  // (loop_phase). `tokens` empty: nothing to mine. [from, to): history positions from the
  // first token kept to just after the last (the same again: the same repeats).
  struct MinedSlice {
    std::vector<std::uint64_t> tokens;
    std::size_t from = 0, to = 0;
  };
  MinedSlice worth_mining(std::size_t len) const;
  // One past the last position i with history_[i] != history_[i + p] (0: none), for the
  // period of the loop in use; positions compared before are not compared again.
  std::size_t last_break(std::size_t p) const;
  struct PeriodScan {
    std::size_t period = 0;
    std::size_t checked = 0;    // positions below this one are compared
    std::size_t break_end = 0;  // last_break's answer over those
  };
  mutable PeriodScan period_scan_;  // (a cache; reset with the history)
  void clear_history();
  // Whether history_[at, at + period) is a loop candidate's body, in any phase.
  bool starts_with_body(const Candidate& c, std::size_t at) const;
  // Whether history_[from, to), a phase between barriers (or a slice's end), holds no repeat
  // worth mining but the loop c's: c's body, two periods or more to its end, after fewer than
  // a minimum length of other ops.
  bool loop_phase(const Candidate& c, std::size_t from, std::size_t to) const;
  // Scores of candidates at the current op (computed at most once per op).
  std::vector<double> score_now_;
  std::vector<std::uint64_t> score_stamp_;
  double score_at_now(std::uint32_t candidate);
  struct Background;
  std::unique_ptr<Background> background_;  // oneTBB task group running analyses
};

}  // namespace reprise::tracing
