// reprise-whatif FILE --platform SPEC [--ranks R] [--strong] [--means] [--seed N]
//
// Replays a compressed event trace (-lg:evtrace) as a discrete-event simulation on SimGrid
// (S4U): one host per node (per_node shards each, sharing its cores for their points), one
// two-core host per shard for its application and utility threads (or, shared_util=1, the
// node's cores), a cluster network with the platform's latency and bandwidth. Each shard's
// application actor spends each op's recorded issue time (ScalaTrace's computation between
// events) and blocks where the program blocked; its utility actor spends each op's analysis
// or replay time.
// Each shard's utility actor spends each op's recorded utility time; its driver actor takes
// the ops in stream order: it sends the op's data to other shards, waits for what the op
// receives, then runs the op's points on the host's cores (durations drawn from the recorded
// histograms, ScalaTrace II §3.5, or their means with --means). Ops of one shard run one after
// another (a point waits for the previous op's points: the dependences of the SPMD loops we
// record); a point never waits for an op that has not been analysed.
//
// Other rank counts (--ranks R): shards are classed as the first, the last and the interior
// ones of the recorded run (peers are recorded as offsets, so an interior shard of a 1-d halo
// program looks like any other); weak scaling keeps each shard's work, --strong divides it by
// R / recorded shards. Prints
//   RESULT tool=whatif ranks=R iter_s=... util_frac=... total_s=...
// iter_s: the simulated time per iteration of the trace's main loop (its longest top-level
// loop) on shard 0 (with --iter-task NAME: per launch of that task in the main loop, i.e. per
// program iteration however many the loop's body holds); util_frac: the fraction of that time shard
// 0's utility thread was busy.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <simgrid/s4u.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "reprise/error.h"
#include "reprise_rt/evtrace_format.h"

namespace ev = reprise::detail::evtrace;
namespace sg4 = simgrid::s4u;
using reprise::Error;

