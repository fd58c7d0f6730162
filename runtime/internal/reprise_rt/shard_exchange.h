#pragma once
// Control replication inside one shard. Every shard analyses every op; it runs only the
// points (and halves of generated copies) mapped to it. For another shard's point it holds a
// proxy event, which the owner's Done message triggers, so dependences on remote work are
// ordinary events.
//
// Who hears of a point: an op whose points return values (or a single task) announces every
// point to every shard with its value. Every other op completes on each shard with the work
// that runs there, and the owner tells a shard of a point only when that shard asks: the
// first time something there waits for the proxy (need()), it sends a Request; the owner
// answers with Done once the point has finished. A shard thus hears only from the shards
// whose points its own work depends on. Proxies nobody asked for are dropped once nothing
// can reach their op any more.
//
// A copy between shards is split: the source shard sends the rectangle once the copy's
// preconditions hold there (the send half ends once the data is packed, and counts towards
// its op's completion there), the destination writes it into its instance once they hold
// there too. No shard waits for another's half of a copy: data crosses shards only inside
// copies, and a half waits for the work of its own shard.
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "reprise/registry.h"
#include "reprise_rt/copy_name.h"
#include "reprise_rt/event.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/network.h"
#include "reprise_rt/op.h"
#include "reprise_rt/shard_links.h"

namespace reprise::detail {

class Runtime;
struct PointTask;

class ShardExchange {
 public:
  ShardExchange(Runtime& rt, Network& net);

  // Whether op completes on each shard with its own work (Op::local_completion): its points
  // return no value that every shard would need.
  static bool completes_locally(const Op& op);

  // Point `index` of op runs on shard `owner`: the event that stands for it here.
  Event remote(Op& op, std::uint32_t index, std::uint32_t owner);
  // Something here is about to wait for e: if e stands for a remote point nobody here has
  // asked for yet, ask its owner.
  void need(Event e);
  // Every point of op (which completes locally) has been launched here; ops are launched in
  // program order, so requests for it and every earlier op can be answered.
  void launched(const OpRef& op);
  // op (which completes locally) has completed here.
  void completed(const Op& op);
  // One of ours finished: for ops that do not complete locally, tell every other shard.
  void finished(const Op& op, std::uint32_t point, const std::exception_ptr& error);
  // A reduction of a sharded future map (FutureMapState::sharded), or a gather of all its
  // values (FutureReducePayload::gather): each shard holds only its own points' values. They go
  // up the tree of shards (shard_tree.h) rooted at shard 0 once the map is complete here; the root
  // folds them in point order, as one process does (so the result is bit-identical), and the
  // result (a gather: every value) goes down the tree. At most three messages per shard, none
  // per point.
  void reduce(const OpRef& op);
  // The source half of a copy between shards (runs as the copy's task here).
  void send_data(const Op& copy, std::uint32_t to);
  // The destination half: t (whose pending count includes one for the data) is released when
  // the data has arrived; unpack() then writes it into the destination instance.
  void expect_data(PointTask* t);
  void unpack(const Op& copy);
  // A device copy between a framebuffer and a host buffer on the device's copy stream, waited
  // for (how data of framebuffers crosses shards: staged through the message).
  void stage(int device, const StridedLayout& dst, const StridedLayout& src, const Domain& rect,
             std::size_t size, bool to_device);
  // Copies between framebuffers over the device links (-ll:nccl; null when not open).
  ShardLinks* links() { return links_ && links_->is_open() ? links_.get() : nullptr; }
  // Opens them (collective, after the network has started) where -ll:nccl asks; closes them at
  // the end of the run.
  void open_links();
  void close_links();
  // After an error: nothing may wait for another shard any more (no hang on the way out).
  void abandon();
  // Sends an Abort with the error's text to every other shard (once). ending_job: this
  // process ends the whole job right after (exit() while running); the others print their
  // own line on receipt, before they are stopped.
  void broadcast_abort(const std::exception_ptr& e, bool ending_job = false);

  // What this shard still waits for from the others and holds for them (stall reports, the
  // end-of-run log): each table's size and its oldest entries (op number, point or copy
  // index, shard).
  std::string describe_held();

  // Notification counters: the shards this one has heard from (Done, Request, Data or a
  // reduction's values), and the requests it sent.
  struct Counters {
    std::uint32_t peers_heard = 0;
    std::uint64_t requests_sent = 0;
    std::uint64_t remote_proxies = 0;  // events made for other shards' points
  };
  Counters counters();

  // A fingerprint of an op's shape (kind, task, launch size, requirements): shards must agree.
  static std::uint64_t shape_of(const Op& op);

