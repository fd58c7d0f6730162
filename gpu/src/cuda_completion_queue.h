#pragma once
// Completions of one CUDA stream without host functions: the enqueuing thread records an
// event after the work and queues (event, callback); a thread of ours waits for the oldest
// event — a bounded spin on cudaEventQuery, then cudaEventSynchronize on a blocking-sync event,
// which sleeps in the driver — and runs the callbacks in stream order, every one whose event
// has completed at once. On an H200 a host function costs ~15 µs of CUDA's single callback
// thread per completion (docs/gpu.md); this queue hands completions over in batches, and the
// callbacks may call the CUDA API (host functions may not).
#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace reprise::devices {

class CudaCompletionQueue {
 public:
  using Fn = void (*)(void*);
  CudaCompletionQueue(cudaStream_t stream, int device);
  ~CudaCompletionQueue();  // the stream must have been synchronised: runs what is left
  CudaCompletionQueue(const CudaCompletionQueue&) = delete;
  CudaCompletionQueue& operator=(const CudaCompletionQueue&) = delete;

  // fn(arg) once the stream has run everything enqueued on it so far.
  void add(Fn fn, void* arg);

  // Completions inside a graph (its event-record nodes): `count` events of this queue's kind
  // (blocking sync), for the caller to set on the nodes of the graph it launches next...
  void take_events(std::size_t count, std::vector<cudaEvent_t>& out);
  // ...and, once launched, fn(arg) when the stream has passed the node that records e (in
  // stream order with everything else added here). The event comes back to this queue.
  void add_recorded(cudaEvent_t e, Fn fn, void* arg);

 private:
  struct Pending {
    cudaEvent_t event;
    Fn fn;
    void* arg;
  };
  void run();
  cudaEvent_t take_event();  // under mutex_

  cudaStream_t stream_;
  int device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> free_events_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace reprise::devices
