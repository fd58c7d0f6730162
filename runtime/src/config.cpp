#include "reprise_rt/config.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "reprise/error.h"
#include "reprise_rt/log.h"

namespace reprise::detail {

namespace {

struct FlagDef {
  const char* name;
  const char* value;  // nullptr for a switch
  const char* help;
  std::function<std::string(const Config&)> show;
  std::function<void(Config&, const std::string&)> set;
  bool legion = false;          // a Legion spelling (listed apart in -lg:help)
  bool optional_value = false;  // the value may be left out (taken only if it is a number)
};

std::int64_t parse_int(const std::string& flag, const std::string& v, std::int64_t lo,
                       std::int64_t hi) {
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi)
    throw Error(fmt::format("flag {}: '{}' is not an integer in [{}, {}]", flag, v, lo, hi));
  return x;
}

int parse_level(const std::string& v) {
  static const char* names[] = {"spew", "debug", "info", "print", "warning", "error"};
  for (int i = 0; i < 6; ++i)
    if (v == names[i]) return i;
  return int(parse_int("-level", v, 0, 5));
}

// -level N, or Legion's -level CAT=N,CAT=N,... (a bare N sets every category).
void parse_levels(Config& c, const std::string& spec) {
  std::size_t from = 0;
  while (from <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', from), spec.size());
    const std::string item = spec.substr(from, comma - from);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) {
      c.log_level = parse_level(item);
      c.log_category_levels.clear();
    } else {
      const std::string cat = item.substr(0, eq);
      if (!log_category(cat)) {
        std::string names;
        for (int i = 0; i < kLogCategories; ++i)
          names += fmt::format("{}{}", i ? ", " : "", to_string(LogCategory(i)));
        throw Error(
            fmt::format("flag -level: unknown log category '{}' (categories: {})", cat, names));
      }
      c.log_category_levels.emplace_back(cat, parse_level(item.substr(eq + 1)));
    }
    from = comma + 1;
  }
}

