// The CUDA backend of the device interface (DESIGN.md §9), on the CUDA runtime API: memory
// from cudaMalloc, non-blocking streams, cudaMemcpy3DAsync, host functions and completion
// callbacks as cudaLaunchHostFunc, events, cross-stream waits with cudaStreamWaitEvent, and
// graphs by stream capture. Compiled and linked in every build that finds CUDA; it has not
// run on a GPU yet (our machines have none: see docs/gpu.md).
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <memory>
#include <utility>

#include "reprise/error.h"
#include "reprise_gpu/devices.h"

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

void run_function(void* arg) {
  std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(arg));
  (*fn)();
}

struct Callback {
  void (*fn)(void*);
  void* arg;
};
void run_callback(void* arg) {
  std::unique_ptr<Callback> cb(static_cast<Callback*>(arg));
  cb->fn(cb->arg);
}

class CudaDevice final : public detail::Device {
 public:
  explicit CudaDevice(int devices) : devices_(devices) {}
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
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    return p;
  }
  void release(int device, void* p) override {
    if (!p) return;
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaFree(p), "cudaFree");
  }

  DeviceStream create_stream(int device) override {
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return DeviceStream{s, device};
  }
  void destroy_stream(DeviceStream s) override {
    check(cudaStreamSynchronize(raw(s)), "cudaStreamSynchronize");
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
    auto* fn = new std::function<void()>(std::move(kernel));  // owned by run_function
    check(cudaLaunchHostFunc(raw(s), &run_function, fn), "cudaLaunchHostFunc");
  }
  void callback(DeviceStream s, void (*fn)(void*), void* arg) override {
    auto* cb = new Callback{fn, arg};  // owned by run_callback
    check(cudaLaunchHostFunc(raw(s), &run_callback, cb), "cudaLaunchHostFunc");
  }
  DeviceEvent record(DeviceStream s) override {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
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
  void release_event(DeviceEvent e) override {
    if (e.handle) check(cudaEventDestroy(static_cast<cudaEvent_t>(e.handle)), "cudaEventDestroy");
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
    check(cudaStreamBeginCapture(raw(s), cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
  }
  DeviceGraph end_capture(DeviceStream s) override {
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(raw(s), &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    check(cudaGraphDestroy(graph), "cudaGraphDestroy");
    return DeviceGraph{exec};
  }
  void launch_graph(DeviceStream s, DeviceGraph g) override {
    if (g.handle)
      check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g.handle), raw(s)), "cudaGraphLaunch");
  }
  void destroy_graph(DeviceGraph g) override {
    if (g.handle)
      check(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g.handle)), "cudaGraphExecDestroy");
  }

 private:
  int devices_;
};

}  // namespace

std::unique_ptr<detail::Device> make_cuda_device() {
  const int n = device_count();
  return n > 0 ? std::make_unique<CudaDevice>(n) : nullptr;
}

}  // namespace reprise::devices