namespace {

struct Platform {
  std::uint32_t cores = 0;     // per node (0: the recorded -ll:cpu times per_node)
  std::uint32_t per_node = 1;  // shards per node (mpirun's ranks per host)
  std::uint32_t workers = 0;   // worker threads per shard (0: the recorded -ll:cpu)
  bool shared_util = false;    // utility threads share the node's cores (else one core each)
  double speed = 1.0;          // task durations are divided by it
  double util_speed = 1.0;     // utility times are divided by it
  double latency_s = 1e-6;     // between two shards
  double poll_s = 0;           // each shard's progress thread polls this long after a message
  double bandwidth = 10e9;     // bytes per second
  std::string text() const {
    return fmt::format(
        "cores={},workers={},per_node={},shared_util={},speed={},util_speed={},lat={}us,bw={}GBps,"
        "poll={}us",
        cores, workers, per_node, shared_util ? 1 : 0, speed, util_speed, latency_s * 1e6,
        bandwidth / 1e9, poll_s * 1e6);
  }
};

double parse_unit(const std::string& key, const std::string& v,
                  const std::vector<std::pair<std::string, double>>& units) {
  for (const auto& [suffix, scale] : units)
    if (v.size() > suffix.size() && v.ends_with(suffix))
      return std::stod(v.substr(0, v.size() - suffix.size())) * scale;
  try {
    return std::stod(v);
  } catch (const std::exception&) {
    throw Error(fmt::format("--platform: bad value '{}' for {}", v, key));
  }
}

const std::vector<std::pair<std::string, double>> kTimeUnits = {
    {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};

// SPEC: comma-separated key=value: cores=4, speed=1.5, util_speed=1, lat=1us, bw=10GBps.
Platform parse_platform(const std::string& spec) {
  Platform p;
  std::size_t at = 0;
  while (at < spec.size()) {
    std::size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string kv = spec.substr(at, comma - at);
    at = comma + 1;
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      throw Error(fmt::format("--platform: expected key=value, got '{}'", kv));
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "cores")
      p.cores = std::uint32_t(parse_unit(k, v, {}));
    else if (k == "workers")
      p.workers = std::uint32_t(parse_unit(k, v, {}));
    else if (k == "per_node")
      p.per_node = std::max<std::uint32_t>(1, std::uint32_t(parse_unit(k, v, {})));
    else if (k == "shared_util")
      p.shared_util = parse_unit(k, v, {}) != 0;
    else if (k == "speed")
      p.speed = parse_unit(k, v, {});
    else if (k == "util_speed")
      p.util_speed = parse_unit(k, v, {});
    else if (k == "lat")
      p.latency_s = parse_unit(k, v, kTimeUnits);
    else if (k == "poll")
      p.poll_s = parse_unit(k, v, kTimeUnits);
    else if (k == "bw")
      p.bandwidth = parse_unit(k, v, {{"GBps", 1e9}, {"MBps", 1e6}, {"kBps", 1e3}, {"Bps", 1.0}});
    else
      throw Error(
          fmt::format("--platform: unknown key '{}' (cores, workers, per_node, shared_util, speed, "
                      "util_speed, lat, bw, poll)",
                      k));
    if (p.speed <= 0 || p.util_speed <= 0 || p.latency_s < 0 || p.bandwidth <= 0 || p.poll_s < 0)
      throw Error(fmt::format("--platform: '{}' is out of range", kv));
  }
  return p;
}

// Walks a group's nested loops op by op.
class Cursor {
 public:
  explicit Cursor(const std::vector<ev::Node>& seq) { stack_.push_back({&seq, 0, 0}); }
  // The next op, or null at the end; top: the index of the top-level node it belongs to.
  const ev::Node* next(std::size_t& top) {
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      if (f.pos == f.nodes->size()) {
        if (stack_.size() == 1) {
          stack_.pop_back();
          return nullptr;
        }
        Frame& parent = stack_[stack_.size() - 2];
        if (++f.iter < (*parent.nodes)[parent.pos].count) {
          f.pos = 0;
          continue;
        }
        stack_.pop_back();
        ++stack_.back().pos;
        continue;
      }
      const ev::Node& n = (*f.nodes)[f.pos];
      if (n.is_loop()) {
        stack_.push_back({&n.body, 0, 0});
        continue;
      }
      top = stack_[0].pos;
      ++f.pos;
      return &n;
    }
    return nullptr;
  }

 private:
  struct Frame {
    const std::vector<ev::Node>* nodes;
    std::size_t pos;
    std::uint64_t iter;
  };
  std::vector<Frame> stack_;
};

struct Simulation {
  const ev::Trace* trace = nullptr;
  // The group (loop structure) of each recorded shard: shards whose records compressed alike
  // share one; every group unrolls to the same op stream (it is replicated).
  std::vector<const ev::Group*> group_of;
  Platform platform;
  std::uint32_t ranks = 1, recorded = 1;
  double work_scale = 1.0;
  bool means = false;
  std::uint64_t seed = 1;
  std::size_t main_loop = 0;        // top-level node index
  std::uint64_t per_iteration = 1;  // main-loop iterations per program iteration (--iter-task)
  // Per op record: the variant of each recorded shard, and the offsets any shard sends to.
  struct Lookup {
    std::vector<const ev::Variant*> by_shard;
    std::vector<std::int32_t> offsets;
  };
  std::unordered_map<const ev::Node*, Lookup> lookup;
  std::vector<sg4::SemaphorePtr> issued;    // per shard: ops the application has issued
  std::vector<sg4::SemaphorePtr> analysed;  // per shard: ops the utility thread has finished
  // Completions asked of another shard (Request/Done): answered once that shard has finished
  // every op before the asking one.
  struct Ask {
    std::uint32_t from;
    std::uint64_t op;  // its index in the stream
  };
  std::deque<Ask> asks_made;            // (the messages' payloads: stable addresses)
  std::vector<std::uint64_t> ops_done;  // per shard
  std::vector<std::string> blocked;     // per shard: what its driver waits for (empty: ran out)
  std::vector<std::multimap<std::uint64_t, std::uint32_t>> waiting;  // per shard: op -> asker
  std::vector<sg4::MutexPtr> done_mutex;
  std::vector<sg4::ConditionVariablePtr> progress;
  // Each shard's MPI progress thread polls (takes a share of its node's cores) for
  // platform.poll_s after the last message it handled (the runtime's -ll:net_spin).
  struct Poll {
    double until = 0;
    sg4::MutexPtr mutex;
    sg4::ConditionVariablePtr wake;
  };
  std::vector<Poll> polls;
  // Shard 0's main loop: when it started and ended, and its utility's busy time in it.
  double loop_begin = -1, loop_end = -1, util_busy = 0;
  double end_time = 0;

