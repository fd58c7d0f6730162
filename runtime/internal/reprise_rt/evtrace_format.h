#pragma once
// Compressed event traces (-lg:evtrace FILE), after ScalaTrace II: what one shard did per op,
// as loops of op records whose varying values are elastic (count, sum, min, max and a log
// histogram), merged across shards into records with rank lists. The runtime writes them;
// reprise-evtrace prints them and reprise-whatif replays them on SimGrid. docs/evtrace.md
// describes the text format.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace reprise::detail::evtrace {

// A varying value (ScalaTrace II §3.1): its distribution in quarter-octave bins.
struct Stat {
  std::uint64_t n = 0;
  double sum = 0;
  std::uint64_t min = ~std::uint64_t(0), max = 0;
  std::map<std::uint16_t, std::uint64_t> bins;  // bin -> count

  void add(std::uint64_t v);
  void merge(const Stat& o);
  double mean() const { return n ? sum / double(n) : 0.0; }
  // A value drawn from the histogram (§3.5's probabilistic replay), within [min, max].
  double sample(std::mt19937_64& rng) const;
  static std::uint16_t bin_of(std::uint64_t v);
};

// Sorted shard numbers, written as ranges ("0,2-5").
using RankList = std::vector<std::uint32_t>;
std::string ranks_text(const RankList& r);
RankList parse_ranks(std::string_view text);

// Data sent to or received from another shard for one op, by the peer's offset from the
// recording shard (relative encoding: the interior shards of a halo program look alike).
struct Peer {
  std::int32_t offset = 0;
  Stat bytes;  // per op
};

// What one op did on the shards in `ranks` (shards of one shape share a variant).
struct Variant {
  RankList ranks;
  std::uint32_t points = 0;  // points that ran on the shard
  std::uint32_t copies = 0;  // copies within the shard
  std::vector<Peer> sends, recvs;
  // Completions asked of other shards while the op was analysed (Request messages; `bytes`
  // holds the count per op): a point here waited for a point there.
  std::vector<Peer> asks;
  bool same_shape(const Variant& o) const;
  void merge_values(const Variant& o);  // same shape
};

// One op of the stream (its kind, task and trace), as every shard saw it. Its times are
// histograms over every shard and iteration it stands for (ScalaTrace II merges them so);
// what differs between shards in shape is in the variants.
struct Element {
  std::string kind;  // "index_task", "task", "fill", "copy", "fence", ...
  std::string task;
  std::uint32_t trace = 0;  // the trace it was recorded or replayed in (0: none)
  Stat issue_ns;            // the application thread's time before issuing it (since the last op)
  Stat util;                // the utility thread's time on the op (ns): analysis, or a replay
  Stat point_ns;            // each point's duration
  Stat copy_ns;             // each copy's duration within a shard
  // The program blocks after this op (a future read, a fence waited for): the next op is
  // issued once a result is in. Part of the shape (the same on every shard).
  bool then_waits = false;
  std::vector<Variant> variants;
  void merge_times(const Element& o);
};

// A leaf (one op) or a loop (RSD/PRSD: `count` times its body).
struct Node {
  std::uint64_t count = 0;  // 0: a leaf
  Element element;
  std::vector<Node> body;
  std::uint64_t hash = 0;  // of the shape: compared before anything else

  bool is_loop() const { return count != 0; }
  // Same shape: kinds, tasks, traces, loop counts and (within a shard) variant shapes.
  bool same_shape(const Node& o, bool variants_too) const;
  void merge_values(const Node& o);  // same shape within a shard
  void merge_ranks(const Node& o);   // same shape across shards: variants joined
  std::uint64_t ops() const;         // ops it stands for
  std::size_t size() const;          // records it holds
};
std::uint64_t shape_hash(const Node& n, bool variants_too);

// Online loop compression of one shard's op stream (ScalaTrace II's RSD folding: the tail
// that repeats the nodes before it becomes a loop; a loop whose body the tail repeats counts
// one more). window: the longest loop body looked for, in nodes.
class Compressor {
 public:
  explicit Compressor(std::size_t window = 256) : window_(window) {}
  void append(Node leaf);
  const std::vector<Node>& nodes() const { return seq_; }
  std::vector<Node> take() { return std::move(seq_); }

 private:
  bool fold_tail();
  std::vector<Node> seq_;
  std::size_t window_;
};

// A whole trace: groups of shards with one sequence each (shards whose sequences have one
// shape share a group; their differences are the elements' variants).
struct Group {
  RankList ranks;
  std::vector<Node> seq;
  std::uint64_t ops() const;  // ops its loops unroll to
};
struct Trace {
  std::uint32_t shards = 1;
  std::uint32_t cpus = 1, utils = 1, gpus = 0;
  std::string program;
  std::vector<Group> groups;
  // Per shard and channel: messages sent over the whole run (control and data).
  std::map<std::string, Stat> messages;  // channel -> per-shard count
  Stat waits_ns;                         // the application thread's waits
  std::uint64_t late_records = 0;        // records that came after their op was written
};

// Adds b's groups to a (a group of the same shape merges, rank lists joined).
void merge(Trace& a, Trace b);
std::string write(const Trace& t);
// Throws reprise::Error naming the line on malformed input.
Trace parse(std::string_view text);
Trace read_file(const std::string& path);

}  // namespace reprise::detail::evtrace
