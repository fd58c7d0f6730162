#pragma once
// The narrow device interface of DESIGN.md §9: what the runtime asks of a GPU backend.
// gpu/ implements it twice — on CUDA (the runtime API), and as the host device backend, which
// gives each stream its own in-order host thread and keeps framebuffer memory in host RAM —
// and reprise::start hands one to the runtime when -ll:gpu asks for GPUs. The runtime never
// includes a CUDA header: streams, events and graphs are opaque handles here.
#include <cstddef>
#include <cstdint>
#include <functional>

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
};

}  // namespace reprise::detail