  std::uint32_t recorded_shard(std::uint32_t s) const {
    if (ranks == recorded) return s;
    if (s == 0) return 0;
    if (s + 1 == ranks) return recorded - 1;
    return 1;  // an interior shard (checked: the trace has one)
  }
  const std::vector<ev::Node>& seq(std::uint32_t s) const {
    return group_of[recorded_shard(s)]->seq;
  }
  const ev::Variant* variant(const ev::Node* leaf, std::uint32_t s) const {
    return lookup.at(leaf).by_shard[recorded_shard(s)];
  }
  double draw(const ev::Stat& st, std::mt19937_64& rng) const {
    return means ? st.mean() : st.sample(rng);
  }

  void index(const std::vector<ev::Node>& nodes) {
    for (const ev::Node& n : nodes) {
      if (n.is_loop()) {
        index(n.body);
        continue;
      }
      Lookup& l = lookup[&n];
      l.by_shard.assign(recorded, nullptr);
      for (const ev::Variant& v : n.element.variants) {
        for (std::uint32_t r : v.ranks)
          if (r < recorded) l.by_shard[r] = &v;
        for (const ev::Peer& p : v.sends)
          if (std::find(l.offsets.begin(), l.offsets.end(), p.offset) == l.offsets.end())
            l.offsets.push_back(p.offset);
      }
    }
  }

  // The application thread of shard s: it issues each op after its recorded issue time; after
  // an op the program blocks on (then_waits), it issues nothing more until that op is done.
  void application(std::uint32_t s) {
    std::mt19937_64 rng(seed * 15485863 + s);
    Cursor c(seq(s));
    std::size_t top = 0;
    for (std::uint64_t op = 0;; ++op) {
      const ev::Node* leaf = c.next(top);
      if (!leaf) break;
      if (const double ns = draw(leaf->element.issue_ns, rng) / platform.util_speed; ns > 0)
        sg4::this_actor::execute(ns);  // hosts compute 1e9 flop/s: one flop per ns
      issued[s]->release();
      if (leaf->element.then_waits) {
        std::unique_lock<sg4::Mutex> lock(*done_mutex[s]);
        while (ops_done[s] <= op) progress[s]->wait(lock);
      }
    }
  }

  // The utility thread of shard s: it analyses (or replays) each op once it is issued.
  void utility(std::uint32_t s) {
    std::mt19937_64 rng(seed * 7919 + s);
    Cursor c(seq(s));
    std::size_t top = 0;
    while (const ev::Node* leaf = c.next(top)) {
      issued[s]->acquire();
      const double ns = draw(leaf->element.util, rng) / platform.util_speed;
      if (ns > 0) {
        const double t0 = sg4::Engine::get_clock();
        sg4::this_actor::execute(ns);
        if (s == 0 && top == main_loop) util_busy += sg4::Engine::get_clock() - t0;
      }
      analysed[s]->release();
    }
  }

  // Asks of shard s are answered once it has finished every op before the asking one: at
  // once, or by its driver when it gets there (never waiting here: an ask from a shard that ran
  // ahead must not hold up the others').
  void responder(std::uint32_t s) {
    sg4::Actor::self()->daemonize();  // ends with the simulation
    sg4::Mailbox* in = sg4::Mailbox::by_name(fmt::format("ask>{}", s));
    for (;;) {
      const Ask* a = in->get<Ask>();
      message(s);
      if (ops_done[s] >= a->op)
        answer(s, a->from);
      else
        waiting[s].emplace(a->op, a->from);
    }
  }
  void answer(std::uint32_t from, std::uint32_t to) {
    static int token = 0;
    sg4::Mailbox::by_name(fmt::format("answer>{}", to))->put_init(&token, 16)->detach();
    message(from);
  }

