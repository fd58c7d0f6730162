#pragma once
// The machine as hwloc sees it, loaded once per process: its cores (CPU workers are pinned to
// them) and NUMA nodes, and host memory for instances bound to a NUMA node where that is
// asked for (the system memories of -ll:numa on a machine with several NUMA nodes),
// zero-filled either way: pages come lazily from the OS, so untouched data costs nothing.
#include <cstddef>
#include <memory>

namespace reprise::detail {

// Frees what host_allocate returned (bytes and binding remembered).
struct HostDeleter {
  std::size_t bytes = 0;
  bool bound = false;
  void operator()(std::byte* p) const noexcept;
};
using HostBytes = std::unique_ptr<std::byte, HostDeleter>;

// The machine's cores (0 if hwloc cannot load the topology) and NUMA nodes (at least 1).
int machine_cores();
// The cores this process may run on (its CPU binding: mpirun binds each of 2 ranks to one
// core by default), 0 if unknown.
int bound_cores();
int numa_nodes();
// Binds the calling thread to core `core`; false if it could not.
bool pin_current_thread(int core);
// `bytes` zero-filled bytes (at least one); node >= 0: bound to that NUMA node (falls back to
// an unbound allocation, with a debug log line, if the binding fails). Null if out of memory.
HostBytes host_allocate(std::size_t bytes, int node);
// Where the pages of [p, p + bytes) are bound: the NUMA node, or -1 (unbound, or several).
int bound_node(const std::byte* p, std::size_t bytes);

}  // namespace reprise::detail
