#pragma once
// Inline mappings (Legion's map_region / unmap_region): the application thread reads or writes
// a region's data in place, between the ops issued before the mapping (which it waits for)
// and those issued after (which wait for the unmapping when they conflict with it):
//   PhysicalRegion pr = ctx.map_region(region, Privilege::ReadWrite, {FID_X});
//   auto x = pr.accessor<double, 1>(FID_X);
//   for (auto p : Rect<1>(region.bounds())) x[p] = 0.0;
//   ctx.unmap_region(pr);  // (or let the last copy of pr go: it unmaps)
// Not inside a trace, not from a task. Under control replication every shard maps the region
// into its own memory and sees the same values; after a writing mapping the region holds
// shard 0's writes (see Context::map_region).
#include <cstddef>
#include <memory>
#include <type_traits>

#include "reprise/accessor.h"
#include "reprise/types.h"

namespace reprise {

namespace detail {
struct InlineMapping;
struct InlineMapTask;
}  // namespace detail

class PhysicalRegion {
 public:
  PhysicalRegion() = default;
  // A typed view of a mapped field (const T for a read-only mapping); valid until unmapped.
  template <typename T, int N>
  Accessor<T, N> accessor(FieldID fid) const {
    return Accessor<T, N>(raw(fid, sizeof(std::remove_const_t<T>), std::is_const_v<T>, N));
  }
  bool is_mapped() const;
  Region region() const;

 private:
  friend class Context;
  friend struct detail::InlineMapTask;
  detail::RawAccess raw(FieldID fid, std::size_t elem_size, bool read_only, int dim) const;
  std::shared_ptr<detail::InlineMapping> m_;
};

}  // namespace reprise