  // Shard s sent or received a message: its progress thread polls for poll_s from now.
  void message(std::uint32_t s) {
    if (platform.poll_s <= 0) return;
    Poll& p = polls[s];
    p.until = sg4::Engine::get_clock() + platform.poll_s;
    p.wake->notify_one();  // (no-op while it polls)
  }
  void poller(std::uint32_t s) {
    sg4::Actor::self()->daemonize();  // ends with the simulation
    Poll& p = polls[s];
    for (;;) {
      {
        std::unique_lock<sg4::Mutex> lock(*p.mutex);
        while (sg4::Engine::get_clock() >= p.until) p.wake->wait(lock);
      }
      // (A message while it polls moves `until` on: the loop polls on.)
      for (double left; (left = p.until - sg4::Engine::get_clock()) > 0;) {
        sg4::ExecPtr spin = sg4::this_actor::exec_init(1e18)->start();
        try {
          spin->wait_for(left);
        } catch (const simgrid::TimeoutException&) {
        }
        spin->cancel();
      }
    }
  }

  static sg4::Mailbox* box(std::uint32_t from, std::uint32_t to) {
    return sg4::Mailbox::by_name(fmt::format("{}>{}", from, to));
  }

  void driver(std::uint32_t s) {
    std::mt19937_64 rng(seed * 104729 + s);
    static int token = 0;
    Cursor c(seq(s));
    std::size_t top = 0;
    std::vector<sg4::ExecPtr> work;
    sg4::Mailbox* answers = sg4::Mailbox::by_name(fmt::format("answer>{}", s));
    std::vector<sg4::CommPtr> asks_out;
    auto finished_op = [&] {
      std::unique_lock<sg4::Mutex> lock(*done_mutex[s]);
      ++ops_done[s];
      progress[s]->notify_all();
      auto& w = waiting[s];
      while (!w.empty() && w.begin()->first <= ops_done[s]) {
        answer(s, w.begin()->second);
        w.erase(w.begin());
      }
    };
    for (std::uint64_t op = 0;; ++op) {
      const ev::Node* leaf = c.next(top);
      if (!leaf) break;
      if (s == 0) {
        if (top == main_loop && loop_begin < 0) loop_begin = sg4::Engine::get_clock();
        if (top > main_loop && loop_begin >= 0 && loop_end < 0) loop_end = sg4::Engine::get_clock();
      }
      blocked[s] = fmt::format("op {} ('{}'): its analysis", op, leaf->element.task);
      analysed[s]->acquire();
      const ev::Variant* v = variant(leaf, s);
      if (!v) {
        finished_op();
        continue;
      }
      // Data out first (the send halves need only earlier ops), then data in. Sends are
      // detached: the receiver waits for them (kept as handles, each completion cost more the
      // more an actor held: quadratic over a run of 50,000 messages).
      for (const ev::Peer& p : v->sends) {
        const std::int64_t to = std::int64_t(s) + p.offset;
        if (to < 0 || to >= std::int64_t(ranks)) continue;
        box(s, std::uint32_t(to))->put_init(&token, std::uint64_t(draw(p.bytes, rng)))->detach();
        message(s);
      }
      auto receive = [&](std::int64_t from) {
        blocked[s] = fmt::format("op {} ('{}'): data from shard {}", op, leaf->element.task, from);
        box(std::uint32_t(from), s)->get<int>();
        message(s);
      };
      if (ranks == recorded) {
        // What this shard's record says it received (a receive's offset is the sender's).
        for (const ev::Peer& p : v->recvs)
          if (const std::int64_t from = std::int64_t(s) + p.offset; from >= 0 && from < ranks)
            receive(from);
      } else {
        // Other rank counts: what the sender's class sends here (a shard's own record, made
        // among fewer shards, may name senders whose class sends elsewhere). The classes share
        // one group (checked), so the sender's record is this leaf's.
        for (std::int32_t off : lookup.at(leaf).offsets) {
          const std::int64_t from = std::int64_t(s) - off;
          if (from < 0 || from >= std::int64_t(ranks)) continue;
          if (const ev::Variant* fv = variant(leaf, std::uint32_t(from)))
            for (const ev::Peer& p : fv->sends)
              if (p.offset == off) receive(from);
        }
      }
      // Completions of remote points that this op's points wait for: a request and an answer
      // per shard asked (the runtime asks per point; those of one shard arrive together once
      // it has got this far, so one round trip stands for them).
      std::uint64_t expected = 0;
      for (const ev::Peer& p : v->asks) {
        const std::int64_t to = std::int64_t(s) + p.offset;
        if (to < 0 || to >= std::int64_t(ranks) || std::llround(draw(p.bytes, rng)) <= 0) continue;
        // (The payload's address first: finding the mailbox may let other actors run.)
        Ask* payload = &asks_made.emplace_back(Ask{s, op});
        asks_out.push_back(sg4::Mailbox::by_name(fmt::format("ask>{}", to))->put_init(payload, 16));
        asks_out.back()->start();
        message(s);
        ++expected;
      }
      blocked[s] = fmt::format("op {} ('{}'): answers from {} shard(s) it asked", op,
                               leaf->element.task, expected);
      for (; expected > 0; --expected) {
        answers->get<int>();
        message(s);
      }
      for (const sg4::CommPtr& ask : asks_out) ask->wait();  // (received: they were answered)
      asks_out.clear();
      work.clear();
      // The shard's worker threads take the points (and copies) in turn: at most `workers`
      // run at once, sharing the node's cores with everything else on it.
      std::vector<double> lengths;
      for (std::uint32_t i = 0; i < v->points; ++i)
        lengths.push_back(draw(leaf->element.point_ns, rng) * work_scale / platform.speed);
      for (std::uint32_t i = 0; i < v->copies; ++i)
        lengths.push_back(draw(leaf->element.copy_ns, rng) / platform.speed);
      std::size_t next = 0;
      while (next < lengths.size() || !work.empty()) {
        while (next < lengths.size() && work.size() < platform.workers)
          if (const double ns = lengths[next++]; ns > 0)
            work.push_back(sg4::this_actor::exec_async(ns));
        if (work.empty()) continue;
        const ssize_t done = sg4::Exec::wait_any(work);
        work.erase(work.begin() + done);
      }
      finished_op();
    }
    if (s == 0 && loop_begin >= 0 && loop_end < 0) loop_end = sg4::Engine::get_clock();
    blocked[s].clear();
    end_time = std::max(end_time, sg4::Engine::get_clock());
  }
};

