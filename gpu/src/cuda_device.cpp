// The CUDA backend of the device interface (DESIGN.md §9), on the CUDA runtime API: memory
// from cudaMalloc, non-blocking streams, cudaMemcpy3DAsync, host functions and completion
// completions through a queue per stream (cuda_completion_queue.h; inside graphs through
// event-record nodes), events, cross-stream waits with cudaStreamWaitEvent, and graphs by
// stream capture. Compiled and linked in every build that finds CUDA; CI has no GPU: what ran
// on one is in docs/gpu.md.
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda_completion_queue.h"
#include "nccl_links.h"
#include "reprise/error.h"
#include "reprise_gpu/devices.h"
#include "reprise_rt/assert.h"

namespace reprise::devices {

namespace {

using detail::DeviceCopy;
using detail::DeviceEvent;
using detail::DeviceGraph;
using detail::DeviceStream;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(e)));
}

cudaStream_t raw(DeviceStream s) {
  return static_cast<cudaStream_t>(s.handle);
}

// Host functions enqueued outside a capture run once and free themselves; those captured
// into a graph run at every launch, so the graph owns them (CudaGraph) and they don't.
void run_function_once(void* arg) {
  std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(arg));
  (*fn)();
}
void run_function(void* arg) {
  (*static_cast<std::function<void()>*>(arg))();
}

// A completion callback inside a graph, with completion queues: an event-record node (its
// event replaced by a fresh one of the queue's before each launch, so that launches in flight
// never share one) and the callback the queue runs once the stream has passed it. A host node
// would cost a round trip to CUDA's single callback thread per callback.
struct GraphMark {
  cudaGraphNode_t node = nullptr;
  cudaEvent_t captured = nullptr;  // the event recorded at capture (a placeholder)
  void (*fn)(void*) = nullptr;
  void* arg = nullptr;
};

// An instantiated graph, the host functions its nodes call and its completion marks.
struct CudaGraph {
  cudaGraph_t graph = nullptr;  // kept: the marks' nodes belong to it
  cudaGraphExec_t exec = nullptr;
  std::vector<std::unique_ptr<std::function<void()>>> functions;
  std::vector<GraphMark> marks;        // in capture (stream) order
  cudaStream_t last_stream = nullptr;  // where it was last launched
};
void free_graph(void* arg) {
  std::unique_ptr<CudaGraph> g(static_cast<CudaGraph*>(arg));
}

// The capture this thread is making (cudaStreamCaptureModeThreadLocal: the thread that begins
// a capture enqueues everything captured, then ends it).
struct Capture {
  cudaStream_t stream = nullptr;
  std::unique_ptr<CudaGraph> graph;
};
thread_local Capture tl_capture;

class CudaDevice final : public detail::Device {
 public:
  ~CudaDevice() override {
    for (cudaEvent_t e : free_events_) (void)cudaEventDestroy(e);
    for (cudaStream_t s : fill_streams_)
      if (s) (void)cudaStreamDestroy(s);
  }
  explicit CudaDevice(int devices) : devices_(devices) {
    // Completions through host functions instead of the completion queues: for comparisons.
    const char* how = std::getenv("REPRISE_CUDA_COMPLETIONS");
    host_function_completions_ = how && std::strcmp(how, "host_functions") == 0;
  }
  const char* backend() const override { return "cuda"; }
  int devices() const override { return devices_; }
  bool host_addressable() const override { return false; }