bool is_number(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

const std::vector<FlagDef>& flag_table() {
  auto i32 = [](int Config::*m, std::int64_t lo, std::int64_t hi, const char* n) {
    return std::make_pair(
        [m](const Config& c) { return std::to_string(c.*m); },
        [m, lo, hi, n](Config& c, const std::string& v) { c.*m = int(parse_int(n, v, lo, hi)); });
  };
  // An int flag that also takes "auto" (kept as -1).
  auto auto_i32 = [](int Config::*m, std::int64_t lo, std::int64_t hi, const char* n) {
    return std::make_pair(
        [m](const Config& c) { return c.*m < 0 ? std::string("auto") : std::to_string(c.*m); },
        [m, lo, hi, n](Config& c, const std::string& v) {
          c.*m = v == "auto" ? -1 : int(parse_int(n, v, lo, hi));
        });
  };
  // "auto" (kept as -1) or 0: a behaviour that can be turned off but not forced on (`why`
  // says where it applies, in the refusal of anything else).
  auto auto_or_off = [](int Config::*m, const char* n, const char* why) {
    return std::make_pair([m](const Config& c) { return std::string(c.*m < 0 ? "auto" : "0"); },
                          [m, n, why](Config& c, const std::string& v) {
                            if (v != "auto" && v != "0")
                              throw Error(fmt::format(
                                  "flag {}: '{}': auto or 0 ({}; it cannot be forced)", n, v, why));
                            c.*m = v == "auto" ? -1 : 0;
                          });
  };
  auto sw = [](bool Config::*m) {
    return std::make_pair([m](const Config& c) { return std::string(c.*m ? "on" : "off"); },
                          [m](Config& c, const std::string&) { c.*m = true; });
  };
  static const std::vector<FlagDef> table = [&] {
    std::vector<FlagDef> t;
    auto add = [&](const char* name, const char* value, const char* help, auto p) {
      t.push_back(FlagDef{name, value, help, p.first, p.second});
    };
    // A Legion spelling: listed apart in -lg:help.
    auto legion = [&](const char* name, const char* value, const char* help, auto p) {
      add(name, value, help, p);
      t.back().legion = true;
    };
    add("-ll:cpu", "N", "CPU worker threads (pinned with hwloc)",
        i32(&Config::cpus, 1, 1024, "-ll:cpu"));
    add("-ll:util", "N", "utility threads: the first runs the analysis, others run fills/copies",
        i32(&Config::utils, 1, 64, "-ll:util"));
    add("-ll:numa", "N",
        "system memories (NUMA-like domains; virtual where the machine has fewer), the CPU "
        "workers divided among them in blocks",
        i32(&Config::numa, 1, 16, "-ll:numa"));
    add("-ll:gpu", "N",
        "GPU processors per shard, each with a framebuffer memory (several may share one "
        "device; without a CUDA device they run on the host device backend)",
        i32(&Config::gpus, 0, 64, "-ll:gpu"));
    add("-ll:fsize", "MiB", "capacity of each GPU's framebuffer memory",
        std::make_pair([](const Config& c) { return std::to_string(c.fsize_mib); },
                       [](Config& c, const std::string& v) {
                         c.fsize_mib = parse_int("-ll:fsize", v, 1, std::int64_t(1) << 30);
                       }));
    add("-ll:zsize", "MiB",
        "zero-copy memory per shard: host memory the GPUs read and write directly (with "
        "-ll:gpu; 0: none, the default)",
        std::make_pair([](const Config& c) { return std::to_string(c.zsize_mib); },
                       [](Config& c, const std::string& v) {
                         c.zsize_mib = parse_int("-ll:zsize", v, 0, std::int64_t(1) << 30);
                       }));
    add("-ll:gpu_backend", "cuda|host|auto",
        "what runs GPU processors: CUDA, the host device backend (no GPU needed), or auto "
        "(CUDA when a device is visible, else host with a notice)",
        std::make_pair([](const Config& c) { return c.gpu_backend; },
                       [](Config& c, const std::string& v) {
                         if (v != "cuda" && v != "host" && v != "auto")
                           throw Error(fmt::format(
                               "-ll:gpu_backend must be cuda, host or auto, not '{}'", v));
                         c.gpu_backend = v;
                       }));
    add("-ll:nccl", "auto|0|1",
        "under mpirun, copies from framebuffer to framebuffer between ranks go over NCCL "
        "(the host device backend emulates it) instead of through host memory; auto: on CUDA "
        "when NCCL loads and every rank opens it, one device per rank (default 0: off)",
        auto_i32(&Config::nccl, 0, 1, "-ll:nccl"));
    add("-ll:csize", "MiB", "capacity of each system memory for instances",
        std::make_pair([](const Config& c) { return std::to_string(c.csize_mib); },
                       [](Config& c, const std::string& v) {
                         c.csize_mib = parse_int("-ll:csize", v, 1, std::int64_t(1) << 30);
                       }));
    add("-ll:pin", "0|1", "pin CPU workers to cores",
        std::make_pair(
            [](const Config& c) { return std::string(c.pin ? "1" : "0"); },
            [](Config& c, const std::string& v) { c.pin = parse_int("-ll:pin", v, 0, 1) != 0; }));
    add("-ll:spin", "us", "how long an idle thread spins before it sleeps",
        i32(&Config::spin_us, 0, 100000, "-ll:spin"));
    add("-ll:net_spin", "us",
        "how long the MPI progress thread polls after its last message before it sleeps",
        i32(&Config::net_spin_us, 0, 1000000, "-ll:net_spin"));
    add("-ll:steal_ns", "ns",
        "a spinning CPU worker runs points queued for another CPU of its NUMA domain once they "
        "have waited this long untaken (0: never; the mapper may forbid it)",
        i32(&Config::steal_ns, 0, 100000000, "-ll:steal_ns"));
    add("-ll:keep_ns", "ns",
        "a CPU worker with nothing else to run runs a point it made ready for another CPU of its "
        "NUMA domain itself (a chain stays on one core), unless its points take this long on "
        "average (0: never; only where stealing is on); below it, the thread that finishes an "
        "op's last point completes the op only after running the successor that point made "
        "ready for it",
        i32(&Config::keep_ns, 0, 100000000, "-ll:keep_ns"));
    add("-ll:keep_all_ns", "ns",
        "a CPU worker whose points take less than this on average keeps every point it makes "
        "ready for another CPU of its NUMA domain in its own queue (that CPU takes them only "
        "after 8 x -ll:steal_ns; 0: never)",
        i32(&Config::keep_all_ns, 0, 100000000, "-ll:keep_all_ns"));
    add("-ll:spin_yield", "auto|0|1",
        "whether a spinning idle thread yields its core at every round (auto: when the "
        "runtime's busy threads outnumber the cores)",
        auto_i32(&Config::spin_yield, 0, 1, "-ll:spin_yield"));
    add("-lg:alone", "auto|0",
        "where the runtime has no thread but the application's (one CPU served by it, the "
        "analysis inline, no helper thread), or beside CPU workers while launches run eagerly "
        "(-lg:eager) and every worker waits with nothing to run, the counters threads would "
        "share change without locked instructions (auto); 0: always with them",
        auto_or_off(&Config::alone, "-lg:alone",
                    "the runtime runs alone only where no other thread exists or every "
                    "worker waits with nothing to run"));
    add("-lg:eager", "auto|0",
        "where the runtime runs alone (-lg:alone), a launch issued when every earlier op has "
        "completed runs at once on the application thread, without dependence analysis or "
        "events, and a trace's replay without a batch; beside CPU workers too, where the "
        "application thread serves a CPU, while sampled points are shorter than "
        "-ll:keep_all_ns, and not a task whose last timed point ran 32 times that (auto); 0: "
        "every launch waits to be run",
        auto_or_off(&Config::eager, "-lg:eager",
                    "launches run eagerly only where the application thread analyses and "
                    "serves a CPU, alone or beside CPU workers while points are short"));
    add("-lg:eager_wait_us", "us",
        "beside CPU workers, a launch whose points are short enough to run eagerly lets the "
        "workers finish what they hold first, for as long as an op completes at least this "
        "often; then it hands off, and so do the next 64 such launches (0: hands off at once)",
        i32(&Config::eager_wait_us, 0, 10000000, "-lg:eager_wait_us"));
    add("-lg:bounds_checks", nullptr, "check every accessor use against its bounds",
        sw(&Config::bounds_checks));
    add("-lg:inorder", nullptr, "run each op to completion before the next is issued",
        sw(&Config::inorder));
    auto inline_text = [](const Config& c) {
      return std::string(c.inline_analysis < 0 ? "auto" : c.inline_analysis ? "on" : "off");
    };
    add("-lg:inline_analysis", nullptr,
        "the application thread analyses each op as it issues it, with no utility thread (a "
        "single process only; by default where the threads would outnumber the cores)",
        std::make_pair(inline_text, [](Config& c, const std::string&) { c.inline_analysis = 1; }));
    add("-lg:no_inline_analysis", nullptr,
        "a utility thread analyses the ops even where the threads outnumber the cores",
        std::make_pair(inline_text, [](Config& c, const std::string&) { c.inline_analysis = 0; }));
    add("-ll:app_cpu", "auto|0|1",
        "the application thread runs the last CPU processor's points while it waits, in place "
        "of a worker thread (auto: with the analysis on the application thread, where it and "
        "the CPU workers would outnumber the cores)",
        auto_i32(&Config::app_cpu, 0, 1, "-ll:app_cpu"));
    add("-lg:gpu_graphs", "0|1|2",
        "launch the GPU points of a replayed trace as one captured graph per GPU processor "
        "(0: kernel by kernel; 1: in a single process; 2: under control replication too)",
        i32(&Config::gpu_graphs, 0, 2, "-lg:gpu_graphs"));
    add("-lg:gpu_early", "0|1",
        "start a GPU task point once the GPU work it waits for is enqueued on its own stream, "
        "not finished (0: once finished)",
        i32(&Config::gpu_early, 0, 1, "-lg:gpu_early"));
    add("-lg:defer_writes", "0|1|auto",
        "control replication, untraced: another shard's point that meets none of this shard's "
        "data is not analysed here, its writes applied only when this shard looks at the pieces "
        "they meet (0: every point is analysed on every shard; auto: from 4 shards on, but not for "
        "a task most of whose points met this shard's data at its last launch)",
        auto_i32(&Config::defer_writes, 0, 1, "-lg:defer_writes"));
    add("-lg:defer_replays", "0|1|auto",
        "control replication: a replay's writes by other shards' points are deferred like "
        "-lg:defer_writes' (applied where this shard looks), not applied one by one after it "
        "(auto: from 8 shards on)",
        auto_i32(&Config::defer_replays, 0, 1, "-lg:defer_replays"));
    add("-lg:defer_reductions", "0|1|auto",
        "control replication, untraced, with -lg:defer_writes: a launch whose points reduce "
        "is deferred too (another shard's contribution that meets none of this shard's data is "
        "applied only where this shard looks; auto: from 4 shards on, as -lg:defer_writes)",
        auto_i32(&Config::defer_reductions, 0, 1, "-lg:defer_reductions"));
    add("-lg:shard_checks", "0|1|auto",
        "control replication: whether a template may replay is read on each shard only for "
        "its own memories, and the shards vote up and down a tree (0: every shard reads every "
        "condition; auto: from 4 shards on)",
        auto_i32(&Config::shard_checks, 0, 1, "-lg:shard_checks"));
    add("-lg:shard_recording", "0|1|auto",
        "control replication, with -lg:shard_checks: a recording takes another shard's point "
        "whose reads meet none of this shard's data for its writes only, not analysed whole "
        "(auto: wherever -lg:shard_checks is on)",
        auto_i32(&Config::shard_recording, 0, 1, "-lg:shard_recording"));
    add("-lg:window", "N|auto",
        "ops in flight before the application thread waits (auto: 1024; 64 where it is the only "
        "CPU, -ll:cpu 1 with -ll:app_cpu, growing there with automatic tracing to four times the "
        "longest trace it holds)",
        auto_i32(&Config::window, 2, 1 << 24, "-lg:window"));
    add("-lg:trace_links", "N",
        "elision links a trace template may carry per instruction (beyond 4,096) before its "
        "replays wait for the fence instead",
        i32(&Config::trace_links, 0, 1 << 20, "-lg:trace_links"));
    add("-lg:dependence_memo", "0|1|2",
        "an untraced launch whose earlier users look as they did at the last launch of the same "
        "kept requirements takes that launch's dependences and user changes instead of "
        "analysing them again (0: off; 2: every reuse checked against the full analysis)",
        i32(&Config::dependence_memo, 0, 2, "-lg:dependence_memo"));
    add("-lg:stall_report", "S",
        "control replication: when a shard has issued no op for S seconds, log what it still "
        "waits for from other shards (0: off)",
        i32(&Config::stall_report_s, 0, 1 << 20, "-lg:stall_report"));
    add("-lg:trace:dot", "dir", "write each recorded trace template as a DOT graph into dir",
        std::make_pair(
            [](const Config& c) {
              return c.trace_dot_dir.empty() ? std::string("(off)") : c.trace_dot_dir;
            },
            [](Config& c, const std::string& v) { c.trace_dot_dir = v; }));
    add("-lg:trace:max_templates", "N", "templates kept per trace id (least recently used go)",
        i32(&Config::max_templates, 1, 1024, "-lg:trace:max_templates"));
    add("-lg:safe_ctrlrepl", "[N]",
        "control replication: compare the shards' op streams every 1024 ops (always at exit); "
        "Legion's level N may follow (0: off)",
        std::make_pair([](const Config& c) { return std::string(c.safe_ctrlrepl ? "on" : "off"); },
                       [](Config& c, const std::string& v) {
                         c.safe_ctrlrepl =
                             v.empty() || parse_int("-lg:safe_ctrlrepl", v, 0, 1 << 20) > 0;
                       }));
    t.back().optional_value = true;
    add("-lg:coverage_log", nullptr,
        "log which ops ran replayed, for per-iteration coverage timelines (apps print them)",
        sw(&Config::coverage_log));
    add("-lg:no_auto_tracing", nullptr, "turn automatic trace identification off",
        std::make_pair(
            [](const Config& c) { return std::string(c.auto_tracing ? "tracing on" : "off"); },
            [](Config& c, const std::string&) { c.auto_tracing = false; }));
    legion("-lg:enable_automatic_tracing", nullptr,
           "accepted for the Apophenia artifact (on anyway)",
           std::make_pair([](const Config&) { return std::string("-"); },
                          [](Config& c, const std::string&) { c.auto_tracing = true; }));
    add("-lg:auto_trace:min_trace_length", "N", "shortest automatic trace",
        i32(&Config::at_min_length, 1, 1 << 20, "-lg:auto_trace:min_trace_length"));
    add("-lg:auto_trace:max_trace_length", "N", "longest automatic trace (longer repeats are cut)",
        i32(&Config::at_max_length, 1, 1 << 20, "-lg:auto_trace:max_trace_length"));
    add("-lg:auto_trace:batchsize", "N", "history buffer of op tokens mined for repeats",
        i32(&Config::at_batchsize, 1, 1 << 24, "-lg:auto_trace:batchsize"));
    add("-lg:auto_trace:multi_scale_factor", "N", "ruler-function unit of the analysis schedule",
        i32(&Config::at_multi_scale_factor, 1, 1 << 24, "-lg:auto_trace:multi_scale_factor"));
    add("-lg:auto_trace:identifier_algorithm", "multi-scale|batched", "analysis schedule",
        std::make_pair([](const Config& c) { return c.at_algorithm; },
                       [](Config& c, const std::string& v) {
                         if (v != "multi-scale" && v != "batched")
                           throw Error(
                               fmt::format("flag -lg:auto_trace:identifier_algorithm: '{}' "
                                           "is not multi-scale or batched",
                                           v));
                         c.at_algorithm = v;
                       }));
    add("-lg:auto_trace:visit_threshold", "N", "sightings of a candidate before it is traced",
        i32(&Config::at_visit_threshold, 1, 1 << 20, "-lg:auto_trace:visit_threshold"));
    add("-lg:auto_trace:analysis_delay_us", "N",
        "testing: every background analysis takes N us longer (late analyses)",
        i32(&Config::at_analysis_delay_us, 0, 10000000, "-lg:auto_trace:analysis_delay_us"));
    add("-lg:auto_trace:mine_inline", "auto|0|1",
        "mine for repeats on the utility thread instead of in the background (auto: when the "
        "runtime's busy threads outnumber the cores, and no analysis_delay_us)",
        auto_i32(&Config::at_mine_inline, 0, 1, "-lg:auto_trace:mine_inline"));
    add("-lg:auto_trace:follow", "auto|0",
        "once a loop's traces run back to back, hand the ops that go on its run to the memoizer "
        "as they come instead of holding them until the tracer decides, which it does alike "
        "(auto); 0: always held",
        auto_or_off(&Config::at_follow, "-lg:auto_trace:follow",
                    "a run is followed only once its loop has settled"));
    add("-lg:auto_trace:log", "file",
        "write what automatic tracing found and did, per op (<file>.<shard> under mpirun)",
        std::make_pair(
            [](const Config& c) { return c.at_log.empty() ? std::string("(off)") : c.at_log; },
            [](Config& c, const std::string& v) { c.at_log = v; }));
    add("-lg:help", nullptr, "print this list and exit", sw(&Config::help));
    add("-level", "N|CAT=N,...",
        "log level: 0 spew .. 5 error (or spew/debug/info/print/warning/error), for every "
        "category or per category (runtime, analysis, tracing, auto_trace, ctrlrepl, gpu)",
        std::make_pair([](const Config& c) { return std::to_string(c.log_level); },
                       [](Config& c, const std::string& v) { parse_levels(c, v); }));
    add("-ll:othr", "T",
        "threads per CPU processor for fork-join work inside its tasks (reprise/fork_join.h): "
        "its worker and T-1 helper threads that steal; 1: fork-join runs sequentially",
        i32(&Config::othr, 1, 1024, "-ll:othr"));
    add("-lg:steal_policy", "work-first|help-first", "how forks inside tasks offer work to thieves",
        std::make_pair([](const Config& c) { return std::string(to_string(c.steal_policy)); },
                       [](Config& c, const std::string& v) {
                         if (v == "work-first")
                           c.steal_policy = StealPolicy::WorkFirst;
                         else if (v == "help-first")
                           c.steal_policy = StealPolicy::HelpFirst;
                         else
                           throw Error(fmt::format(
                               "flag -lg:steal_policy: '{}' is neither work-first nor help-first",
                               v));
                       }));
    add("-lg:steal_trace", "FILE",
        "write the steal tree of every fork-join region inside tasks to FILE (`%`: the shard "
        "number); reprise-steals prints it",
        std::make_pair(
            [](const Config& c) {
              return c.steal_trace_file.empty() ? std::string("(off)") : c.steal_trace_file;
            },
            [](Config& c, const std::string& v) { c.steal_trace_file = v; }));
    add("-lg:retentive", "0|1",
        "retentive stealing: a task point replayed in a trace starts its fork-join regions "
        "from the schedule they had the last time",
        std::make_pair([](const Config& c) { return std::string(c.retentive ? "1" : "0"); },
                       [](Config& c, const std::string& v) {
                         c.retentive = parse_int("-lg:retentive", v, 0, 1) != 0;
                       }));
    add("-lg:prof", "FILE",
        "profile: write each shard's timeline to FILE as Chrome trace-event JSON (`%`: the "
        "shard number; ui.perfetto.dev opens it); Legion's -lg:prof N profiles every shard "
        "into reprise_prof_%.json (or -lg:prof_logfile's)",
        std::make_pair(
            [](const Config& c) {
              return c.prof_file.empty() ? std::string("(off)") : c.prof_file;
            },
            [](Config& c, const std::string& v) {
              if (!is_number(v))
                c.prof_file = v;
              else if (c.prof_file.empty())
                c.prof_file = "reprise_prof_%.json";
            }));
    add("-lg:prof:deps", nullptr,
        "with -lg:prof: record the dependences between points and copies (flow arrows; "
        "reprise-prof follows them for the critical path)",
        sw(&Config::prof_deps));
    add("-lg:evtrace", "FILE",
        "record a compressed event trace of every shard (loops of op records, merged across "
        "shards; docs/evtrace.md) into FILE; reprise-evtrace shows it, reprise-whatif replays "
        "it on a simulated platform",
        std::make_pair(
            [](const Config& c) {
              return c.evtrace_file.empty() ? std::string("(off)") : c.evtrace_file;
            },
            [](Config& c, const std::string& v) { c.evtrace_file = v; }));
    add("-lg:simulate_shards", "R",
        "one process plays R shards: the mapper, the analysis and -lg:evtrace see R shards "
        "(their processors, memories and the copies between them) while every point runs "
        "here; an event trace of it has the per-shard structure of an R-rank run",
        i32(&Config::simulate_shards, 0, 1 << 16, "-lg:simulate_shards"));
    add("-lg:evtrace:shards", nullptr,
        "with -lg:evtrace: also write each shard's own trace, before merging, to FILE.<shard>",
        sw(&Config::evtrace_shards));
    legion("-lg:spy", "DIR",
           "write each shard's graph of points, copies and their dependences (spy_<shard>.dot) "
           "and every recorded template (DOT and text) into DIR, like Legion Spy; for small "
           "programs",
           std::make_pair(
               [](const Config& c) { return c.spy_dir.empty() ? std::string("(off)") : c.spy_dir; },
               [](Config& c, const std::string& v) { c.spy_dir = v; }));
    legion("-lg:prof_logfile", "FILE", "Legion's spelling of the -lg:prof file",
           std::make_pair([](const Config& c) { return c.prof_file; },
                          [](Config& c, const std::string& v) { c.prof_file = v; }));
    add("-logfile", "FILE", "write log lines to FILE instead of stderr (`%`: the shard number)",
        std::make_pair(
            [](const Config& c) { return c.log_file.empty() ? std::string("stderr") : c.log_file; },
            [](Config& c, const std::string& v) { c.log_file = v; }));
    // Legion's spellings (a Legion command line runs unchanged).
    auto notice = [](const char* text) {
      return std::make_pair([](const Config&) { return std::string("-"); },
                            [text](Config& c, const std::string&) { c.notices.push_back(text); });
    };
    legion("-lg:no_tracing", nullptr,
           "turn manual traces off: begin_trace/end_trace do nothing (A/B runs)",
           std::make_pair([](const Config& c) { return std::string(c.no_tracing ? "on" : "off"); },
                          [](Config& c, const std::string&) { c.no_tracing = true; }));
    legion("-lg:partcheck", nullptr, "accepted; partitions are always checked here",
           notice("-lg:partcheck is accepted for compatibility: partitions are always checked "
                  "(disjointness and completeness are computed when a partition is created)"));
    legion("-lg:inline_transitive_reduction", nullptr,
           "accepted; templates are always reduced when recorded",
           notice("-lg:inline_transitive_reduction is accepted for compatibility: trace "
                  "templates are always transitively reduced when they are recorded"));
    legion("-ll:ocpu", "N",
           "accepted; no separate OpenMP processors: -ll:othr T gives every CPU processor T "
           "threads for fork-join inside its tasks",
           std::make_pair([](const Config&) { return std::string("-"); },
                          [](Config& c, const std::string& v) {
                            parse_int("-ll:ocpu", v, 0, 1024);
                            c.notices.push_back(
                                "-ll:ocpu is accepted for compatibility: there are no separate "
                                "OpenMP processors; -ll:othr T gives every CPU processor T "
                                "threads for fork-join inside its tasks (docs/forkjoin.md)");
                          }));
    legion("-ll:nsize", "MiB", "capacity of each NUMA (system) memory, as -ll:csize",
           std::make_pair([](const Config& c) { return std::to_string(c.csize_mib); },
                          [](Config& c, const std::string& v) {
                            c.csize_mib = parse_int("-ll:nsize", v, 1, std::int64_t(1) << 30);
                          }));
    legion("-ll:ncpu", "N", "CPU workers per NUMA memory: -ll:cpu becomes N times -ll:numa",
           i32(&Config::ncpu, 1, 1024, "-ll:ncpu"));
    legion("-lg:auto_trace:repeats_algorithm", "quick_matching_of_substrings|suffix_tree_walk",
           "repeat finder; both run the paper's suffix-array algorithm (quick matching) here",
           std::make_pair([](const Config&) { return std::string("quick_matching_of_substrings"); },
                          [](Config& c, const std::string& v) {
                            if (v == "suffix_tree_walk")
                              c.notices.push_back(
                                  "-lg:auto_trace:repeats_algorithm suffix_tree_walk: Reprise "
                                  "finds repeats by quick matching of substrings (the paper's "
                                  "suffix-array algorithm)");
                            else if (v != "quick_matching_of_substrings")
                              throw Error(
                                  fmt::format("flag -lg:auto_trace:repeats_algorithm: '{}' is not "
                                              "quick_matching_of_substrings or suffix_tree_walk",
                                              v));
                          }));
    return t;
  }();
  return table;
}

std::vector<std::string> split_env(const char* s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

}  // namespace

bool is_runtime_flag(const std::string& a) {
  return a.rfind("-ll:", 0) == 0 || a.rfind("-lg:", 0) == 0 || a == "-level" || a == "-logfile";
}

namespace {
// The definition of runtime flag a (null: none). (The Apophenia artifact spells the
// automatic-tracing flags -lg:autotrace:...)
const FlagDef* find_flag(const std::string& a) {
  const std::string name = a.rfind("-lg:autotrace:", 0) == 0 ? "-lg:auto_trace:" + a.substr(14) : a;
  for (const auto& f : flag_table())
    if (name == f.name) return &f;
  return nullptr;
}

// Whether `next` (null: there is none) is the value of the flag `def` defines.
bool takes(const FlagDef& def, const std::string* next) {
  if (!next) return false;
  return def.optional_value ? is_number(*next) : def.value != nullptr;
}
}  // namespace

bool runtime_flag_takes(const std::string& flag, const std::string& next) {
  const FlagDef* def = find_flag(flag);
  return !def || takes(*def, &next);
}

ParsedArgs parse_args(const std::vector<std::string>& args_in, bool use_env) {
  // REPRISE_ARGS first, so that the command line wins where both set a flag; what the
  // environment holds that is not a runtime flag goes to the application after its own.
  std::vector<std::string> args;
  if (use_env)
    if (const char* env = std::getenv("REPRISE_ARGS")) args = split_env(env);
  const std::size_t from_env = args.size();
  args.insert(args.end(), args_in.begin(), args_in.end());
  ParsedArgs out;
  std::vector<std::string> env_app_args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!is_runtime_flag(a)) {
      (i < from_env ? env_app_args : out.app_args).push_back(a);
      continue;
    }
    const FlagDef* def = find_flag(a);
    if (!def) throw Error(fmt::format("unknown flag '{}' (see -lg:help)", a));
    std::string value;
    if (takes(*def, i + 1 < args.size() ? &args[i + 1] : nullptr))
      value = args[++i];
    else if (def->value && !def->optional_value)
      throw Error(fmt::format("flag {} needs a value ({})", a, def->value));
    def->set(out.config, value);
  }
  out.app_args.insert(out.app_args.end(), env_app_args.begin(), env_app_args.end());
  if (out.config.ncpu > 0) out.config.cpus = out.config.ncpu * out.config.numa;
  // (Shards record different facts only where they vote on every decision taken from them.)
  if (out.config.shard_recording > 0 && out.config.shard_checks == 0)
    throw Error(
        "flag -lg:shard_recording 1 needs -lg:shard_checks 1 or auto (the shards vote "
        "on every check of a template recorded per shard)");
  return out;
}

std::string flags_help() {
  Config defaults;
  std::string s = "Reprise runtime flags (also read from REPRISE_ARGS):\n";
  auto name_of = [](const FlagDef& f) {
    return f.value ? fmt::format("{} {}", f.name, f.value) : std::string(f.name);
  };
  for (const auto& f : flag_table())
    if (!f.legion)
      s += fmt::format("  {}\n      {} [default: {}]\n", name_of(f), f.help, f.show(defaults));
  s += "Legion's spellings, accepted (what each does here):\n";
  for (const auto& f : flag_table())
    if (f.legion) s += fmt::format("  {}\n      {}\n", name_of(f), f.help);
  s += "  -lg:autotrace:...\n      the -lg:auto_trace:... flags above\n";
  return s;
}

}  // namespace reprise::detail
