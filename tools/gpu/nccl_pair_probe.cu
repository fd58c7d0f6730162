// Preflight for the NCCL path of control replication on a machine with one GPU: two MPI ranks
// share the GPU and pretend to be on different hosts (NCCL_HOSTID per rank, set by the
// caller), exchange device buffers in both directions in one agreed order, and check them.
// Prints "nccl_pair_probe ok" on rank 0 when every byte arrived. Not part of the runtime.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                              \
  do {                                                             \
    cudaError_t e = (x);                                           \
    if (e != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); \
      MPI_Abort(MPI_COMM_WORLD, 2);                                \
    }                                                              \
  } while (0)
#define CHECK_NCCL(x)                                                                              \
  do {                                                                                             \
    ncclResult_t r = (x);                                                                          \
    if (r != ncclSuccess) {                                                                        \
      std::fprintf(stderr, "%s: %s (%s)\n", #x, ncclGetErrorString(r), ncclGetLastError(nullptr)); \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                                \
    }                                                                                              \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK_CUDA(cudaSetDevice(0));
  ncclUniqueId id;
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, ranks, id, rank));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int peer = (rank + 1) % ranks, from = (rank + ranks - 1) % ranks;
  const std::size_t n = std::size_t(1) << 20;
  int bad = 0;
  for (int round = 0; round < 8; ++round) {
    std::vector<int> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = int(i) * 7 + rank * 1000 + round;
    int *out = nullptr, *in = nullptr;
    CHECK_CUDA(cudaMalloc(&out, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&in, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(out, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    // One global order: the operation of the lower rank's message first (sends and receives
    // not grouped, as the runtime posts them one by one).
    for (int k = 0; k < ranks; ++k) {
      if (k == rank) CHECK_NCCL(ncclSend(out, n, ncclInt, peer, comm, s));
      if ((k + 1) % ranks == rank) CHECK_NCCL(ncclRecv(in, n, ncclInt, from, comm, s));
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(host.data(), in, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i)
      if (host[i] != int(i) * 7 + from * 1000 + round) ++bad;
    cudaFree(out);
    cudaFree(in);
  }
  int all = 0;
  MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(all ? "nccl_pair_probe FAILED (%d wrong)\n" : "nccl_pair_probe ok\n", all);
  ncclCommDestroy(comm);
  MPI_Finalize();
  return all ? 1 : 0;
}
