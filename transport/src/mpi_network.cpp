#include "reprise_transport/mpi_network.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <list>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "reprise_rt/log.h"

namespace reprise::transport {

namespace {

using detail::Channel;

class MpiNetwork final : public detail::Network {
 public:
  // Each network (one per run of the runtime) talks on a communicator of its own: a rank that
  // has finished a run and started the next may send before another rank's progress thread
  // of the previous run has passed its final barrier, and that thread, still receiving,
  // would otherwise take the new run's message for its own and drop it.
  MpiNetwork(int rank, int size) : rank_(std::uint32_t(rank)), size_(std::uint32_t(size)) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  }
  ~MpiNetwork() override {
    if (thread_.joinable()) stop();
    free_comm();
  }
  std::uint32_t rank() const override { return rank_; }
  std::uint32_t size() const override { return size_; }
  void on(Channel c, Handler h) override { handlers_[std::size_t(c)] = std::move(h); }
  void start(const detail::SpinPolicy& idle) override {
    idle_ = idle;
    thread_ = std::thread(&MpiNetwork::loop, this);
  }

  void send(std::uint32_t to, Channel c, std::vector<std::byte> bytes) override {
    {
      std::lock_guard<std::mutex> g(mutex_);
      outbox_.push_back(Outgoing{to, std::uint32_t(c), std::move(bytes)});
    }
    wake_.notify_one();
  }

  void allreduce_min_max(std::vector<std::uint64_t>& mins,
                         std::vector<std::uint64_t>& maxs) override {
    run_collective([&](std::vector<MPI_Request>& reqs) {
      reqs.resize(2);
      MPI_Iallreduce(MPI_IN_PLACE, mins.data(), int(mins.size()), MPI_UINT64_T, MPI_MIN, comm_,
                     &reqs[0]);
      MPI_Iallreduce(MPI_IN_PLACE, maxs.data(), int(maxs.size()), MPI_UINT64_T, MPI_MAX, comm_,
                     &reqs[1]);
    });
  }

  std::vector<std::uint64_t> allgather(const std::vector<std::uint64_t>& mine) override {
    std::vector<std::uint64_t> all(mine.size() * size_);
    run_collective([&](std::vector<MPI_Request>& reqs) {
      reqs.resize(1);
      MPI_Iallgather(mine.data(), int(mine.size()), MPI_UINT64_T, all.data(), int(mine.size()),
                     MPI_UINT64_T, comm_, &reqs[0]);
    });
    return all;
  }

  std::uint64_t messages_sent() const override { return sent_.load(std::memory_order_relaxed); }

  [[noreturn]] void abort_job(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // (MPI_Abort does not return)
  }

  void stop() override {
    {
      std::lock_guard<std::mutex> g(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
    free_comm();
  }

 private:
  // On the calling thread, once the progress thread has ended (MPI_THREAD_SERIALIZED).
  void free_comm() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  struct Outgoing {
    std::uint32_t to;
    std::uint32_t channel;
    std::vector<std::byte> bytes;
  };
  // A frame's header inside a batch (both ends are this program: no byte-order question).
  struct Frame {
    std::uint64_t length;
    std::uint64_t channel;
  };
  // Every point-to-point message uses this tag (collectives have their own context).
  static constexpr int kTag = 1;
  struct InFlight {
    MPI_Request req;
    std::vector<std::byte> bytes;
  };
  struct Collective {
    std::function<void(std::vector<MPI_Request>&)> post;
    std::vector<MPI_Request> reqs;
    std::promise<void> done;
    bool posted = false;
  };

  // Hands a collective to the progress thread and waits for it.
  void run_collective(std::function<void(std::vector<MPI_Request>&)> post) {
    auto c = std::make_shared<Collective>();
    c->post = std::move(post);
    std::future<void> f = c->done.get_future();
    {
      std::lock_guard<std::mutex> g(mutex_);
      collectives_.push_back(c);
    }
    wake_.notify_one();
    f.get();
  }

  // One round: post sends and collectives, retire finished ones, deliver one received
  // message. Returns whether anything happened.
  bool progress() {
    bool busy = false;
    std::deque<Outgoing> out;
    std::vector<std::shared_ptr<Collective>> new_collectives;
    {
      std::lock_guard<std::mutex> g(mutex_);
      out.swap(outbox_);
      new_collectives.swap(collectives_);
    }
    // Everything queued for one rank goes as one MPI message of frames (length, channel,
    // bytes): a burst of completions costs one send, not one per point, and a point's Done
    // travels with the copy of its output to the same shard.
    std::vector<std::pair<std::uint32_t, std::vector<std::byte>>> batches;
    for (Outgoing& o : out) {
      auto it = std::find_if(batches.begin(), batches.end(),
                             [&](const auto& b) { return b.first == o.to; });
      if (it == batches.end()) {
        batches.emplace_back(o.to, std::vector<std::byte>());
        it = batches.end() - 1;
      }
      const Frame f{std::uint64_t(o.bytes.size()), o.channel};
      const auto* fp = reinterpret_cast<const std::byte*>(&f);
      it->second.insert(it->second.end(), fp, fp + sizeof(f));
      it->second.insert(it->second.end(), o.bytes.begin(), o.bytes.end());
    }
    for (auto& [to, bytes] : batches) {
      in_flight_.push_back(InFlight{MPI_REQUEST_NULL, std::move(bytes)});
      InFlight& f = in_flight_.back();
      sent_.fetch_add(1, std::memory_order_relaxed);
      MPI_Isend(f.bytes.data(), int(f.bytes.size()), MPI_BYTE, int(to), kTag, comm_, &f.req);
      busy = true;
    }
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      int flag = 0;
      MPI_Test(&it->req, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        it = in_flight_.erase(it);
        busy = true;
      } else {
        ++it;
      }
    }
    for (auto& c : new_collectives) {
      c->post(c->reqs);
      pending_collectives_.push_back(c);
      busy = true;
    }
    for (auto it = pending_collectives_.begin(); it != pending_collectives_.end();) {
      int flag = 0;
      MPI_Testall(int((*it)->reqs.size()), (*it)->reqs.data(), &flag, MPI_STATUSES_IGNORE);
      if (flag) {
        (*it)->done.set_value();
        it = pending_collectives_.erase(it);
        busy = true;
      } else {
        ++it;
      }
    }
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_, &flag, &st);
    if (flag) {
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      std::vector<std::byte> bytes(static_cast<std::size_t>(count));
      MPI_Recv(bytes.data(), count, MPI_BYTE, st.MPI_SOURCE, kTag, comm_, MPI_STATUS_IGNORE);
      deliver(st.MPI_SOURCE, bytes);
      busy = true;
    }
    return busy;
  }

