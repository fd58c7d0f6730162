// ShardVote (reprise_rt/shard_vote.h): every shard gets the AND of all shards' votes, over an
// in-process network whose ranks deliver on threads of their own (as MPI's progress thread
// does), with at most three messages per shard per vote, and nobody waits forever once the
// program has failed.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "reprise_rt/network.h"
#include "reprise_rt/shard_vote.h"
#include "reprise_rt/spin_policy.h"

namespace reprise::detail {
namespace {

class LoopbackHub;

// One rank of the hub: send() queues for the receiver's delivery thread.
class LoopbackNetwork final : public Network {
 public:
  LoopbackNetwork(LoopbackHub& hub, std::uint32_t rank) : hub_(hub), rank_(rank) {}
  ~LoopbackNetwork() override { stop(); }
  std::uint32_t rank() const override { return rank_; }
  std::uint32_t size() const override;
  void on(Channel c, Handler h) override { handlers_[std::size_t(c)] = std::move(h); }
  void start(const SpinPolicy&) override {
    thread_ = std::thread([this] { deliver(); });
  }
  void send(std::uint32_t to, Channel c, std::vector<std::byte> bytes) override;
  void allreduce_min_max(std::vector<std::uint64_t>&, std::vector<std::uint64_t>&) override {
    throw std::logic_error("not used by these tests");
  }
  std::vector<std::uint64_t> allgather(const std::vector<std::uint64_t>&) override {
    throw std::logic_error("not used by these tests");
  }
  void stop() override {
    {
      std::lock_guard<std::mutex> g(mutex_);
      stopping_ = true;
    }
    ready_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t messages_sent() const override { return sent_.load(); }
  [[noreturn]] void abort_job(int) override { std::abort(); }

  void receive(std::uint32_t from, Channel c, std::vector<std::byte> bytes) {
    {
      std::lock_guard<std::mutex> g(mutex_);
      inbox_.push_back(Message{from, c, std::move(bytes)});
    }
    ready_.notify_one();
  }

 private:
  struct Message {
    std::uint32_t from;
    Channel channel;
    std::vector<std::byte> bytes;
  };
  void deliver() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return stopping_ || !inbox_.empty(); });
      if (inbox_.empty()) return;  // (stopping, and everything delivered)
      Message m = std::move(inbox_.front());
      inbox_.pop_front();
      lock.unlock();
      if (const Handler& h = handlers_[std::size_t(m.channel)]) h(m.from, std::move(m.bytes));
      lock.lock();
    }
  }

  LoopbackHub& hub_;
  const std::uint32_t rank_;
  std::array<Handler, 16> handlers_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Message> inbox_;
  bool stopping_ = false;
  std::thread thread_;
  std::atomic<std::uint64_t> sent_{0};
};

class LoopbackHub {
 public:
  explicit LoopbackHub(std::uint32_t n) {
    for (std::uint32_t r = 0; r < n; ++r)
      ranks_.push_back(std::make_unique<LoopbackNetwork>(*this, r));
  }
  std::uint32_t size() const { return std::uint32_t(ranks_.size()); }
  LoopbackNetwork& rank(std::uint32_t r) { return *ranks_[r]; }

 private:
  std::vector<std::unique_ptr<LoopbackNetwork>> ranks_;
};

std::uint32_t LoopbackNetwork::size() const {
  return hub_.size();
}

void LoopbackNetwork::send(std::uint32_t to, Channel c, std::vector<std::byte> bytes) {
  ASSERT_LT(to, hub_.size());
  ASSERT_NE(to, rank_);
  ++sent_;
  hub_.rank(to).receive(rank_, c, std::move(bytes));
}

// A shard's vote on k: mostly yes, now and then no, differently on each shard.
bool vote_of(std::uint32_t shard, std::uint64_t k) {
  return (k * 2654435761u + shard * 40503u) % 11 != 0;
}

