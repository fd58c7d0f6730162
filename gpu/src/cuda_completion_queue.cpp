#include "cuda_completion_queue.h"

#include <fmt/core.h>

#include "reprise/error.h"

namespace reprise::devices {

namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(e)));
}
// Queries of the oldest event before the thread sleeps in cudaEventSynchronize: short kernels
// complete within a few µs, and a wake-up from the driver costs more than that.
constexpr int kSpinQueries = 64;
}  // namespace

CudaCompletionQueue::CudaCompletionQueue(cudaStream_t stream, int device)
    : stream_(stream), device_(device), thread_([this] { run(); }) {}

CudaCompletionQueue::~CudaCompletionQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  for (cudaEvent_t e : free_events_) (void)cudaEventDestroy(e);
}

cudaEvent_t CudaCompletionQueue::take_event() {
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync),
        "cudaEventCreateWithFlags");
  return e;
}

void CudaCompletionQueue::add(Fn fn, void* arg) {
  bool was_empty;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const cudaEvent_t e = take_event();
    // (Recorded under the lock: events enter the queue in the stream's order.)
    check(cudaEventRecord(e, stream_), "cudaEventRecord");
    was_empty = pending_.empty();
    pending_.push_back(Pending{e, fn, arg});
  }
  if (was_empty) wake_.notify_one();  // else the thread is busy with an older one
}

void CudaCompletionQueue::take_events(std::size_t count, std::vector<cudaEvent_t>& out) {
  out.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t k = 0; k < count; ++k) out.push_back(take_event());
}

void CudaCompletionQueue::add_recorded(cudaEvent_t e, Fn fn, void* arg) {
  bool was_empty;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    was_empty = pending_.empty();
    pending_.push_back(Pending{e, fn, arg});
  }
  if (was_empty) wake_.notify_one();
}

void CudaCompletionQueue::run() {
  (void)cudaSetDevice(device_);
  std::vector<Pending> done;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and nothing is left
    const cudaEvent_t oldest = pending_.front().event;
    lock.unlock();
    cudaError_t r = cudaErrorNotReady;
    for (int i = 0; i < kSpinQueries && r == cudaErrorNotReady; ++i) r = cudaEventQuery(oldest);
    if (r == cudaErrorNotReady) r = cudaEventSynchronize(oldest);
    // (An error here is the stream's: it comes back from the next call on it as well.)
    done.clear();
    lock.lock();
    // The oldest and every later one that has completed too, in order.
    done.push_back(pending_.front());
    pending_.pop_front();
    while (!pending_.empty() && cudaEventQuery(pending_.front().event) == cudaSuccess) {
      done.push_back(pending_.front());
      pending_.pop_front();
    }
    for (const Pending& p : done) free_events_.push_back(p.event);
    lock.unlock();
    for (const Pending& p : done) p.fn(p.arg);
    lock.lock();
  }
}

}  // namespace reprise::devices
