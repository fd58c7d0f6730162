#include "reprise_rt/topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>

#include "reprise_rt/log.h"

namespace reprise::detail {

namespace {
// The topology, loaded once per process (hwloc's calls on a loaded topology are thread-safe
// for reading).
struct Topology {
  hwloc_topology_t topo = nullptr;
  int cores = 0;
  int nodes = 1;
  Topology() {
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
      topo = nullptr;
      return;
    }
    cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    nodes = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
  }
  ~Topology() {
    if (topo) hwloc_topology_destroy(topo);
  }
};
Topology& topology() {
  static Topology t;
  return t;
}
}  // namespace

void HostDeleter::operator()(std::byte* p) const noexcept {
  if (bound)
    hwloc_free(topology().topo, p, bytes);
  else
    std::free(p);
}

int machine_cores() {
  return topology().cores;
}

int bound_cores() {
  const Topology& t = topology();
  if (!t.topo) return 0;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  int cores = 0;
  if (set && hwloc_get_cpubind(t.topo, set, HWLOC_CPUBIND_PROCESS) == 0)
    cores = hwloc_get_nbobjs_inside_cpuset_by_type(t.topo, set, HWLOC_OBJ_CORE);
  hwloc_bitmap_free(set);
  return cores;
}

int numa_nodes() {
  return topology().nodes;
}

bool pin_current_thread(int core) {
  const Topology& t = topology();
  if (!t.topo || core < 0 || core >= t.cores) return false;
  hwloc_obj_t obj = hwloc_get_obj_by_type(t.topo, HWLOC_OBJ_CORE, unsigned(core));
  return obj && hwloc_set_cpubind(t.topo, obj->cpuset, HWLOC_CPUBIND_THREAD) == 0;
}

HostBytes host_allocate(std::size_t bytes, int node) {
  bytes = std::max<std::size_t>(bytes, 1);
  Topology& t = topology();
  if (node >= 0 && t.topo) {
    if (hwloc_obj_t obj = hwloc_get_obj_by_type(t.topo, HWLOC_OBJ_NUMANODE, unsigned(node))) {
      // (Memory from hwloc comes from mmap: zero-filled, lazily.)
      void* p = hwloc_alloc_membind(t.topo, bytes, obj->nodeset, HWLOC_MEMBIND_BIND,
                                    HWLOC_MEMBIND_BYNODESET);
      if (p) return HostBytes(static_cast<std::byte*>(p), HostDeleter{bytes, true});
    }
    REPRISE_LOG_DEBUG(LogCategory::Runtime, "could not bind {} bytes to NUMA node {}", bytes, node);
  }
  return HostBytes(static_cast<std::byte*>(std::calloc(bytes, 1)), HostDeleter{bytes, false});
}

int bound_node(const std::byte* p, std::size_t bytes) {
  Topology& t = topology();
  if (!t.topo) return -1;
  hwloc_nodeset_t set = hwloc_bitmap_alloc();
  hwloc_membind_policy_t policy;
  int node = -1;
  if (hwloc_get_area_membind(t.topo, p, bytes, set, &policy, HWLOC_MEMBIND_BYNODESET) == 0 &&
      policy == HWLOC_MEMBIND_BIND && hwloc_bitmap_weight(set) == 1)
    if (hwloc_obj_t obj =
            hwloc_get_numanode_obj_by_os_index(t.topo, unsigned(hwloc_bitmap_first(set))))
      node = int(obj->logical_index);
  hwloc_bitmap_free(set);
  return node;
}

}  // namespace reprise::detail
