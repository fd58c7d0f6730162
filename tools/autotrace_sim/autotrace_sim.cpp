// reprise-autotrace-sim: runs the automatic-tracing front-end (the runtime's own code, with
// its analyses made synchronous and so deterministic) over a token stream read from stdin —
// whitespace-separated tokens, one per op; `!` stands for an untraceable op — and prints one
// line per op, `<index> <T|U> [trace id]`, then
//   RESULT coverage=<fraction of ops in replayed traces> traces=<n> first_replay=<op index>
//          wasted=<ops recorded in traces never replayed> steady_at=<op index>
// A trace's first issue is recorded; later issues of the same trace id are replays.
// steady_at is the first op from which on at least 99% of the ops up to the last replayed one
// are replayed (-1: none).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "reprise_tracing/auto_tracer.h"

using namespace reprise::tracing;

namespace {

struct Line {
  bool traced = false;
  bool replayed = false;
  std::uint32_t trace = 0;
};

class Recorder final : public AutoTraceSink {
 public:
  std::vector<Line> lines;             // per op of the stream
  std::vector<std::size_t> stream_of;  // tracer op index -> stream op index
  std::unordered_map<std::uint32_t, int> issued;
  std::uint32_t current = 0;
  bool replaying = false;
  void forward_untraced(std::uint64_t) override {}
  void begin_trace(std::uint32_t id, std::uint64_t, std::size_t) override {
    current = id;
    replaying = issued[id]++ > 0;
  }
  void forward_traced(std::uint64_t op) override {
    lines[stream_of[op]] = Line{true, replaying, current};
  }
  void end_trace(std::uint32_t) override {}
  void candidate_found(std::uint32_t id, std::size_t length, std::uint64_t at_op) override {
    if (verbose)
      std::fprintf(stderr, "candidate %u length %zu at_op %llu\n", id - AutoTracer::kFirstTraceId,
                   length, (unsigned long long)at_op);
  }
  bool verbose = false;
};

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr,
               "reprise-autotrace-sim: %s\n"
               "usage: reprise-autotrace-sim [-lg:auto_trace:min_trace_length N]\n"
               "         [-lg:auto_trace:max_trace_length N] [-lg:auto_trace:batchsize N]\n"
               "         [-lg:auto_trace:multi_scale_factor N]\n"
               "         [-lg:auto_trace:identifier_algorithm multi-scale|batched]\n"
               "         [-lg:auto_trace:visit_threshold N] < tokens\n",
               msg.c_str());
  std::exit(2);
}

std::size_t number(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || x < 1) usage("bad value for " + flag + ": " + v);
  return std::size_t(x);
}

}  // namespace

int main(int argc, char** argv) {
  AutoTraceOptions opt;
  opt.synchronous = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") usage("help");
    if (i + 1 >= argc) usage("missing value for " + a);
    std::string v = argv[++i];
    if (a == "-lg:auto_trace:min_trace_length")
      opt.min_trace_length = number(a, v);
    else if (a == "-lg:auto_trace:max_trace_length")
      opt.max_trace_length = number(a, v);
    else if (a == "-lg:auto_trace:batchsize")
      opt.batchsize = number(a, v);
    else if (a == "-lg:auto_trace:multi_scale_factor")
      opt.multi_scale_factor = number(a, v);
    else if (a == "-lg:auto_trace:visit_threshold")
      opt.visit_threshold = number(a, v);
    else if (a == "-lg:auto_trace:identifier_algorithm") {
      if (v == "multi-scale")
        opt.algorithm = IdentifierAlgorithm::MultiScale;
      else if (v == "batched")
        opt.algorithm = IdentifierAlgorithm::Batched;
      else
        usage("identifier_algorithm must be multi-scale or batched");
    } else {
      usage("unknown flag " + a);
    }
  }
  Recorder rec;
  rec.verbose = std::getenv("REPRISE_SIM_VERBOSE") != nullptr;
  std::uint64_t wasted = 0;  // recorded ops of traces issued once only
  {
    AutoTracer tracer(opt, rec);
    std::unordered_map<std::string, std::uint64_t> ids;
    std::string tok;
    while (std::cin >> tok) {
      rec.lines.emplace_back();
      if (tok == "!") {  // the untraceable op itself runs untraced
        tracer.barrier();
        continue;
      }
      rec.stream_of.push_back(rec.lines.size() - 1);
      auto it = ids.emplace(tok, ids.size() + 1).first;
      tracer.push(it->second);
    }
    tracer.flush();
    wasted = tracer.recorded_not_replayed();
  }
  std::uint32_t traces = std::uint32_t(rec.issued.size());
  std::vector<bool> replayed(rec.lines.size());
  for (std::size_t i = 0; i < rec.lines.size(); ++i) {
    const Line& l = rec.lines[i];
    if (l.traced)
      std::printf("%zu T %u\n", i, l.trace - AutoTracer::kFirstTraceId);
    else
      std::printf("%zu U\n", i);
    replayed[i] = l.replayed;
  }
  const CoverageSummary sum = summarize_coverage(replayed);
  std::printf("RESULT coverage=%.4f traces=%u first_replay=%lld wasted=%llu steady_at=%lld\n",
              sum.coverage, traces, sum.first_replay, (unsigned long long)wasted, sum.steady_at);
  return 0;
}
