#pragma once
// The region forest: field spaces, region trees and partitions. Written by the application
// thread (creation is immediate), read by the utility thread; entries never move, and an entry
// is published to other threads by the op queue. The slots of destroyed trees, regions and
// partitions are reused (SlotRecycler) once the utility thread can no longer read them; a
// handle carries its node's uid, so a handle of a destroyed node never names its successor.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reprise/types.h"
#include "reprise_rt/event.h"
#include "reprise_rt/slot_recycler.h"
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
  // A piece of a sparse partition: that partition (bounds is then the piece's bounding box).
  std::uint32_t sparse_partition = kInvalidId;
  // Application thread only: the handle's uid while the node lives (0 once retired), the
  // partitions made of it that still live, and why it was retired (for error messages).
  std::uint64_t uid = 0;
  std::vector<std::uint32_t> partitions;
  std::uint64_t retired_uid = 0;
  bool retired_with_partition = false;
};

// The pieces of a dependent partition, computed by an op in the stream (dependent_partitioning
// .cpp): the partition's node exists from the call on (handles, parent, colors); its pieces and
// subregions are made when the application first needs them (RegionForest::check_partition).
struct PendingPieces {
  virtual ~PendingPieces() = default;
  // Application thread: waits until the pieces are computed; throws what computing them threw.
  virtual void wait() const = 0;
  // Whether the computation is over (it reads this object until then).
  virtual bool finished() const = 0;
  // Per color (row-major): disjoint rectangles inside the parent; written by the computation.
  std::vector<std::vector<Domain>> pieces;
};

struct PartitionNode {
  std::uint32_t tree = kInvalidId;
  std::uint32_t parent_region = kInvalidId;
  Domain colors;
  // By row-major color index; shared with the requirements that name the partition whole
  // (ReqInfo::pieces: such a launch's rectangles then cost nothing per point).
  std::shared_ptr<const std::vector<Domain>> pieces;
  Domain hull;  // holds every piece
  const Domain& piece(std::size_t color) const { return (*pieces)[color]; }
  std::vector<std::uint32_t> children;  // region node per color
  bool disjoint = false;
  bool complete = false;
  // A sparse partition (pieces that are unions of rectangles): `pieces` holds the bounding
  // boxes, `runs` each color's disjoint rectangles, sorted, and `run_partitions` the dense
  // partitions a requirement on it expands into (run partition j's piece c is run j of color
  // c, empty where the color has fewer runs). Empty for a dense partition.
  std::shared_ptr<const std::vector<std::vector<Domain>>> runs;
  std::vector<std::uint32_t> run_partitions;
  bool sparse() const { return !run_partitions.empty(); }
  // Pieces still being computed: nothing above but tree, parent_region, colors and uid is set.
  std::shared_ptr<PendingPieces> pending;
  std::uint64_t uid = 0;  // application thread only; 0 once retired
  // Application thread only: the uid it had until retired, and when its region went with it.
  std::uint64_t retired_uid = 0;
  bool retired_with_region = false;
};

struct TreeInfo {
  std::uint32_t root = kInvalidId;
  std::uint32_t field_space = kInvalidId;
};

class RegionForest {
 public:
  // How the application thread waits for a retired slot's event before reusing it.
  void set_waiter(std::function<void(Event)> wait) { wait_ = std::move(wait); }