  void* allocate(int device, std::size_t bytes) override {
    check(cudaSetDevice(device), "cudaSetDevice");
    void* p = nullptr;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
      (void)cudaGetLastError();  // out of memory is reported by the caller
      return nullptr;
    }
    // Zero-filled before anything uses it: cudaMemset would run on the legacy default stream,
    // which does not wait for our non-blocking streams nor they for it, so a copy into the
    // instance could run first and be wiped (a wrong result seen once on an H200, with NCCL's
    // kernels keeping the GPU busy). A stream of its own, waited for: nothing else runs there.
    const cudaStream_t s = fill_stream(device);
    check(cudaMemsetAsync(p, 0, bytes, s), "cudaMemsetAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return p;
  }
  void release(int device, void* p) override {
    if (!p) return;
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaFree(p), "cudaFree");
  }

  void* allocate_host(std::size_t bytes) override {
    // Portable and mapped: with unified addressing, kernels of every device use the host
    // pointer itself.
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable | cudaHostAllocMapped) !=
        cudaSuccess) {
      (void)cudaGetLastError();  // out of memory is reported by the caller
      return nullptr;
    }
    std::memset(p, 0, bytes);
    return p;
  }
  void release_host(void* p) override {
    if (p) check(cudaFreeHost(p), "cudaFreeHost");
  }

  DeviceStream create_stream(int device) override {
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    std::lock_guard<std::mutex> lock(streams_mutex_);
    streams_.emplace(
        s, host_function_completions_ ? nullptr : std::make_unique<CudaCompletionQueue>(s, device));
    return DeviceStream{s, device};
  }
  void destroy_stream(DeviceStream s) override {
    check(cudaStreamSynchronize(raw(s)), "cudaStreamSynchronize");
    std::unique_ptr<CudaCompletionQueue> queue;
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      auto it = streams_.find(raw(s));
      queue = std::move(it->second);
      streams_.erase(it);
    }
    queue.reset();  // (runs what is left: everything has completed)
    check(cudaStreamDestroy(raw(s)), "cudaStreamDestroy");
  }

  void copy(DeviceStream s, const DeviceCopy& c) override {
    // Rows of row_bytes, `height` per slice, `depth` slices; a slice's rows are contiguous in
    // pitch steps (the slice pitch is height * pitch for the 3-d copy).
    cudaMemcpy3DParms p{};
    p.srcPtr.ptr = const_cast<void*>(c.src);
    p.srcPtr.pitch = c.src_pitch ? c.src_pitch : c.row_bytes;
    p.srcPtr.xsize = c.row_bytes;
    p.srcPtr.ysize = c.src_slice && p.srcPtr.pitch ? c.src_slice / p.srcPtr.pitch : c.height;
    p.dstPtr.ptr = c.dst;
    p.dstPtr.pitch = c.dst_pitch ? c.dst_pitch : c.row_bytes;
    p.dstPtr.xsize = c.row_bytes;
    p.dstPtr.ysize = c.dst_slice && p.dstPtr.pitch ? c.dst_slice / p.dstPtr.pitch : c.height;
    p.extent.width = c.row_bytes;
    p.extent.height = c.height;
    p.extent.depth = c.depth;
    p.kind = cudaMemcpyDefault;  // unified addressing tells host from device
    check(cudaMemcpy3DAsync(&p, raw(s)), "cudaMemcpy3DAsync");
  }
  void launch_host(DeviceStream s, std::function<void()> kernel) override {
    auto fn = std::make_unique<std::function<void()>>(std::move(kernel));
    if (CudaGraph* g = capturing(s)) {
      check(cudaLaunchHostFunc(raw(s), &run_function, fn.get()), "cudaLaunchHostFunc");
      g->functions.push_back(std::move(fn));
      return;
    }
    check(cudaLaunchHostFunc(raw(s), &run_function_once, fn.get()), "cudaLaunchHostFunc");
    (void)fn.release();  // owned by run_function_once
  }
  void callback(DeviceStream s, void (*fn)(void*), void* arg) override {
    if (CudaCompletionQueue* queue = queue_of(s)) {
      CudaGraph* g = capturing(s);
      if (!g) return queue->add(fn, arg);
      // In a graph: an event-record node, turned into a queue entry at each launch.
      GraphMark m{nullptr, nullptr, fn, arg};
      check(cudaEventCreateWithFlags(&m.captured, cudaEventDisableTiming | cudaEventBlockingSync),
            "cudaEventCreateWithFlags");
      g->marks.push_back(m);
      check(cudaEventRecordWithFlags(m.captured, raw(s), cudaEventRecordExternal),
            "cudaEventRecordWithFlags");
      return;
    }
    // With REPRISE_CUDA_COMPLETIONS=host_functions: a host function (a host node in a graph).
    launch_host(s, [fn, arg] { fn(arg); });
  }
  DeviceEvent record(DeviceStream s) override {
    cudaEvent_t e = nullptr;
    {
      std::lock_guard<std::mutex> lock(events_mutex_);
      if (!free_events_.empty()) {
        e = free_events_.back();
        free_events_.pop_back();
      }
    }
    if (!e) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check(cudaEventRecord(e, raw(s)), "cudaEventRecord");
    return DeviceEvent{e, 0};
  }
  bool query(DeviceEvent e) override {
    if (!e.handle) return true;
    const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e.handle));
    if (r == cudaErrorNotReady) return false;
    check(r, "cudaEventQuery");
    return true;
  }
  // Back to a pool, without a CUDA call (this may run where the CUDA API may not be called):
  // a stream that waits for it keeps what it was recorded as, whatever is recorded later.
  void release_event(DeviceEvent e) override {
    if (!e.handle) return;
    std::lock_guard<std::mutex> lock(events_mutex_);
    free_events_.push_back(static_cast<cudaEvent_t>(e.handle));
  }
  void wait(DeviceStream s, DeviceEvent e) override {
    if (e.handle)
      check(cudaStreamWaitEvent(raw(s), static_cast<cudaEvent_t>(e.handle), 0),
            "cudaStreamWaitEvent");
  }
  void synchronize(DeviceStream s) override {
    check(cudaStreamSynchronize(raw(s)), "cudaStreamSynchronize");
  }

  void begin_capture(DeviceStream s) override {
    REPRISE_ASSERT(!tl_capture.graph, "a thread captures one stream at a time");
    check(cudaStreamBeginCapture(raw(s), cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
    tl_capture = Capture{raw(s), std::make_unique<CudaGraph>()};
  }
  DeviceGraph end_capture(DeviceStream s) override {
    REPRISE_ASSERT(capturing(s), "end_capture ends this thread's capture of that stream");
    std::unique_ptr<CudaGraph> owned = std::move(tl_capture.graph);
    tl_capture = Capture{};
    check(cudaStreamEndCapture(raw(s), &owned->graph), "cudaStreamEndCapture");
    find_mark_nodes(*owned);
    check(cudaGraphInstantiate(&owned->exec, owned->graph, 0), "cudaGraphInstantiate");
    return DeviceGraph{owned.release()};
  }
  void launch_graph(DeviceStream s, DeviceGraph g) override {
    if (!g.handle) return;
    auto* graph = static_cast<CudaGraph*>(g.handle);
    graph->last_stream = raw(s);
    CudaCompletionQueue* queue = graph->marks.empty() ? nullptr : queue_of(s);
    if (!queue) {
      check(cudaGraphLaunch(graph->exec, raw(s)), "cudaGraphLaunch");
      return;
    }
    // Fresh events on the marks' nodes (only future launches see them), then the queue entries
    // in the marks' order. (A group's launches come from its GPU processor's thread alone.)
    thread_local std::vector<cudaEvent_t> events;
    queue->take_events(graph->marks.size(), events);
    for (std::size_t k = 0; k < events.size(); ++k)
      check(cudaGraphExecEventRecordNodeSetEvent(graph->exec, graph->marks[k].node, events[k]),
            "cudaGraphExecEventRecordNodeSetEvent");
    check(cudaGraphLaunch(graph->exec, raw(s)), "cudaGraphLaunch");
    for (std::size_t k = 0; k < events.size(); ++k)
      queue->add_recorded(events[k], graph->marks[k].fn, graph->marks[k].arg);
  }
  void destroy_graph(DeviceGraph g) override {
    if (!g.handle) return;
    std::unique_ptr<CudaGraph> graph(static_cast<CudaGraph*>(g.handle));
    // A launch still in flight finishes (CUDA frees the executable graph after it); the host
    // functions its nodes call go once the stream it last ran on has passed it.
    // (Here, not in free_graph: a host function must not call CUDA. In-flight launches record
    // the events set on them, not the placeholders.)
    check(cudaGraphExecDestroy(graph->exec), "cudaGraphExecDestroy");
    check(cudaGraphDestroy(graph->graph), "cudaGraphDestroy");
    for (const GraphMark& m : graph->marks) check(cudaEventDestroy(m.captured), "cudaEventDestroy");
    std::lock_guard<std::mutex> lock(streams_mutex_);
    if (graph->last_stream && streams_.count(graph->last_stream)) {
      check(cudaLaunchHostFunc(graph->last_stream, &free_graph, graph.get()), "cudaLaunchHostFunc");
      (void)graph.release();  // owned by free_graph
    }
  }

  // Links between ranks over NCCL, when a library loads (nccl_links.h).
  bool links_available() override { return nccl_loads(); }
  std::vector<std::byte> make_links_id() override { return make_nccl_id(); }
  std::unique_ptr<detail::DeviceLinks> open_links(std::span<const std::byte> id, std::uint32_t rank,
                                                  std::uint32_t ranks, int device,
                                                  detail::LinkPipe&) override {
    return open_nccl_links(*this, device, id, rank, ranks);
  }

 private:
  // The stream that zero-fills new allocations on a device (made on first use).
  cudaStream_t fill_stream(int device) {
    std::lock_guard<std::mutex> lock(fill_mutex_);
    if (fill_streams_.size() <= std::size_t(device)) fill_streams_.resize(std::size_t(device) + 1);
    cudaStream_t& s = fill_streams_[std::size_t(device)];
    if (!s)
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s;
  }
  // The stream's completion queue (none with REPRISE_CUDA_COMPLETIONS=host_functions).
  CudaCompletionQueue* queue_of(DeviceStream s) {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    return streams_.at(raw(s)).get();
  }
  // Each mark's event-record node in the captured graph (matched by the event it records).
  static void find_mark_nodes(CudaGraph& g) {
    if (g.marks.empty()) return;
    std::size_t count = 0;
    check(cudaGraphGetNodes(g.graph, nullptr, &count), "cudaGraphGetNodes");
    std::vector<cudaGraphNode_t> nodes(count);
    check(cudaGraphGetNodes(g.graph, nodes.data(), &count), "cudaGraphGetNodes");
    for (cudaGraphNode_t n : nodes) {
      cudaGraphNodeType type;
      check(cudaGraphNodeGetType(n, &type), "cudaGraphNodeGetType");
      if (type != cudaGraphNodeTypeEventRecord) continue;
      cudaEvent_t e = nullptr;
      check(cudaGraphEventRecordNodeGetEvent(n, &e), "cudaGraphEventRecordNodeGetEvent");
      for (GraphMark& m : g.marks)
        if (m.captured == e) m.node = n;
    }
    for (const GraphMark& m : g.marks)
      if (!m.node) throw Error("CUDA: a completion mark of a captured graph has no node");
  }
  static CudaGraph* capturing(DeviceStream s) {
    return tl_capture.graph && tl_capture.stream == raw(s) ? tl_capture.graph.get() : nullptr;
  }

  int devices_;
  bool host_function_completions_ = false;
  // The live streams (destroy_graph's deferred frees need one) and their completion queues
  // (none with REPRISE_CUDA_COMPLETIONS=host_functions).
  std::mutex streams_mutex_;
  std::unordered_map<cudaStream_t, std::unique_ptr<CudaCompletionQueue>> streams_;
  std::mutex events_mutex_;
  std::vector<cudaEvent_t> free_events_;  // released by release_event, recorded again
  std::mutex fill_mutex_;
  std::vector<cudaStream_t> fill_streams_;  // by device
};

}  // namespace

std::unique_ptr<detail::Device> make_cuda_device() {
  const int n = device_count();
  return n > 0 ? std::make_unique<CudaDevice>(n) : nullptr;
}

}  // namespace reprise::devices
