#include "reprise_rt/shard_links.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "reprise/error.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/executor.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/log.h"
#include "reprise_rt/op.h"
#include "reprise_rt/runtime.h"

namespace reprise::detail {

ShardLinks::ShardLinks(Runtime& rt, Network& net)
    : rt_(rt), pipe_(std::make_unique<NetworkLinkPipe>(net)) {}

ShardLinks::~ShardLinks() {
  // The links go first: their stream's last callbacks still point into entries_.
  pipe_->close();
  if (links_) links_->abort();
  links_.reset();
}

bool ShardLinks::open(int mode) {
  Device* device = rt_.device();
  REPRISE_ASSERT(device && mode != 0, "the exchange makes links only with GPUs and -ll:nccl on");
  Network& net = *rt_.network();
  const Config& c = rt_.config();
  // Whether this shard can take part: a backend with links (auto: CUDA only), one device.
  std::string cannot;
  if (mode == -1 && std::strcmp(device->backend(), "cuda") != 0)
    cannot = fmt::format("the {} backend (auto opens NCCL on CUDA only)", device->backend());
  else if (!device->links_available())
    cannot = std::strcmp(device->backend(), "cuda") == 0
                 ? "no NCCL library loads (set REPRISE_NCCL_LIBRARY)"
                 : fmt::format("the {} backend has no links", device->backend());
  else if (c.gpus > 1 && device->devices() > 1)
    cannot = fmt::format(
        "its {} GPU processors use {} devices: the links need one device per rank (make one "
        "visible per rank, e.g. with CUDA_VISIBLE_DEVICES)",
        c.gpus, device->devices());
  // One collective: every shard's answer, and rank 0's id of the links (its size, then its
  // bytes in words), so that every shard decides alike and none waits in NCCL for another.
  constexpr std::size_t kIdWords = 16;
  std::vector<std::byte> id;
  if (cannot.empty() && rt_.shard() == 0) id = device->make_links_id();
  if (id.size() > kIdWords * sizeof(std::uint64_t)) id.clear();
  if (cannot.empty() && rt_.shard() == 0 && id.empty()) cannot = "rank 0 made no id for them";
  std::vector<std::uint64_t> words(2 + kIdWords, 0);
  words[0] = cannot.empty() ? 1 : 0;
  words[1] = id.size();
  if (!id.empty()) std::memcpy(words.data() + 2, id.data(), id.size());
  const std::vector<std::uint64_t> all = net.allgather(words);
  std::uint32_t refused = ~0u;
  for (std::uint32_t r = 0; r < rt_.num_shards() && refused == ~0u; ++r)
    if (all[r * words.size()] == 0) refused = r;
  if (refused != ~0u) {
    const std::string why =
        refused == rt_.shard() ? cannot : fmt::format("shard {} cannot open them", refused);
    if (mode == 1) throw Error(fmt::format("-ll:nccl 1: no links between devices: {}", why));
    REPRISE_LOG_INFO(LogCategory::CtrlRepl, "no device links ({}): staging through host memory",
                     why);
    return false;
  }
  id.assign(all[1], std::byte{0});
  if (!id.empty()) std::memcpy(id.data(), all.data() + 2, id.size());
  std::string why;
  try {
    links_ = device->open_links(id, rt_.shard(), rt_.num_shards(), 0, *pipe_);
  } catch (const std::exception& e) {
    why = e.what();
    links_.reset();
  }
  std::vector<std::uint64_t> mins{links_ ? 1u : 0u}, maxs = mins;
  net.allreduce_min_max(mins, maxs);
  if (mins[0] == 0) {
    if (links_) links_->abort();
    links_.reset();
    if (why.empty()) why = "another shard's did not";
    if (mode == 1)
      throw Error(fmt::format("-ll:nccl 1: the links between devices did not open: {}", why));
    REPRISE_LOG_INFO(LogCategory::CtrlRepl,
                     "device links did not open ({}): staging through host memory", why);
    return false;
  }
  return true;
}

bool ShardLinks::carries(const Op& copy) const {
  if (!links_ || copy.folds()) return false;
  const InstanceManager& im = rt_.instances();
  return im.memory(copy.point_instances[0]->memory()).kind == MemoryKind::Framebuffer &&
         im.memory(copy.point_instances[1]->memory()).kind == MemoryKind::Framebuffer;
}

CopyName ShardLinks::name_of(const Op& copy) const {
  return copy_name(copy, rt_.instances());
}

void ShardLinks::expect_send(const Op& copy, std::uint32_t to) {
  const CopyName k = name_of(copy);
  std::lock_guard<std::mutex> g(mutex_);
  Entry& e = entries_[k];
  e.self = this;
  e.send = true;
  e.peer = to;
  e.bytes = copy_bytes(copy);
  pending_.push_back(k);
}

void ShardLinks::expect_receive(PointTask* t, std::uint32_t from) {
  const Op& copy = *t->op;
  const CopyName k = name_of(copy);
  bool release = false;
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (abandoned_) {
      release = true;
    } else {
      Entry& e = entries_[k];
      e.self = this;
      e.peer = from;
      e.bytes = copy_bytes(copy);
      e.task = t;
      pending_.push_back(k);
    }
  }
  if (release) rt_.executor().release(t);
}

