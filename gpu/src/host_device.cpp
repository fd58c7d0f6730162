// The host device backend (DESIGN.md §9): a real execution backend without a GPU, like Kokkos'
// Serial backend. Each stream is an in-order queue run by a host thread of its own;
// framebuffer memory is host RAM; copies, kernels (host functions), events, waits between
// streams and captured graphs behave as on a GPU — asynchronous to the thread that enqueues
// them — so everything above the device interface runs and is tested without one.
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host_links.h"
#include "reprise_gpu/devices.h"
#include "reprise_rt/assert.h"

namespace reprise::devices {

namespace {

using detail::DeviceCopy;
using detail::DeviceEvent;
using detail::DeviceGraph;
using detail::DeviceStream;

void copy_now(const DeviceCopy& c) {
  for (std::size_t z = 0; z < c.depth; ++z)
    for (std::size_t y = 0; y < c.height; ++y)
      std::memcpy(static_cast<std::byte*>(c.dst) + z * c.dst_slice + y * c.dst_pitch,
                  static_cast<const std::byte*>(c.src) + z * c.src_slice + y * c.src_pitch,
                  c.row_bytes);
}

// One stream: a FIFO of work and the thread that runs it. Events are positions in the FIFO.
class HostStream {
 public:
  HostStream() : thread_([this] { run(); }) {}
  ~HostStream() {
    {
      std::lock_guard<std::mutex> g(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    thread_.join();
  }

  // Appends work (or, while capturing, records it); returns its position.
  std::uint64_t enqueue(std::function<void()> fn) {
    std::lock_guard<std::mutex> g(mutex_);
    if (capture_) {
      capture_->push_back(std::move(fn));
      return enqueued_;
    }
    queue_.push_back(std::move(fn));
    ++enqueued_;
    work_.notify_one();
    return enqueued_;
  }
  // Whether the work at `position` (and everything before it) has run.
  bool reached(std::uint64_t position) {
    std::lock_guard<std::mutex> g(mutex_);
    return completed_ >= position;
  }
  void wait_until(std::uint64_t position) {
    std::unique_lock<std::mutex> g(mutex_);
    done_.wait(g, [&] { return completed_ >= position; });
  }
  std::uint64_t position() {
    std::lock_guard<std::mutex> g(mutex_);
    return enqueued_;
  }
  void begin_capture(std::vector<std::function<void()>>* into) {
    std::lock_guard<std::mutex> g(mutex_);
    capture_ = into;
  }
  void end_capture() {
    std::lock_guard<std::mutex> g(mutex_);
    capture_ = nullptr;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> g(mutex_);
    for (;;) {
      work_.wait(g, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and drained
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      g.unlock();
      fn();
      g.lock();
      ++completed_;
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<std::function<void()>> queue_;
  std::uint64_t enqueued_ = 0, completed_ = 0;
  std::vector<std::function<void()>>* capture_ = nullptr;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is built
};

struct HostGraph {
  std::vector<std::function<void()>> steps;
};

class HostDevice final : public detail::Device {
 public:
  explicit HostDevice(int devices) : devices_(devices) {}
  ~HostDevice() override {
    std::lock_guard<std::mutex> g(mutex_);
    REPRISE_ASSERT(allocations_.empty(), "every framebuffer allocation is released first");
  }
  const char* backend() const override { return "host"; }
  int devices() const override { return devices_; }
  bool host_addressable() const override { return true; }

  void* allocate(int, std::size_t bytes) override {
    void* p = std::calloc(bytes ? bytes : 1, 1);
    if (p) {
      std::lock_guard<std::mutex> g(mutex_);
      allocations_.emplace(p, bytes);
    }
    return p;
  }
  void release(int, void* p) override {
    if (!p) return;
    {
      std::lock_guard<std::mutex> g(mutex_);
      allocations_.erase(p);
    }
    std::free(p);
  }

  void* allocate_host(std::size_t bytes) override { return std::calloc(bytes ? bytes : 1, 1); }
  void release_host(void* p) override { std::free(p); }

  DeviceStream create_stream(int device) override {
    auto s = std::make_unique<HostStream>();
    DeviceStream handle{s.get(), device};
    std::lock_guard<std::mutex> g(mutex_);
    streams_.emplace(s.get(), std::move(s));
    return handle;
  }
  void destroy_stream(DeviceStream s) override {
    std::unique_ptr<HostStream> gone;
    {
      std::lock_guard<std::mutex> g(mutex_);
      auto it = streams_.find(s.handle);
      if (it == streams_.end()) return;
      gone = std::move(it->second);
      streams_.erase(it);
    }
    // (Destroyed outside the lock: its thread drains what is queued first.)
  }

  void copy(DeviceStream s, const DeviceCopy& c) override {
    stream(s).enqueue([c] { copy_now(c); });
  }
  void launch_host(DeviceStream s, std::function<void()> kernel) override {
    stream(s).enqueue(std::move(kernel));
  }
  void callback(DeviceStream s, void (*fn)(void*), void* arg) override {
    stream(s).enqueue([fn, arg] { fn(arg); });
  }
  // An event is a position on its stream (valid while the stream lives).
  DeviceEvent record(DeviceStream s) override {
    HostStream& hs = stream(s);
    return DeviceEvent{&hs, hs.position()};
  }
  bool query(DeviceEvent e) override {
    return !e.handle || static_cast<HostStream*>(e.handle)->reached(e.position);
  }
  void release_event(DeviceEvent) override {}
  void wait(DeviceStream s, DeviceEvent e) override {
    auto* hs = static_cast<HostStream*>(e.handle);
    if (!hs || hs == &stream(s)) return;  // in order on its own stream already
    stream(s).enqueue([hs, position = e.position] { hs->wait_until(position); });
  }
  void synchronize(DeviceStream s) override {
    HostStream& hs = stream(s);
    hs.wait_until(hs.position());
  }

  void begin_capture(DeviceStream s) override {
    auto graph = std::make_unique<HostGraph>();
    std::lock_guard<std::mutex> g(mutex_);
    auto& slot = capturing_[s.handle];
    slot = std::move(graph);
    stream_locked(s).begin_capture(&slot->steps);
  }
  DeviceGraph end_capture(DeviceStream s) override {
    std::lock_guard<std::mutex> g(mutex_);
    stream_locked(s).end_capture();
    auto it = capturing_.find(s.handle);
    if (it == capturing_.end()) return DeviceGraph{};
    HostGraph* raw = it->second.get();
    graphs_.emplace(raw, std::move(it->second));
    capturing_.erase(it);
    return DeviceGraph{raw};
  }
  void launch_graph(DeviceStream s, DeviceGraph graph) override {
    if (!graph.handle) return;
    std::shared_ptr<HostGraph> hg;
    {
      std::lock_guard<std::mutex> g(mutex_);
      hg = graphs_.at(static_cast<HostGraph*>(graph.handle));
    }
    // One unit on the stream: the captured steps in their order. (It keeps the graph: a step
    // may complete work whose owner destroys the graph while the unit still runs.)
    stream(s).enqueue([hg = std::move(hg)] {
      for (const auto& step : hg->steps) step();
    });
  }
  void destroy_graph(DeviceGraph graph) override {
    std::lock_guard<std::mutex> g(mutex_);
    graphs_.erase(static_cast<HostGraph*>(graph.handle));
  }

  // Links between ranks: NCCL's semantics over the runtime's network (host_links.h).
  bool links_available() override { return true; }
  std::vector<std::byte> make_links_id() override {
    return {std::byte('h'), std::byte('o'), std::byte('s'), std::byte('t')};
  }
  std::unique_ptr<detail::DeviceLinks> open_links(std::span<const std::byte>, std::uint32_t,
                                                  std::uint32_t, int device,
                                                  detail::LinkPipe& pipe) override {
    return make_host_links(*this, device, pipe);
  }

 private:
  HostStream& stream(DeviceStream s) {
    std::lock_guard<std::mutex> g(mutex_);
    return stream_locked(s);
  }
  HostStream& stream_locked(DeviceStream s) {
    auto it = streams_.find(s.handle);
    REPRISE_ASSERT(it != streams_.end(), "a stream is used between its creation and destruction");
    return *it->second;
  }

  int devices_;
  std::mutex mutex_;
  std::unordered_map<void*, std::unique_ptr<HostStream>> streams_;
  std::unordered_map<void*, std::unique_ptr<HostGraph>> capturing_;
  std::unordered_map<HostGraph*, std::shared_ptr<HostGraph>> graphs_;
  std::unordered_map<void*, std::size_t> allocations_;
};

}  // namespace

std::unique_ptr<detail::Device> make_host_device(int devices) {
  return std::make_unique<HostDevice>(devices < 1 ? 1 : devices);
}

}  // namespace reprise::devices
