#include "reprise_rt/shard_vote.h"

#include <chrono>
#include <cstring>

#include "reprise_rt/runtime.h"
#include "reprise_rt/shard_tree.h"

namespace reprise::detail {

namespace {
// A message is one word: the vote's number, whether it goes down (the verdict) or up (a
// subtree's AND), and the value.
constexpr std::uint64_t kDown = 2, kYes = 1;

std::uint64_t word(std::uint64_t k, bool down, bool yes) {
  return k << 2 | (down ? kDown : 0) | (yes ? kYes : 0);
}
}  // namespace

ShardVote::ShardVote(Runtime& rt, Network& net, Channel channel)
    : ShardVote(net, channel,
                Hooks{[&rt] { return rt.failed(); },
                      [&rt](std::uint64_t ns) { rt.count_shard_wait(ns); }}) {}

ShardVote::ShardVote(Network& net, Channel channel, Hooks hooks)
    : net_(net), channel_(channel), hooks_(std::move(hooks)) {
  net.on(channel, [this](std::uint32_t, std::vector<std::byte>&& b) {
    std::uint64_t w = 0;
    if (b.size() != sizeof(w)) return;  // not ours: cannot happen with one sender
    std::memcpy(&w, b.data(), sizeof(w));
    const std::uint64_t k = w >> 2;
    std::vector<Message> out;
    {
      std::lock_guard<std::mutex> g(mutex_);
      Round& r = rounds_[k];
      if (w & kDown) {
        r.verdict = (w & kYes) ? 1 : 0;
      } else {
        ++r.heard;
        r.yes = r.yes && (w & kYes);
      }
      advance(k, r, out);
    }
    decided_.notify_all();
    send(out);
  });
}

void ShardVote::advance(std::uint64_t k, Round& r, std::vector<Message>& out) {
  const std::uint32_t me = net_.rank();
  const std::uint32_t children = tree_child_count(me, net_.size());
  if (!r.sent_up && r.cast && r.heard == children + 1) {
    r.sent_up = true;
    if (me == 0)
      r.verdict = r.yes ? 1 : 0;  // the root decides
    else
      out.push_back(Message{tree_parent(me), word(k, false, r.yes)});
  }
  // (A verdict cannot arrive before this shard voted: the root waits for every shard.)
  if (r.verdict >= 0 && !r.forwarded) {
    r.forwarded = true;
    for (std::uint32_t i = 0; i < children; ++i)
      out.push_back(Message{tree_child(me, i), word(k, true, r.verdict == 1)});
  }
}

void ShardVote::send(const std::vector<Message>& out) {
  for (const Message& m : out) {
    std::vector<std::byte> b(sizeof(m.word));
    std::memcpy(b.data(), &m.word, sizeof(m.word));
    net_.send(m.to, channel_, std::move(b));
  }
}

void ShardVote::cast(std::uint64_t k, bool yes) {
  std::vector<Message> out;
  {
    std::lock_guard<std::mutex> g(mutex_);
    Round& r = rounds_[k];
    r.cast = true;
    ++r.heard;
    r.yes = r.yes && yes;
    advance(k, r, out);
  }
  send(out);
}

bool ShardVote::decided(std::uint64_t k) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto known = [&] { return rounds_[k].verdict >= 0; };
  if (!known()) {
    ++waits_;
    const auto t0 = std::chrono::steady_clock::now();
    // The wake-ups every few milliseconds only notice a failure elsewhere: a shard that has
    // stopped votes no more, and then the votes in are as good as any.
    while (!decided_.wait_for(lock, std::chrono::milliseconds(5), known))
      if (hooks_.failed()) break;
    if (hooks_.waited)
      hooks_.waited(std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count()));
  }
  const Round r = rounds_[k];
  rounds_.erase(k);
  return r.verdict < 0 ? r.yes : r.verdict == 1;
}

bool ShardVote::all(bool mine) {
  const std::uint64_t k = next_++;
  cast(k, mine);
  return decided(k);
}

}  // namespace reprise::detail
