#pragma once
// The region forest: index spaces, field spaces, region trees and partitions. Written by the
// application thread (creation is immediate), read by the utility thread and the workers;
// entries never move, and an entry is published to other threads by the op queue.
#include <cstdint>
#include <string>
#include <vector>

#include "reprise/types.h"
#include "reprise_rt/stable_vector.h"

namespace reprise::detail {

using FieldMask = std::uint64_t;
inline constexpr std::size_t kMaxFields = 64;

struct FieldSpaceInfo {
  std::vector<FieldDef> fields;  // bit i of a FieldMask is fields[i]
  int index_of(FieldID f) const {
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (fields[i].id == f) return int(i);
    return -1;
  }
};

struct RegionNode {
  std::uint32_t tree = kInvalidId;
  std::uint32_t parent_partition = kInvalidId;  // kInvalidId for a root
  Domain bounds;
  DomainPoint color;
};

struct PartitionNode {
  std::uint32_t tree = kInvalidId;
  std::uint32_t parent_region = kInvalidId;
  Domain colors;
  std::vector<Domain> pieces;           // by row-major color index
  std::vector<std::uint32_t> children;  // region node per color
  bool disjoint = false;
  bool complete = false;
  bool destroyed = false;  // read and written by the application thread only
};

struct TreeInfo {
  std::uint32_t root = kInvalidId;
  std::uint32_t field_space = kInvalidId;
  bool destroyed = false;  // read and written by the application thread only
};

class RegionForest {
 public:
  IndexSpace create_index_space(const Domain& bounds);
  FieldSpace create_field_space(const std::vector<FieldDef>& fields);
  Region create_region(const IndexSpace& is, FieldSpace fs);
  Partition create_partition(Region parent, const Domain& colors, std::vector<Domain> pieces);

  const FieldSpaceInfo& field_space(std::uint32_t id) const { return field_spaces_[id]; }
  const RegionNode& region(std::uint32_t node) const { return regions_[node]; }
  const PartitionNode& partition(std::uint32_t node) const { return partitions_[node]; }
  PartitionNode& partition(std::uint32_t node) { return partitions_[node]; }
  TreeInfo& tree(std::uint32_t id) { return trees_[id]; }
  const TreeInfo& tree(std::uint32_t id) const { return trees_[id]; }
  std::size_t num_trees() const { return trees_.size(); }
  Region region_handle(std::uint32_t node) const;
  Partition partition_handle(std::uint32_t node) const;

  // Checks (on the application thread) that a handle names a live region or partition.
  // "{0, 1}": the field ids of a field space (errors name regions by bounds and fields).
  std::string field_list(std::uint32_t field_space) const;
  void check_region(const Region& r, const char* op) const;
  void check_partition(const Partition& p, const char* op) const;

 private:
  StableVector<Domain> index_spaces_;
  StableVector<FieldSpaceInfo> field_spaces_;
  StableVector<RegionNode> regions_;
  StableVector<PartitionNode> partitions_;
  StableVector<TreeInfo> trees_;
};

}  // namespace reprise::detail
