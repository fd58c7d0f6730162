#pragma once
// What both shards of a copy between shards call it: (op number, point, name) as
// GeneratedCopy names it, and the shard that sends it (each source shard numbers its copies
// for a point from 0). Data messages are matched by it, and the device links issue copies in
// its order (reprise_rt/shard_links.h), so both ends must derive it alike: here, once.
#include <cstdint>
#include <functional>
#include <tuple>

#include "reprise_rt/instance.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

struct CopyName {
  std::uint64_t seq = 0;
  std::uint32_t point = 0, name = 0, from = 0;
  bool operator==(const CopyName&) const = default;
  bool operator<(const CopyName& o) const {
    return std::tie(seq, point, from, name) < std::tie(o.seq, o.point, o.from, o.name);
  }
};

struct CopyNameHash {
  std::size_t operator()(const CopyName& k) const {
    return std::hash<std::uint64_t>()(k.seq * 0x9E3779B97F4A7C15ull ^
                                      (std::uint64_t(k.point) << 32 | k.name) ^
                                      std::uint64_t(k.from) << 48);
  }
};

// The name of a generated copy between shards (on either of its shards).
inline CopyName copy_name(const Op& copy, const InstanceManager& im) {
  const GeneratedCopy& g = *copy.generated_copy();
  return CopyName{copy.seq, g.point, g.name, im.shard_of(copy.point_instances[0]->memory())};
}

}  // namespace reprise::detail