// Shards of one run: the hub, a vote per shard, and a failure flag all see.
struct Shards {
  explicit Shards(std::uint32_t n) : hub(n) {
    for (std::uint32_t s = 0; s < n; ++s)
      votes.push_back(std::make_unique<ShardVote>(
          hub.rank(s), Channel::Vote, ShardVote::Hooks{[this] { return failed.load(); }, {}}));
    for (std::uint32_t s = 0; s < n; ++s) hub.rank(s).start(SpinPolicy{});
  }
  // (The delivery threads stop before the votes their handlers call go.)
  ~Shards() {
    for (std::uint32_t s = 0; s < hub.size(); ++s) hub.rank(s).stop();
  }
  LoopbackHub hub;
  std::atomic<bool> failed{false};
  std::vector<std::unique_ptr<ShardVote>> votes;
};

TEST(ShardVote, EveryShardGetsTheAndOfAllVotes) {
  constexpr std::uint64_t kVotes = 300;
  for (std::uint32_t n : {1u, 2u, 3u, 5u, 8u, 13u}) {
    Shards shards(n);
    std::vector<std::vector<bool>> got(n);
    std::vector<std::thread> threads;
    for (std::uint32_t s = 0; s < n; ++s)
      threads.emplace_back([&, s] {
        for (std::uint64_t k = 0; k < kVotes; ++k)
          got[s].push_back(shards.votes[s]->all(vote_of(s, k)));
      });
    for (std::thread& t : threads) t.join();
    for (std::uint64_t k = 0; k < kVotes; ++k) {
      bool want = true;
      for (std::uint32_t s = 0; s < n; ++s) want = want && vote_of(s, k);
      for (std::uint32_t s = 0; s < n; ++s)
        ASSERT_EQ(got[s][k], want) << n << " shards: shard " << s << ", vote " << k;
    }
    // One up and two down at most, whatever the number of shards (a broadcast: n - 1).
    for (std::uint32_t s = 0; s < n; ++s)
      EXPECT_LE(shards.hub.rank(s).messages_sent(), 3 * kVotes) << n << " shards: shard " << s;
  }
}

TEST(ShardVote, VerdictsAskedForLaterThanTheVotes) {
  // Automatic tracing's late agreement: vote on k, ask for the verdict on k - 2; shards at
  // different speeds.
  constexpr std::uint32_t n = 6;
  constexpr std::uint64_t kVotes = 200, kLag = 2;
  Shards shards(n);
  std::vector<std::vector<bool>> got(n);
  std::vector<std::thread> threads;
  for (std::uint32_t s = 0; s < n; ++s)
    threads.emplace_back([&, s] {
      for (std::uint64_t k = 0; k < kVotes; ++k) {
        if (s == 4 && k % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        shards.votes[s]->cast(k, vote_of(s, k));
        if (k >= kLag) got[s].push_back(shards.votes[s]->decided(k - kLag));
      }
      for (std::uint64_t k = kVotes - kLag; k < kVotes; ++k)
        got[s].push_back(shards.votes[s]->decided(k));
    });
  for (std::thread& t : threads) t.join();
  for (std::uint64_t k = 0; k < kVotes; ++k) {
    bool want = true;
    for (std::uint32_t s = 0; s < n; ++s) want = want && vote_of(s, k);
    for (std::uint32_t s = 0; s < n; ++s)
      ASSERT_EQ(got[s][k], want) << "shard " << s << ", vote " << k;
  }
}

TEST(ShardVote, AFailureEndsTheWait) {
  // Shard 3 never votes (it stopped); once the program has failed the others stop waiting,
  // with the votes that came in.
  constexpr std::uint32_t n = 4;
  Shards shards(n);
  std::vector<int> got(n, -1);
  std::vector<std::thread> threads;
  for (std::uint32_t s = 0; s + 1 < n; ++s)
    threads.emplace_back([&, s] { got[s] = shards.votes[s]->all(true) ? 1 : 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  for (std::uint32_t s = 0; s + 1 < n; ++s) EXPECT_EQ(got[s], -1) << "shard " << s << " decided";
  shards.failed = true;
  for (std::thread& t : threads) t.join();
  for (std::uint32_t s = 0; s + 1 < n; ++s) EXPECT_NE(got[s], -1);
  EXPECT_GE(shards.votes[0]->waits(), 1u);
}

}  // namespace
}  // namespace reprise::detail
