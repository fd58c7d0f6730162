// NCCL behind DeviceLinks. One communicator over all ranks; every send and receive is enqueued
// on the links' stream (created by the CUDA backend, so completions reach the runtime through
// its completion queue). Buffers come from CUDA's stream-ordered allocator (a pool of the
// links' own): cudaMalloc and cudaFree may wait for the whole device, which a receive blocked
// on its peer would never let finish.
#include "nccl_links.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/core.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "reprise/error.h"

namespace reprise::devices {

namespace {

using detail::DeviceStream;

// The NCCL entry points the links use, from the library loaded at run time.
struct Nccl {
  void* library = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  const char* (*last_error)(ncclComm_t) = nullptr;
  std::string why;  // when it did not load
};

template <class Fn>
bool bind(void* library, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  return fn != nullptr;
}

const Nccl& nccl() {
  static const Nccl loaded = [] {
    Nccl n;
    const char* path = std::getenv("REPRISE_NCCL_LIBRARY");
    n.library = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!n.library) {
      const char* e = dlerror();
      n.why = e ? e : "dlopen failed";
      return n;
    }
    const bool all = bind(n.library, "ncclGetUniqueId", n.get_unique_id) &&
                     bind(n.library, "ncclCommInitRank", n.comm_init_rank) &&
                     bind(n.library, "ncclCommDestroy", n.comm_destroy) &&
                     bind(n.library, "ncclCommAbort", n.comm_abort) &&
                     bind(n.library, "ncclSend", n.send) && bind(n.library, "ncclRecv", n.recv) &&
                     bind(n.library, "ncclGetErrorString", n.error_string) &&
                     bind(n.library, "ncclGetLastError", n.last_error);
    if (!all) {
      n.why = "the library lacks an NCCL entry point";
      n.library = nullptr;
    }
    return n;
  }();
  return loaded;
}

void check(const Nccl& n, ncclComm_t comm, ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw Error(fmt::format("NCCL: {} failed: {} ({})", what, n.error_string(r),
                            n.last_error ? n.last_error(comm) : ""));
}
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(e)));
}

class NcclLinks final : public detail::DeviceLinks {
 public:
  NcclLinks(detail::Device& device, int device_index, ncclComm_t comm)
      : device_(device),
        device_index_(device_index),
        comm_(comm),
        stream_(device.create_stream(device_index)) {
    // A pool of the links' own, which reuses a block freed on one stream for another only
    // where the program ordered them: by default CUDA may make an allocating stream wait for
    // the stream that freed the block, and a copy stream that waited for the links' stream
    // (a receive blocked on its peer) would stall the pack the peer is waiting for.
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device_index;
    check_cuda(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
    int no = 0;
    check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowOpportunistic, &no),
               "cudaMemPoolSetAttribute");
    check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &no),
               "cudaMemPoolSetAttribute");
  }
  ~NcclLinks() override {
    {
      std::lock_guard<std::mutex> g(mutex_);
      if (comm_) (void)nccl().comm_destroy(comm_);  // (after abort(): gone already)
      comm_ = nullptr;
    }
    device_.destroy_stream(stream_);
    (void)cudaMemPoolDestroy(pool_);  // (every buffer has been freed in stream order)
  }
  DeviceStream stream() const override { return stream_; }
  void send(const void* data, std::size_t bytes, std::uint32_t peer, std::uint64_t) override {
    std::lock_guard<std::mutex> g(mutex_);  // (a communicator is used by one thread at a time)
    if (!comm_) return;
    check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
    check(nccl(), comm_, nccl().send(data, bytes, ncclChar, int(peer), comm_, raw()), "ncclSend");
  }
  void receive(void* data, std::size_t bytes, std::uint32_t peer, std::uint64_t) override {
    std::lock_guard<std::mutex> g(mutex_);
    if (!comm_) return;
    check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
    check(nccl(), comm_, nccl().recv(data, bytes, ncclChar, int(peer), comm_, raw()), "ncclRecv");
  }
  void* buffer(DeviceStream on, std::size_t bytes) override {
    check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
    void* p = nullptr;
    check_cuda(
        cudaMallocFromPoolAsync(&p, bytes ? bytes : 1, pool_, static_cast<cudaStream_t>(on.handle)),
        "cudaMallocFromPoolAsync (a buffer of the device links)");
    return p;
  }
  void release_buffer(DeviceStream on, void* p) override {
    if (!p) return;
    check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
    check_cuda(cudaFreeAsync(p, static_cast<cudaStream_t>(on.handle)), "cudaFreeAsync");
  }
  void abort() override {
    std::lock_guard<std::mutex> g(mutex_);
    if (comm_) (void)nccl().comm_abort(comm_);  // ends the operations still waiting for a peer
    comm_ = nullptr;
  }

 private:
  cudaStream_t raw() const { return static_cast<cudaStream_t>(stream_.handle); }
  detail::Device& device_;
  int device_index_;
  std::mutex mutex_;
  ncclComm_t comm_;
  DeviceStream stream_;
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace

bool nccl_loads() {
  return nccl().library != nullptr;
}

std::vector<std::byte> make_nccl_id() {
  const Nccl& n = nccl();
  if (!n.library) return {};
  ncclUniqueId id;
  check(n, nullptr, n.get_unique_id(&id), "ncclGetUniqueId");
  std::vector<std::byte> bytes(sizeof id);
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

std::unique_ptr<detail::DeviceLinks> open_nccl_links(detail::Device& device, int device_index,
                                                     std::span<const std::byte> id,
                                                     std::uint32_t rank, std::uint32_t ranks) {
  const Nccl& n = nccl();
  if (!n.library)
    throw Error(fmt::format("NCCL: rank 0 loaded NCCL, this rank could not: {}", n.why));
  if (id.size() != sizeof(ncclUniqueId))
    throw Error(fmt::format("NCCL: the communicator's id has {} bytes, not {}", id.size(),
                            sizeof(ncclUniqueId)));
  ncclUniqueId uid;
  std::memcpy(&uid, id.data(), sizeof uid);
  check_cuda(cudaSetDevice(device_index), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  check(n, nullptr, n.comm_init_rank(&comm, int(ranks), uid, int(rank)), "ncclCommInitRank");
  return std::make_unique<NcclLinks>(device, device_index, comm);
}

}  // namespace reprise::devices