  // Hands each frame of a batch to its channel's handler, in order.
  void deliver(int from, const std::vector<std::byte>& batch) const {
    std::size_t at = 0;
    while (at + sizeof(Frame) <= batch.size()) {
      Frame f;
      std::memcpy(&f, batch.data() + at, sizeof(f));
      at += sizeof(f);
      if (at + f.length > batch.size()) break;  // truncated: cannot happen with our framing
      const auto begin = batch.begin() + std::ptrdiff_t(at);
      at += f.length;
      if (f.channel < handlers_.size() && handlers_[f.channel])
        handlers_[f.channel](std::uint32_t(from),
                             std::vector<std::byte>(begin, begin + std::ptrdiff_t(f.length)));
    }
  }

  void loop() {
    detail::set_log_thread_name("mpi");
    auto idle = std::chrono::microseconds(20);
    MPI_Request barrier = MPI_REQUEST_NULL;
    // A message soon after the last one is the common case (a halo exchange, a completion
    // answering a request): poll for idle_.spin_ns (-ll:net_spin) before sleeping, yielding
    // the core on a crowded machine as idle workers do. (A sleep costs 20-100 µs per message
    // on the critical path: measured on 16 cores, the stencil's iteration at 2 ranks took 20x
    // the 1-rank time; on 2 cores, ranks oversubscribed, a 50 µs spin left the stencil and
    // jacobi2d 2x slower than 1 ms.)
    auto last_busy = std::chrono::steady_clock::now();
    for (;;) {
      if (progress()) {
        idle = std::chrono::microseconds(20);
        last_busy = std::chrono::steady_clock::now();
        continue;
      }
      const auto spun = std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - last_busy)
                                          .count());
      if (spun < idle_.spin_ns) {
        idle_.pause(spun);
        continue;
      }
      bool stopping;
      {
        std::lock_guard<std::mutex> g(mutex_);
        stopping = stopping_ && outbox_.empty() && collectives_.empty();
      }
      if (stopping && in_flight_.empty() && pending_collectives_.empty()) {
        // Everything of ours is delivered; leave once every rank is here too.
        if (barrier == MPI_REQUEST_NULL) MPI_Ibarrier(comm_, &barrier);
        int flag = 0;
        MPI_Test(&barrier, &flag, MPI_STATUS_IGNORE);
        if (flag) return;
      }
      std::unique_lock<std::mutex> g(mutex_);
      wake_.wait_for(g, idle, [&] { return !outbox_.empty() || !collectives_.empty(); });
      idle = std::min(idle * 2, std::chrono::microseconds(100));
    }
  }

  const std::uint32_t rank_, size_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::array<Handler, 16> handlers_;  // by Channel (see Channel: up to 15)
  std::thread thread_;
  detail::SpinPolicy idle_;
  std::atomic<std::uint64_t> sent_{0};  // MPI sends posted (messages_sent)
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Outgoing> outbox_;
  std::vector<std::shared_ptr<Collective>> collectives_;
  bool stopping_ = false;
  // Progress thread only:
  std::list<InFlight> in_flight_;
  std::list<std::shared_ptr<Collective>> pending_collectives_;
};

}  // namespace

std::unique_ptr<detail::Network> make_mpi_network() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return nullptr;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return nullptr;
  return std::make_unique<MpiNetwork>(rank, size);
}

}  // namespace reprise::transport