  IndexSpace create_index_space(const Domain& bounds);
  FieldSpace create_field_space(const std::vector<FieldDef>& fields);
  Region create_region(const IndexSpace& is, FieldSpace fs);
  // A partition of a sparse piece (a piece of a sparse partition) is sparse: its pieces hold
  // the piece's points only (its bounding boxes, hence complete(), are the piece's box's).
  // (into: a pending partition's node to fill in place, or kInvalidId for a new node.)
  Partition create_partition(Region parent, const Domain& colors, std::vector<Domain> pieces,
                             std::uint32_t into = kInvalidId);
  // A partition whose piece c is the union of runs[c] (rectangles, clipped to the parent; the
  // runs of one color must not overlap). `op` names the call in errors.
  Partition create_sparse_partition(Region parent, const Domain& colors,
                                    std::vector<std::vector<Domain>> runs, const char* op);
  // A partition whose pieces `pending` computes: made whole (dense or sparse, as
  // create_partition or create_sparse_partition would) when check_partition first sees it.
  Partition create_pending_partition(Region parent, const Domain& colors,
                                     std::shared_ptr<PendingPieces> pending);
  // The parts of region src inside each rectangle of `piece`, a piece of a sparse partition: a
  // partition of src whose color j is src ∩ rectangle j (application thread; made once per
  // (src, piece) and kept while both live). A copy into a sparse piece copies part j into
  // rectangle j.
  Partition cut_by_piece(Region src, std::uint32_t piece);
  // The sparse partition a region is a piece of (kInvalidId for a dense region).
  std::uint32_t sparse_partition_of(std::uint32_t region) const {
    return regions_[region].sparse_partition;
  }
  // A sparse piece's rectangles (sorted, disjoint).
  const std::vector<Domain>& rects_of_sparse(std::uint32_t region) const;
  // Destruction (application thread): handles of the tree or partition and of everything
  // below it are invalid at once; the slots are reused once `released` has triggered.
  void retire_tree(std::uint32_t tree, Event released);
  void retire_partition(std::uint32_t node, Event released);
  // Which forest this is (one per runtime, never the same twice in a process) and how many
  // trees and partitions it has destroyed: a launcher's requirements resolved against it stay
  // valid while both are unchanged (ResolvedLaunch).
  std::uint64_t serial() const { return serial_; }
  std::uint64_t retirements() const { return retirements_; }
  // Slots in the tables (live or waiting for reuse): bounded by what lives at once.
  struct Slots {
    std::size_t trees, regions, partitions, field_spaces;
  };
  Slots slots() const;

  const FieldSpaceInfo& field_space(std::uint32_t id) const { return field_spaces_[id]; }
  const RegionNode& region(std::uint32_t node) const { return regions_[node]; }
  const PartitionNode& partition(std::uint32_t node) const { return partitions_[node]; }
  const TreeInfo& tree(std::uint32_t id) const { return trees_[id]; }
  std::size_t num_trees() const { return trees_.size(); }
  Region region_handle(std::uint32_t node) const;
  Partition partition_handle(std::uint32_t node) const;

  // Checks (on the application thread) that a handle names a live region or partition.
  // "{0, 1}": the field ids of a field space (errors name regions by bounds and fields).
  std::string field_list(std::uint32_t field_space) const;
  // A pending partition is made whole here (waiting for its pieces): every use of a partition
  // handle on the application thread checks it first, so the utility thread never sees one.
  void check_region(const Region& r, const char* op) const;
  // (settle false: only checks; the partition may stay pending.)
  void check_partition(const Partition& p, const char* op, bool settle = true);

 private:
  Partition create_dense_partition(Region parent, const Domain& colors, std::vector<Domain> pieces,
                                   std::uint32_t into = kInvalidId);
  Partition create_sparse_partition(Region parent, const Domain& colors,
                                    std::vector<std::vector<Domain>> runs, const char* op,
                                    std::uint32_t into);
  void settle(std::uint32_t node);
  template <class T>
  std::uint32_t place(StableVector<T>& table, SlotRecycler& recycler, T value, const char* what);
  // Retire a region or partition node and everything below it.
  void retire_region(std::uint32_t node, Event released, bool with_partition);
  void retire_below(std::uint32_t node, Event released, bool with_partition);

  std::function<void(Event)> wait_;
  static std::uint64_t next_serial();
  std::uint64_t serial_ = next_serial();
  std::uint64_t retirements_ = 0;
  std::uint64_t next_uid_ = 1;
  std::uint32_t next_index_space_ = 0;
  StableVector<FieldSpaceInfo> field_spaces_;
  std::map<std::vector<std::pair<FieldID, std::size_t>>, std::uint32_t> field_space_ids_;
  StableVector<RegionNode> regions_;
  StableVector<PartitionNode> partitions_;
  StableVector<TreeInfo> trees_;
  SlotRecycler free_regions_, free_partitions_, free_trees_;
  // Pending partitions destroyed before their computation finished (it still reads them).
  std::vector<std::shared_ptr<PendingPieces>> unfinished_;
  // cut_by_piece: (src uid, piece uid) -> (partition node, its uid: a retired node's is 0).
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::uint32_t, std::uint64_t>> cuts_;
};

}  // namespace reprise::detail