 private:
  // Registers a handler (timed by the profiler when on) and sends (noted by the profiler).
  void listen(Channel c, Network::Handler handler);
  void send(std::uint32_t to, Channel c, std::vector<std::byte> bytes);
  static const char* channel_name(Channel c);
  struct Proxy {
    OpRef op;
    std::uint32_t index = 0;
    Event event;
  };
  struct DoneMsg {
    std::uint32_t from = 0;
    std::uint64_t shape = 0;
    bool failed = false, has_value = false;
    TaskResult value;
    std::string error;
  };
  // A proxy of an op that completes locally, not asked for yet (by event id).
  struct Lazy {
    std::uint32_t gen = 0;
    Op* op = nullptr;  // kept alive by its group
    std::uint32_t index = 0;
    std::uint32_t owner = 0;
  };
  // The lazy proxies by event id: a flat table (ids are slots of the event table, reused, so
  // it stays the size of the events alive at once), as a hash map cost a node and a hash per
  // remote point of every launch.
  class LazyTable {
   public:
    void put(Event e, const Lazy& l) {
      if (by_id_.size() <= e.id) by_id_.resize(std::size_t(e.id) + 1);
      by_id_[e.id] = l;
      ++live_;
    }
    // The entry of e (of its generation), or nullptr.
    Lazy* find(Event e) {
      if (e.id >= by_id_.size() || by_id_[e.id].op == nullptr || by_id_[e.id].gen != e.gen)
        return nullptr;
      return &by_id_[e.id];
    }
    void erase(Lazy* l) {
      *l = Lazy{};
      --live_;
    }
    template <class Fn>
    void for_each(Fn&& fn) const {
      for (std::size_t id = 0; id < by_id_.size(); ++id)
        if (by_id_[id].op) fn(Event{std::uint32_t(id), by_id_[id].gen});
    }
    void clear() {
      by_id_.clear();
      live_ = 0;
    }
    std::size_t size() const { return live_; }
    bool empty() const { return live_ == 0; }

   private:
    std::vector<Lazy> by_id_;
    std::size_t live_ = 0;
  };
  // The lazy proxies of one op, with the reference that keeps it alive until it is otherwise
  // unreachable (then nobody can wait for them any more).
  struct Group {
    OpRef op;
    std::vector<Event> events;
  };
  static std::uint64_t key(std::uint64_t seq, std::uint32_t index) { return seq << 32 | index; }
  void on_done(std::uint32_t from, std::vector<std::byte>&& bytes);
  // A completion every shard hears (finished()) travels the tree of shards rooted at the
  // shard it finished on: this shard's part of the relay (at most two sends).
  void relay_done(const std::vector<std::byte>& bytes, std::uint32_t root);
  void on_request(std::uint32_t from, std::vector<std::byte>&& bytes);
  // Answers a request for point `index` of op #seq from shard `to` (now or when it finishes).
  void answer(std::uint64_t seq, std::uint32_t index, std::uint32_t to);
  void send_done(std::uint32_t to, const Op* op, std::uint64_t seq, std::uint32_t index);
  static void answer_when_done(void* ctx, std::uint64_t);
  // Drops the lazy proxies of ops nobody else references; their events go to out (to trigger).
  void sweep(std::vector<Event>& out);
  void heard_from(std::uint32_t from);
  // A message about op from shard `from` shows that the shards issued different programs.
  void record_divergence(const Op& op, std::uint32_t from);
  void on_data(std::uint32_t from, std::vector<std::byte>&& bytes);
  // A reduction in progress here (reduce()), by the number of its FutureReduce op: created by
  // whichever comes first, the op's analysis here or a child shard's values.
  struct Reduction {
    OpRef op;  // once analysed here
    bool own_in = false, sent_up = false;
    std::uint32_t children_in = 0;
    std::vector<std::pair<std::uint32_t, TaskResult>> values;  // (point, value) heard so far
    std::string error;                                         // the first failure heard of
  };
  struct Outgoing {
    std::uint32_t to;
    std::vector<std::byte> bytes;
  };
  static void contribute_when_ready(void* self, std::uint64_t seq);
  // This shard's values of reduction seq are in (its map completed here).
  void contribute(std::uint64_t seq);
  void on_reduce(std::uint32_t from, std::vector<std::byte>&& bytes);
  // With the lock held: once this shard's values and its children's are in, they go up the
  // tree (into out); at the root, true: every value is in (conclude(), without the lock).
  bool advance(Reduction& r, std::uint64_t seq, std::vector<Outgoing>& out);
  // The root folds the values in point order and sends the result down the tree.
  void conclude(Reduction r, std::uint64_t seq);
  // A gather (FutureReducePayload::gather): the values of the other shards' points go
  // into the map here.
  void store_gathered(const Op& op,
                      const std::vector<std::pair<std::uint32_t, TaskResult>>& values);
  // Completes a FutureReduce op with its value, or with the failure (error text; empty: the
  // run's first error).
  void finish_reduction(Op& op, const TaskResult* value, const std::string& error);
  std::vector<std::uint32_t> tree_children() const;
  void apply(Proxy& p, const DoneMsg& m);

  Runtime& rt_;
  Network& net_;
  std::unique_ptr<ShardLinks> links_;  // with a device (its pipe listens from the start)
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Proxy> proxies_;
  std::unordered_map<std::uint64_t, DoneMsg> early_done_;
  std::unordered_map<CopyName, PointTask*, CopyNameHash> recvs_;
  std::unordered_map<CopyName, std::vector<std::byte>, CopyNameHash>
      data_;  // arrived, not unpacked
  LazyTable lazy_;
  std::unordered_map<const Op*, Group> groups_;
  std::size_t sweep_at_ = 256;
  // Owner side: ops launched here and not complete yet; requests for ops not launched yet.
  std::unordered_map<std::uint64_t, OpRef> launched_ops_;
  std::map<std::uint64_t, std::vector<std::uint32_t>> early_requests_;
  std::map<std::uint64_t, Reduction> reductions_;
  std::uint64_t frontier_ = 0;  // every locally completing op up to this one is launched
  bool launched_any_ = false;
  std::vector<std::uint64_t> heard_;  // per shard: Done, Request and Data messages received
  std::uint64_t requests_sent_ = 0;
  std::uint64_t remote_proxies_ = 0;
  bool abandoned_ = false;
  bool abort_sent_ = false;
};

}  // namespace reprise::detail