void ShardLinks::flush() {
  std::lock_guard<std::mutex> g(mutex_);
  if (pending_.empty()) return;
  std::sort(pending_.begin(), pending_.end());
  // The analysis and replays register copies in program order of the ops they are named for,
  // an op's copies while the utility thread handles it: nothing registered later may come
  // before what has been queued (the global order would break: a wrong pairing, or a hang).
  if (any_flushed_ && !(last_flushed_ < pending_.front()))
    throw Error(fmt::format(
        "device links: op #{}'s copy {}.{} from shard {} was registered after op #{}'s copy {}.{} "
        "from shard {} had been queued (the runtime's order broke; run with -ll:nccl 0)",
        pending_.front().seq, pending_.front().point, pending_.front().name, pending_.front().from,
        last_flushed_.seq, last_flushed_.point, last_flushed_.name, last_flushed_.from));
  last_flushed_ = pending_.back();
  any_flushed_ = true;
  queue_.insert(queue_.end(), pending_.begin(), pending_.end());
  pending_.clear();
  issue_locked();
}

void ShardLinks::issue_locked() {
  if (abandoned_) return;
  while (!queue_.empty()) {
    const CopyName k = queue_.front();
    // The message's name, which the host backend checks (NCCL does not carry it).
    const std::uint64_t tag = CopyNameHash()(k);
    auto it = entries_.find(k);
    REPRISE_ASSERT(it != entries_.end(), "a queued half of a copy has its entry");
    Entry& e = it->second;
    if (e.send) {
      if (!e.ready) return;  // its data is not packed yet: what follows waits (the order)
      links_->send(e.buffer, e.bytes, e.peer, tag);
      links_->release_buffer(links_->stream(), e.buffer);  // (once the send has run)
      entries_.erase(it);
      ++copies_;
    } else {
      e.buffer = links_->buffer(links_->stream(), e.bytes);
      links_->receive(e.buffer, e.bytes, e.peer, tag);
      rt_.device()->callback(links_->stream(), &ShardLinks::arrived, &e);
    }
    queue_.pop_front();
  }
}

void ShardLinks::arrived(void* entry) {
  auto* e = static_cast<Entry*>(entry);
  ShardLinks& self = *e->self;
  PointTask* t = nullptr;
  {
    std::lock_guard<std::mutex> g(self.mutex_);
    t = std::exchange(e->task, nullptr);  // (none: abandon() released it)
  }
  if (t) self.rt_.executor().release(t);
}

void ShardLinks::transfer(const Op& copy, void* buffer, bool into_buffer) {
  const Instance& inst = *copy.point_instances[into_buffer ? 0 : 1];
  const Domain& rect = copy.point_rects[0];
  Device& d = *rt_.device();
  const DeviceStream s = rt_.executor().copy_stream(inst.device_index());
  std::byte* at = static_cast<std::byte*>(buffer);
  for (int fi : copy.reqs[into_buffer ? 0 : 1].field_indices) {
    const std::size_t size = inst.field_size(fi);
    const StridedLayout dense = StridedLayout::dense(at, rect, size);
    d.copy(s, into_buffer ? device_copy_of(dense, inst.layout(fi, rect), rect, size)
                          : device_copy_of(inst.layout(fi, rect), dense, rect, size));
    at += std::size_t(rect.volume()) * size;
  }
  d.synchronize(s);
  rt_.count_device_copy(true, true);
}

void ShardLinks::send(const Op& copy) {
  // Packed and waited for: the source may change once this half is done.
  const DeviceStream s = rt_.executor().copy_stream(copy.point_instances[0]->device_index());
  void* buffer = links_->buffer(s, copy_bytes(copy));
  transfer(copy, buffer, true);
  std::lock_guard<std::mutex> g(mutex_);
  auto it = entries_.find(name_of(copy));
  if (it == entries_.end() || abandoned_) {
    links_->release_buffer(s, buffer);
    return;
  }
  it->second.buffer = buffer;
  it->second.ready = true;
  issue_locked();
}

void ShardLinks::unpack(const Op& copy) {
  void* buffer = nullptr;
  {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = entries_.find(name_of(copy));
    if (it == entries_.end() || abandoned_) return;  // abandoned after an error
    buffer = it->second.buffer;
    entries_.erase(it);
    ++copies_;
  }
  transfer(copy, buffer, false);
  links_->release_buffer(rt_.executor().copy_stream(copy.point_instances[1]->device_index()),
                         buffer);
}

void ShardLinks::abandon() {
  std::vector<PointTask*> waiting;
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (abandoned_) return;
    abandoned_ = true;
    // Every receive half still waiting for its data goes now (once: arrived() then finds none).
    for (auto& [k, e] : entries_)
      if (!e.send && e.task) waiting.push_back(std::exchange(e.task, nullptr));
  }
  pipe_->close();
  if (links_) links_->abort();
  for (PointTask* t : waiting) rt_.executor().release(t);
}

void ShardLinks::close() {
  pipe_->close();
  links_.reset();
}

std::uint64_t ShardLinks::copies() const {
  std::lock_guard<std::mutex> g(mutex_);
  return copies_;
}

std::string ShardLinks::describe_held() {
  std::lock_guard<std::mutex> g(mutex_);
  if (entries_.empty()) return {};
  std::string s = fmt::format("device links: {} halves registered, {} not issued", entries_.size(),
                              queue_.size());
  if (!queue_.empty()) {
    const CopyName& k = queue_.front();
    const Entry& e = entries_.at(k);
    s += fmt::format(" (head: op #{} copy {}.{} from shard {}, a {} {} shard {}{})", k.seq, k.point,
                     k.name, k.from, e.send ? "send" : "receive", e.send ? "to" : "from", e.peer,
                     e.send && !e.ready ? ", not packed yet" : "");
  }
  return s;
}

}  // namespace reprise::detail
