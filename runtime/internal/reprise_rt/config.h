#pragma once
// Runtime configuration: the -ll:/-lg:/-level flags, from the command line and REPRISE_ARGS.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "reprise/fork_join.h"

namespace reprise::detail {

struct Config {
  int cpus = 1;                      // -ll:cpu
  int utils = 1;                     // -ll:util
  int numa = 1;                      // -ll:numa
  int gpus = 0;                      // -ll:gpu (per shard)
  std::int64_t fsize_mib = 256;      // -ll:fsize (framebuffer per GPU)
  std::int64_t zsize_mib = 0;        // -ll:zsize (zero-copy memory per shard; 0: none)
  std::string gpu_backend = "auto";  // -ll:gpu_backend cuda|host|auto
  // -ll:nccl 0|1|auto: control replication copies framebuffer to framebuffer between ranks over
  // the device links (NCCL on CUDA; emulated on the host backend) instead of through host
  // memory. -1 (auto): on CUDA when NCCL loads and opens, else off. Off by default until a
  // hardware run confirms the fix of the one wrong result seen (docs/gpu.md).
  int nccl = 0;
  // -lg:gpu_graphs 0|1|2 (replays' GPU work as graphs; 2: under control replication too)
  int gpu_graphs = 1;
  int gpu_early = 1;  // -lg:gpu_early 0|1 (a GPU point follows same-stream work once enqueued)
  // -lg:defer_writes 0|1|auto: control replication, untraced: another shard's point that meets
  // none of this shard's data is not analysed here (its writes are deferred; docs/ctrlrepl.md).
  // -1 (auto): from kDeferWritesShards shards on, where it costs less than it saves, and then
  // not for a task most of whose points meet this shard's data (Analysis::analysed_whole).
  int defer_writes = -1;
  static constexpr int kDeferWritesShards = 4;
  // -lg:defer_replays 0|1|auto: control replication: after a replay the writes of other
  // shards' points are deferred like an untraced launch's (docs/ctrlrepl.md). -1 (auto): from
  // kDeferReplaysShards shards on (at 4 the settling costs more than it saves: cfd and the
  // stencil's automatic traces, docs/results.md).
  int defer_replays = -1;
  static constexpr int kDeferReplaysShards = 8;
  // -lg:defer_reductions 0|1|auto: control replication, untraced, with -lg:defer_writes: a
  // launch whose points reduce is deferred the same way (its contributions applied where this
  // shard looks; docs/ctrlrepl.md). -1 (auto): from kDeferReductionsShards shards on, and then
  // not for a task most of whose points meet this shard's data (Analysis::analysed_whole).
  int defer_reductions = -1;
  static constexpr int kDeferReductionsShards = 4;
  // -lg:shard_checks 0|1|auto: control replication: a trace check reads on each shard only
  // the conditions about its own memories, and the shards vote (docs/ctrlrepl.md). -1 (auto):
  // from kShardChecksShards shards on.
  int shard_checks = -1;
  static constexpr int kShardChecksShards = 4;
  // -lg:shard_recording 0|1|auto: control replication, with -lg:shard_checks: while a trace is
  // recorded, another shard's point of an index launch whose reads meet none of this shard's
  // data is recorded with its writes only (docs/ctrlrepl.md). -1 (auto): wherever
  // -lg:shard_checks is on.
  int shard_recording = -1;
  // Whether a control-replication flag 0|1|auto (-1) is on for a run of `shards` shards
  // (auto: from `from` shards on; never in a single process).
  static bool on_for_shards(int flag, std::uint32_t shards, int from) {
    return shards > 1 && (flag > 0 || (flag < 0 && shards >= std::uint32_t(from)));
  }
  std::int64_t csize_mib = 1024;  // -ll:csize (per system memory)
  bool pin = true;                // -ll:pin
  int spin_us = 50;               // -ll:spin
  int net_spin_us = 1000;         // -ll:net_spin (the MPI progress thread's: mpi_network.cpp)
  int spin_yield = -1;            // -ll:spin_yield 0|1 (-1: auto, when oversubscribed)
  int alone = -1;                 // -lg:alone 0 (-1: auto, reprise_rt/alone.h)
  int eager = -1;                 // -lg:eager 0 (-1: auto, Analysis::run_eagerly)
  int eager_wait_us = 200;        // -lg:eager_wait_us (Runtime::drain_for_eager)
  int steal_ns = 500;             // -ll:steal_ns (0: CPU workers never take each other's points)
  int keep_ns = 5000;             // -ll:keep_ns (0: successors always go to their mapped CPU)
  int keep_all_ns = 300;          // -ll:keep_all_ns (0: at most one spare at a time)
  bool bounds_checks = false;     // -lg:bounds_checks
  bool inorder = false;           // -lg:inorder
  // -lg:inline_analysis (1) / -lg:no_inline_analysis (0): the application thread runs the
  // analysis pipeline as it issues (no utility thread; a single process only). -1: auto, on
  // in a single process whose busy threads would outnumber its cores with a utility thread
  // (the Runtime resolves it to 0 or 1 before any use).
  int inline_analysis = -1;
  // -ll:app_cpu 0|1|auto: the application thread serves the last CPU processor's queue while
  // it waits (no worker thread of its own), so that its threads do not outnumber the cores.
  // -1 (auto): on with the inline analysis where the application thread and the CPU workers
  // would outnumber the cores (resolved by the Runtime before any use).
  int app_cpu = -1;
  int window = -1;  // -lg:window (-1: auto, resolved when the runtime starts)
  // Elision links a template may carry per instruction (beyond 4,096) before its replays
  // wait for the entry fence instead (-lg:trace_links).
  int trace_links = 16;
  // -lg:dependence_memo: an untraced launch whose users look as they did at the last launch
  // of its kept requirements reuses that launch's answer (0: off; 2: every reuse checked
  // against the full analysis, an Error where they differ).
  int dependence_memo = 1;
  bool help = false;  // -lg:help
  int log_level = 4;  // -level N (every category)
  // -level CAT=N,...: per category (names: reprise_rt/log.h), after log_level.
  std::vector<std::pair<std::string, int>> log_category_levels;
  std::string log_file;         // -logfile (`%`: the shard number); empty: stderr
  std::string prof_file;        // -lg:prof FILE (`%`: the shard number); empty: off
  bool prof_deps = false;       // -lg:prof:deps: dependences as flow arrows
  std::string evtrace_file;     // -lg:evtrace FILE: compressed event trace (shard 0 writes)
  bool evtrace_shards = false;  // -lg:evtrace:shards: also each shard's own, FILE.<shard>
  // -lg:simulate_shards R: one process plays R shards (their processors, memories, copies
  // between them) so that -lg:evtrace records the per-shard structure of an R-rank run.
  int simulate_shards = 0;
  std::string spy_dir;         // -lg:spy DIR: dependence graphs (DOT) and templates
  bool no_tracing = false;     // -lg:no_tracing: begin_trace/end_trace do nothing
  int ncpu = 0;                // -ll:ncpu: CPU workers per NUMA memory (0: unset)
  std::string trace_dot_dir;   // -lg:trace:dot
  int max_templates = 8;       // -lg:trace:max_templates
  bool coverage_log = false;   // -lg:coverage_log
  bool safe_ctrlrepl = false;  // -lg:safe_ctrlrepl
  int stall_report_s = 0;      // -lg:stall_report S: what a stalled shard waits for (0: off)
  // Fork-join inside tasks (reprise/fork_join.h, docs/forkjoin.md).
  int othr = 1;  // -ll:othr: threads per CPU processor (its worker + helpers)
  StealPolicy steal_policy = StealPolicy::WorkFirst;  // -lg:steal_policy
  std::string steal_trace_file;  // -lg:steal_trace FILE (`%`: the shard number)
  bool retentive = true;         // -lg:retentive 0|1: replayed points start from their last tree
  // Automatic tracing (Apophenia); the defaults are documented in docs/tracing.md.
  bool auto_tracing = true;                  // -lg:no_auto_tracing turns it off
  int at_min_length = 5;                     // -lg:auto_trace:min_trace_length
  int at_max_length = 64;                    // -lg:auto_trace:max_trace_length
  int at_batchsize = 1000;                   // -lg:auto_trace:batchsize
  int at_multi_scale_factor = 50;            // -lg:auto_trace:multi_scale_factor
  std::string at_algorithm = "multi-scale";  // -lg:auto_trace:identifier_algorithm
  int at_visit_threshold = 1;                // -lg:auto_trace:visit_threshold
  int at_analysis_delay_us = 0;              // -lg:auto_trace:analysis_delay_us
  int at_mine_inline = -1;                   // -lg:auto_trace:mine_inline 0|1 (-1: auto)
  int at_follow = -1;                        // -lg:auto_trace:follow 0 (-1: auto)
  std::string at_log;                        // -lg:auto_trace:log
  // One line per flag accepted only for compatibility (what it does here), printed at start.
  std::vector<std::string> notices;

  // Whether the automatic tracing stage is in the pipeline (-lg:inorder is the sequential
  // oracle: nothing may be held back there).
  bool automatic_stage() const { return auto_tracing && !inorder; }
};

struct ParsedArgs {
  Config config;
  std::vector<std::string> app_args;  // everything that is not a runtime flag
};

// Whether a word names a runtime flag (-ll:..., -lg:..., -level, -logfile).
bool is_runtime_flag(const std::string& a);
// Whether `next` is the value of runtime flag `flag`, as parse_args reads them (a switch takes
// none, a flag whose value may be left out only a number). True for an unknown flag: passed on
// with it, parse_args names the flag. (For programs that pass runtime flags on.)
bool runtime_flag_takes(const std::string& flag, const std::string& next);
// Parses runtime flags out of args (REPRISE_ARGS is appended when use_env). An unknown
// -ll:/-lg: flag or a bad value throws reprise::Error naming it.
ParsedArgs parse_args(const std::vector<std::string>& args, bool use_env);
std::string flags_help();

}  // namespace reprise::detail
