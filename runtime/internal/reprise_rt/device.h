#pragma once
// The narrow device interface of DESIGN.md §9: what the runtime asks of a GPU backend.
// gpu/ implements it twice — on CUDA (the runtime API), and as the host device backend, which
// gives each stream its own in-order host thread and keeps framebuffer memory in host RAM —
// and reprise::start hands one to the runtime when -ll:gpu asks for GPUs. The runtime never
// includes a CUDA header: streams, events and graphs are opaque handles here.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace reprise::detail {

// A strided copy of `depth` slices of `height` rows of `row_bytes` bytes each.
struct DeviceCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  std::size_t row_bytes = 0;
  std::size_t height = 1;
  std::size_t depth = 1;
  std::size_t dst_pitch = 0, src_pitch = 0;  // bytes from one row to the next
  std::size_t dst_slice = 0, src_slice = 0;  // bytes from one slice to the next
};

struct DeviceStream {
  void* handle = nullptr;  // a cudaStream_t, or the host backend's stream
  int device = 0;
  bool valid() const { return handle != nullptr; }
};
struct DeviceEvent {
  void* handle = nullptr;      // a cudaEvent_t, or the host backend's stream; null: complete
  std::uint64_t position = 0;  // host backend: the work on that stream it stands for
};
struct DeviceGraph {
  void* handle = nullptr;  // an instantiated cudaGraphExec_t, or the host backend's sequence
};

// What the host backend's links between ranks travel over: the runtime's network, one ordered
// pipe per pair of ranks.
class LinkPipe {
 public:
  virtual ~LinkPipe() = default;
  virtual void send(std::uint32_t to, std::vector<std::byte> bytes) = 0;
  // The next message from `from` (messages from one rank arrive in order), blocking; nothing
  // once the pipe is closed.
  virtual std::optional<std::vector<std::byte>> receive(std::uint32_t from) = 0;
};

// Device memory sent from one rank's device to another's without a stop in host memory (NCCL
// on CUDA). Sends and receives run on stream() in the order they are enqueued, each blocking
// it until its peer's matching operation meets it: a rank's k-th send to a peer meets the
// peer's k-th receive from it (no tags), so the ranks must enqueue them in one agreed order.
class DeviceLinks {
 public:
  virtual ~DeviceLinks() = default;
  virtual DeviceStream stream() const = 0;
  // `tag` names the message on both sides; the host backend checks that a receive gets the
  // message it names (a wrong order is an error there), NCCL does not carry it.
  virtual void send(const void* data, std::size_t bytes, std::uint32_t peer, std::uint64_t tag) = 0;
  virtual void receive(void* data, std::size_t bytes, std::uint32_t peer, std::uint64_t tag) = 0;
  // Device memory for one message, usable on stream `on` in its order (released likewise).
  virtual void* buffer(DeviceStream on, std::size_t bytes) = 0;
  virtual void release_buffer(DeviceStream on, void* p) = 0;
  // After an error: operations still waiting for a peer give up (no hang on the way out).
  virtual void abort() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const char* backend() const = 0;  // "cuda" or "host"
  // Physical devices; virtual GPUs (-ll:gpu N) share them round-robin.
  virtual int devices() const = 0;
  // Whether framebuffer memory is ordinary host memory (the host backend): fills and copies
  // may then touch it from CPU threads.
  virtual bool host_addressable() const = 0;
  // Zero-filled device memory, or null when the device has no room.
  virtual void* allocate(int device, std::size_t bytes) = 0;
  virtual void release(int device, void* p) = 0;
  // Zero-copy memory: zero-filled host memory that kernels of every device read and write
  // directly (pinned and mapped on CUDA), or null when there is no room.
  virtual void* allocate_host(std::size_t bytes) = 0;
  virtual void release_host(void* p) = 0;

  virtual DeviceStream create_stream(int device) = 0;
  virtual void destroy_stream(DeviceStream s) = 0;
  // Enqueued on s; each runs after everything enqueued on s before it.
  virtual void copy(DeviceStream s, const DeviceCopy& c) = 0;
  // A host function as a kernel (the host backend's kernels; on CUDA a host node).
  virtual void launch_host(DeviceStream s, std::function<void()> kernel) = 0;
  // fn(arg) on a backend thread once s reaches it (how completions reach the runtime).
  virtual void callback(DeviceStream s, void (*fn)(void*), void* arg) = 0;
  virtual DeviceEvent record(DeviceStream s) = 0;
  virtual bool query(DeviceEvent e) = 0;
  virtual void release_event(DeviceEvent e) = 0;
  // What is enqueued on s after this waits for e (no host round trip).
  virtual void wait(DeviceStream s, DeviceEvent e) = 0;
  // Blocks the caller until s has run everything enqueued on it.
  virtual void synchronize(DeviceStream s) = 0;

  // Graphs: what is enqueued on s between the two calls is captured, not run; the graph then
  // runs as one unit per launch.
  virtual void begin_capture(DeviceStream s) = 0;
  virtual DeviceGraph end_capture(DeviceStream s) = 0;
  virtual void launch_graph(DeviceStream s, DeviceGraph g) = 0;
  virtual void destroy_graph(DeviceGraph g) = 0;

  // Links between the ranks' devices (DeviceLinks), one device per rank. Whether this backend
  // has them here (e.g. an NCCL library loads; local, no collective); once every rank says
  // so, rank 0 makes the links' identity, every rank gets it and opens its end: collective
  // and blocking over the ranks. open_links throws an Error when they cannot be opened.
  virtual bool links_available() { return false; }
  virtual std::vector<std::byte> make_links_id() { return {}; }
  virtual std::unique_ptr<DeviceLinks> open_links(std::span<const std::byte> id, std::uint32_t rank,
                                                  std::uint32_t ranks, int device, LinkPipe& pipe) {
    (void)id, (void)rank, (void)ranks, (void)device, (void)pipe;
    return nullptr;
  }
};

}  // namespace reprise::detail