std::string platform_xml(std::uint32_t nodes, std::uint32_t shards, std::uint32_t cores,
                         const Platform& p) {
  // Each shard reaches the backbone through its own link: half the latency on each side.
  return fmt::format(
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n<zone id=\"world\" routing=\"Full\">\n"
      "  <cluster id=\"nodes\" prefix=\"n\" suffix=\"\" radical=\"0-{0}\" speed=\"1Gf\" "
      "core=\"{1}\" bw=\"{2}Bps\" lat=\"{3}s\" loopback_bw=\"{2}Bps\" loopback_lat=\"{5}s\"/>\n"
      "  <cluster id=\"utils\" prefix=\"u\" suffix=\"\" radical=\"0-{4}\" speed=\"1Gf\" core=\"2\" "
      "bw=\"{2}Bps\" lat=\"{3}s\"/>\n</zone>\n</platform>\n",
      nodes - 1, cores, p.bandwidth, p.latency_s / 2, shards - 1, p.latency_s);
}

// Launches of `task` within n (loops counted out).
std::uint64_t launches(const ev::Node& n, const std::string& task) {
  if (!n.is_loop()) return n.element.task == task ? 1 : 0;
  std::uint64_t per = 0;
  for (const ev::Node& b : n.body) per += launches(b, task);
  return per * n.count;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: reprise-whatif FILE --platform SPEC [--ranks R] [--strong] [--means] "
      "[--seed N] [--iter-task NAME]\n"
      "  SPEC: "
      "cores=N,workers=W,per_node=K,shared_util=0|1,speed=F,util_speed=F,lat=1us,bw=10GBps,"
      "poll=1ms\n"
      "  (any subset; cores: per node, by default the recorded -ll:cpu times per_node)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, spec;
  Simulation sim;
  std::uint32_t ranks = 0;
  bool strong = false;
  std::string iter_task;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw Error(fmt::format("{} needs a value", a));
        return argv[++i];
      };
      if (a == "--platform")
        spec = value();
      else if (a == "--ranks")
        ranks = std::uint32_t(std::stoul(value()));
      else if (a == "--strong")
        strong = true;
      else if (a == "--means")
        sim.means = true;
      else if (a == "--seed")
        sim.seed = std::stoull(value());
      else if (a == "--iter-task")
        iter_task = value();
      else if (!a.empty() && a[0] != '-' && path.empty())
        path = a;
      else
        return usage();
    }
    if (path.empty()) return usage();
    const ev::Trace trace = ev::read_file(path);
    sim.trace = &trace;
    sim.platform = parse_platform(spec);
    if (sim.platform.workers == 0) sim.platform.workers = std::max<std::uint32_t>(1, trace.cpus);
    if (sim.platform.cores == 0)
      sim.platform.cores = std::max<std::uint32_t>(1, trace.cpus) * sim.platform.per_node;
    sim.recorded = trace.shards;
    // Each recorded shard replays its own group's loops; all of them the same op stream.
    sim.group_of.assign(sim.recorded, nullptr);
    for (const ev::Group& g : trace.groups) {
      for (std::uint32_t r : g.ranks)
        if (r < sim.recorded) sim.group_of[r] = &g;
      sim.index(g.seq);
    }
    for (std::uint32_t r = 0; r < sim.recorded; ++r)
      if (!sim.group_of[r]) throw Error(fmt::format("{}: shard {} has no records", path, r));
    for (const ev::Group& g : trace.groups)
      if (g.ops() != sim.group_of[0]->ops())
        throw Error(
            fmt::format("{}: shard {} recorded {} ops, shard 0 {}; a replicated op "
                        "stream has the same on every shard",
                        path, g.ranks.front(), g.ops(), sim.group_of[0]->ops()));
    sim.ranks = ranks ? ranks : trace.shards;
    if (sim.ranks != sim.recorded && sim.ranks > 2 && sim.recorded < 3)
      throw Error(
          fmt::format("--ranks {}: a trace of {} shard(s) has no interior shard to "
                      "stand for the others; record one of at least 3",
                      sim.ranks, sim.recorded));
    if (sim.ranks != sim.recorded)
      for (std::uint32_t s = 1; s < sim.ranks; ++s)
        if (sim.group_of[sim.recorded_shard(s)] != sim.group_of[0])
          throw Error(fmt::format(
              "--ranks {}: the recorded shards' loops differ in shape ({} groups): other rank "
              "counts are predicted from shards whose records compressed alike; predict {} "
              "ranks, the recorded count",
              sim.ranks, trace.groups.size(), sim.recorded));
    sim.work_scale = strong ? double(sim.recorded) / double(sim.ranks) : 1.0;
    std::uint64_t best = 0;
    // (Shard 0's: the main loop is timed on shard 0.)
    const std::vector<ev::Node>& seq0 = sim.group_of[0]->seq;
    for (std::size_t i = 0; i < seq0.size(); ++i)
      if (const ev::Node& n = seq0[i]; n.is_loop() && n.ops() > best) {
        best = n.ops();
        sim.main_loop = i;
      }
    const ev::Node& loop = seq0[sim.main_loop];
    std::uint64_t iters = loop.is_loop() ? loop.count : 1;
    if (!iter_task.empty()) {
      // One program iteration per launch of that task.
      const std::uint64_t n = launches(loop, iter_task);
      if (n == 0)
        throw Error(
            fmt::format("--iter-task: task '{}' is not launched in the main loop", iter_task));
      iters = n;
    }

    // The network as the platform says: no latency or bandwidth corrections (SimGrid's default
    // model multiplies latencies by 13 and sends 5% of the bytes back as acknowledgements,
    // fitted to TCP), quiet.
    std::vector<std::string> sg_args = {"reprise-whatif",
                                        "--log=root.thres:critical",
                                        "--cfg=network/latency-factor:1",
                                        "--cfg=network/bandwidth-factor:1",
                                        "--cfg=network/weight-S:0",
                                        "--cfg=network/crosstraffic:0"};
    std::vector<char*> sg_argv;
    for (std::string& a : sg_args) sg_argv.push_back(a.data());
    sg_argv.push_back(nullptr);
    int sg_argc = int(sg_args.size());
    sg4::Engine engine(&sg_argc, sg_argv.data());
    const auto xml =
        std::filesystem::temp_directory_path() / fmt::format("reprise-whatif-{}.xml", ::getpid());
    const std::uint32_t per_node = sim.platform.per_node;
    const std::uint32_t nodes = (sim.ranks + per_node - 1) / per_node;
    std::ofstream(xml) << platform_xml(nodes, sim.ranks, sim.platform.cores, sim.platform);
    engine.load_platform(xml.string());
    std::filesystem::remove(xml);
    for (std::uint32_t s = 0; s < sim.ranks; ++s) {
      sim.analysed.push_back(sg4::Semaphore::create(0));
      sim.issued.push_back(sg4::Semaphore::create(0));
      sim.ops_done.push_back(0);
      sim.blocked.emplace_back("not started");
      sim.waiting.emplace_back();
      sim.done_mutex.push_back(sg4::Mutex::create());
      sim.progress.push_back(sg4::ConditionVariable::create());
      sim.polls.push_back({0, sg4::Mutex::create(), sg4::ConditionVariable::create()});
      sg4::Host* node = engine.host_by_name(fmt::format("n{}", s / per_node));
      sg4::Host* util =
          sim.platform.shared_util ? node : engine.host_by_name(fmt::format("u{}", s));
      sg4::Actor::create(fmt::format("util{}", s), util, [&sim, s] { sim.utility(s); });
      sg4::Actor::create(fmt::format("app{}", s), util, [&sim, s] { sim.application(s); });
      sg4::Actor::create(fmt::format("answers{}", s), node, [&sim, s] { sim.responder(s); });
      sg4::Actor::create(fmt::format("shard{}", s), node, [&sim, s] { sim.driver(s); });
      if (sim.platform.poll_s > 0)
        sg4::Actor::create(fmt::format("progress{}", s), node, [&sim, s] { sim.poller(s); });
    }
    engine.run();
    std::string stalled;
    for (std::uint32_t s = 0; s < sim.ranks; ++s)
      if (!sim.blocked[s].empty() && stalled.size() < 2000)
        stalled += fmt::format("\n  shard {} waits for {}", s, sim.blocked[s]);
    if (!stalled.empty())
      throw Error(
          fmt::format("the simulation stalled at {:.6f} s:{}", sg4::Engine::get_clock(), stalled));
    const double span = sim.loop_end - sim.loop_begin;
    fmt::print(
        "RESULT tool=whatif ranks={} iter_s={:.6g} util_frac={:.3f} total_s={:.6g} "
        "loop_iters={} recorded_shards={} platform={}\n",
        sim.ranks, span / double(iters), span > 0 ? sim.util_busy / span : 0.0, sim.end_time, iters,
        sim.recorded, sim.platform.text());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reprise-whatif: %s\n", e.what());
    return 1;
  }
}
