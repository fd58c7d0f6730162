#pragma once
// Identifiers, handles, privileges, reduction operators and projections.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "reprise/geometry.h"

namespace reprise {

using TaskID = std::uint32_t;
using FieldID = std::uint32_t;
using TraceID = std::uint32_t;

inline constexpr std::uint32_t kInvalidId = 0xffffffffu;

// Index space: a dense rectangle of points. A value (the runtime keeps no table of them):
// there is nothing to destroy.
struct IndexSpace {
  std::uint32_t id = kInvalidId;
  Domain domain;  // cached bounds
  const Domain& bounds() const { return domain; }
  bool valid() const { return id != kInvalidId; }
  friend bool operator==(const IndexSpace& a, const IndexSpace& b) { return a.id == b.id; }
};

// Field space: a set of typed fields (id, size in bytes); at most 64 fields. The runtime
// keeps one per distinct list of fields (creating the same list again gives the same field
// space), so a program that creates them in a loop does not grow: nothing to destroy.
struct FieldSpace {
  std::uint32_t id = kInvalidId;
  bool valid() const { return id != kInvalidId; }
  friend bool operator==(const FieldSpace& a, const FieldSpace& b) { return a.id == b.id; }
};

struct FieldDef {
  FieldID id;
  std::size_t size;
};

class Partition;

// A logical region: the root of a region tree or a subregion of a partition.
class Region {
 public:
  Region() = default;
  // (Made by the runtime: node slots are reused after destruction, and uid tells a handle of
  // a destroyed region from one of the region that took its slot.)
  Region(std::uint32_t tree, std::uint32_t node, std::uint64_t uid, const Domain& bounds,
         FieldSpace fs)
      : tree_(tree), node_(node), uid_(uid), bounds_(bounds), fs_(fs) {}
  std::uint32_t tree() const { return tree_; }
  std::uint32_t node() const { return node_; }
  std::uint64_t uid() const { return uid_; }
  const Domain& bounds() const { return bounds_; }
  FieldSpace field_space() const { return fs_; }
  bool valid() const { return node_ != kInvalidId; }
  friend bool operator==(const Region& a, const Region& b) { return a.uid_ == b.uid_; }

 private:
  std::uint32_t tree_ = kInvalidId, node_ = kInvalidId;
  std::uint64_t uid_ = 0;
  Domain bounds_;
  FieldSpace fs_;
};

// A coloring of a region into subregions (pieces), one per color of its color space.
class Partition {
 public:
  Partition() = default;
  // (pending: a dependent partition whose pieces an op in the stream is still computing; its
  // disjointness and completeness are asked of the runtime, which waits for them.)
  Partition(std::uint32_t tree, std::uint32_t node, std::uint64_t uid, const Domain& colors,
            bool disjoint, bool complete, bool pending = false)
      : tree_(tree),
        node_(node),
        uid_(uid),
        colors_(colors),
        disjoint_(disjoint),
        complete_(complete),
        pending_(pending) {}
  std::uint32_t tree() const { return tree_; }
  std::uint32_t node() const { return node_; }
  std::uint64_t uid() const { return uid_; }
  const Domain& color_space() const { return colors_; }
  bool disjoint() const { return pending_ ? settled_flag(true) : disjoint_; }
  bool complete() const { return pending_ ? settled_flag(false) : complete_; }
  bool valid() const { return node_ != kInvalidId; }
  // Bounds of the piece of color c; a subregion handle for it.
  Domain rect(const DomainPoint& c) const;
  Region operator[](const DomainPoint& c) const;
  Region parent() const;
  friend bool operator==(const Partition& a, const Partition& b) { return a.uid_ == b.uid_; }

 private:
  std::uint32_t tree_ = kInvalidId, node_ = kInvalidId;
  bool settled_flag(bool disjoint) const;
  std::uint64_t uid_ = 0;
  Domain colors_;
  bool disjoint_ = false, complete_ = false, pending_ = false;
};

enum class Privilege : std::uint8_t { ReadOnly, ReadWrite, WriteDiscard, Reduce };
enum class ReductionOp : std::uint8_t { None, Sum, Prod, Min, Max };

std::string_view to_string(Privilege p);
std::string_view to_string(ReductionOp op);

// Maps a point of the launch domain to a color of the partition.
// identity: color = p; constant: color = c; affine: color = M·p + b (M is dim_out × dim_in).
class Projection {
 public:
  enum class Kind : std::uint8_t { Identity, Constant, Affine };
  static Projection identity() { return Projection(Kind::Identity); }
  static Projection constant(const DomainPoint& c);
  static Projection translate(const DomainPoint& offset);
  // rows: dim_out rows of dim_in coefficients each.
  static Projection affine(int dim_out, int dim_in,
                           const std::array<std::array<coord_t, kMaxDim>, kMaxDim>& m,
                           const DomainPoint& offset);

  Kind kind() const { return kind_; }
  DomainPoint apply(const DomainPoint& p) const;
  // The bounding box of the image of a launch domain (exact for these maps).
  Domain image(const Domain& launch) const;
  bool injective_on(const Domain& launch) const;
  bool operator==(const Projection& o) const;
  std::uint64_t hash() const;

 private:
  explicit Projection(Kind k) : kind_(k) {}
  Kind kind_;
  int dim_out_ = 0, dim_in_ = 0;
  std::array<std::array<coord_t, kMaxDim>, kMaxDim> m_{};
  DomainPoint offset_;
};

enum class ProcessorKind : std::uint8_t { CPU, GPU, Utility };

struct Processor {
  ProcessorKind kind = ProcessorKind::CPU;
  std::uint32_t index = 0;  // within its shard
  std::uint32_t shard = 0;  // control replication: the rank that runs it
  friend bool operator==(const Processor&, const Processor&) = default;
};

// One op's points in the -lg:coverage_log record: launched from a replayed trace or analysed.
struct CoverageSample {
  std::uint64_t op_seq = 0;
  std::uint64_t points = 0;
  bool replayed = false;
};

}  // namespace reprise
