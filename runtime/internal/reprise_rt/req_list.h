#pragma once
// An op's requirements: a list that ops launched again by one launcher share, copy-on-write.
// A launcher launched again hands every op the same resolved requirements (ResolvedLaunch);
// copying them — ~300 bytes each, a projection, field lists and a shared list of pieces — was a
// third of what the application thread spent per launch, and destroying them a tenth of what
// a worker spends per op. Copying a ReqList takes a reference; reading is a const vector's
// reading; every change goes through a method that makes the list the caller's own first, and
// the setters of what the analysis recomputes (pieces, bbox) write only what differs, so that
// a list the analysis finds already right stays shared.
// Counted in two parts: the references the runtime's own objects hold (share_inside: ops, the
// analysis' memo) change like an op's own count (reprise_rt/alone.h: without a locked
// instruction where the runtime runs alone), and together hold one of the block's outer
// references — the ones launchers' resolutions hold, which the program may copy and drop on
// any thread, and which stay atomic.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "reprise/types.h"
#include "reprise_rt/alone.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/inline_vector.h"
#include "reprise_rt/pool.h"

namespace reprise::detail {

// A requirement's fields: by id (as the launcher named them) and by position in the field space.
using FieldIdList = InlineVector<FieldID, 4>;
using FieldIndexList = InlineVector<int, 4>;

struct ReqInfo {
  std::uint32_t tree = kInvalidId;
  std::uint32_t region = kInvalidId;     // region node (the partition's parent for partitions)
  std::uint32_t partition = kInvalidId;  // partition node, or kInvalidId
  // The uid of the node named (the partition, else the region): slots are reused after
  // destruction, uids never (tokens, caches and comparisons of requirements use it).
  std::uint64_t uid = 0;
  // A partition named by identity over its whole color space: point c uses piece c.
  bool whole_partition = false;
  Projection projection = Projection::identity();
  Privilege privilege = Privilege::ReadOnly;
  ReductionOp redop = ReductionOp::None;
  FieldMask mask = 0;
  FieldIdList fields;            // as named by the launcher (accessor lookups)
  FieldIndexList field_indices;  // positions in the field space
  Domain bbox;                   // bounding box of every point's rect
  // whole_partition, once analysed: point c's rectangle is piece c (the partition's own list;
  // Op::point_rects holds nothing for this requirement). Null otherwise.
  std::shared_ptr<const std::vector<Domain>> pieces;
  bool writes() const {
    return privilege == Privilege::ReadWrite || privilege == Privilege::WriteDiscard;
  }
};

class ReqList {
 public:
  using Pieces = std::shared_ptr<const std::vector<Domain>>;

  ReqList() = default;
  // (A copy holds an outer reference, whatever the original holds.)
  ReqList(const ReqList& o) noexcept : block_(o.block_) {
    if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  ReqList(ReqList&& o) noexcept
      : block_(std::exchange(o.block_, nullptr)), inside_(std::exchange(o.inside_, false)) {}
  ReqList& operator=(ReqList o) noexcept {
    std::swap(block_, o.block_);
    std::swap(inside_, o.inside_);
    return *this;
  }
  ~ReqList() { drop(); }
  // Shares o's requirements as one of the runtime's own objects (an op, a memo), never one the
  // program can reach: counted apart (above).
  void share_inside(const ReqList& o) noexcept {
    if (o.block_ == block_ && inside_) return;
    Block* b = o.block_;
    if (b && shared_add(b->inside, 1, std::memory_order_relaxed) == 0)
      b->refs.fetch_add(1, std::memory_order_relaxed);  // (the inside references' one)
    drop();
    block_ = b;
    inside_ = b != nullptr;
  }

  std::size_t size() const { return block_ ? block_->size : 0; }
  bool empty() const { return size() == 0; }
  const ReqInfo* begin() const { return block_ ? block_->items() : nullptr; }
  const ReqInfo* end() const { return begin() + size(); }
  const ReqInfo& operator[](std::size_t i) const { return block_->items()[i]; }
  const ReqInfo& back() const { return (*this)[size() - 1]; }
  // Whether another list holds these requirements too (then a change copies them first).
  bool shared() const {
    return block_ && (block_->refs.load(std::memory_order_acquire) != 1 ||
                      block_->inside.load(std::memory_order_acquire) > 1);
  }
  // Which requirements these are: lists that share them have the same identity, and while a
  // list holds them they never change (a change copies them first).
  const void* identity() const { return block_; }

  // Changes. A reference from edit/emplace_back is good until the next change.
  ReqInfo& edit(std::size_t i) {
    own(size());
    return block_->items()[i];
  }
  ReqInfo& emplace_back() {
    own(size() + 1);
    ReqInfo* q = ::new (block_->items() + block_->size) ReqInfo();
    ++block_->size;
    return *q;
  }
  void push_back(ReqInfo q) { emplace_back() = std::move(q); }
  void pop_back() {
    own(size());
    block_->items()[--block_->size].~ReqInfo();
  }
  void reserve(std::size_t n) { own(std::max(n, size())); }
  void clear() {
    drop();
    block_ = nullptr;
    inside_ = false;
  }
  void set_pieces(std::size_t i, const Pieces& p) {
    if ((*this)[i].pieces != p) edit(i).pieces = p;
  }
  void set_bbox(std::size_t i, const Domain& d) {
    if (!((*this)[i].bbox == d)) edit(i).bbox = d;
  }

 private:
  // The requirements and their count, one allocation (its ReqInfos follow it).
  struct alignas(alignof(ReqInfo)) Block {
    std::atomic<std::int32_t> refs{1};    // outer references, and one for all inside ones
    std::atomic<std::int32_t> inside{0};  // share_inside's references
    std::uint32_t size = 0;
    std::uint32_t capacity = 0;
    ReqInfo* items() { return reinterpret_cast<ReqInfo*>(this + 1); }
  };

  static Block* allocate(std::size_t capacity) {
    void* mem = pool_malloc(sizeof(Block) + capacity * sizeof(ReqInfo));
    if (!mem) throw std::bad_alloc();
    Block* b = ::new (mem) Block();
    b->capacity = std::uint32_t(capacity);
    return b;
  }
  static void release(Block* b) noexcept {
    if (!b || b->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    for (std::uint32_t i = 0; i < b->size; ++i) b->items()[i].~ReqInfo();
    b->~Block();
    pool_free(b);
  }
  // Lets go of this list's reference (the last inside one gives up their outer one).
  void drop() noexcept {
    if (inside_ && shared_sub(block_->inside, 1, std::memory_order_acq_rel) != 1) return;
    release(block_);
  }
  // Makes the list this one's alone with room for `capacity` requirements (copied when
  // shared, moved when it only grows).
  void own(std::size_t capacity) {
    const bool alone = block_ && !shared();
    if (alone && block_->capacity >= capacity) return;
    Block* b = allocate(std::max<std::size_t>({capacity, 2 * size(), 2}));
    try {
      for (std::uint32_t i = 0; i < size(); ++i) {
        ReqInfo& from = block_->items()[i];
        if (alone)
          ::new (b->items() + i) ReqInfo(std::move(from));
        else
          ::new (b->items() + i) ReqInfo(from);
        ++b->size;
      }
    } catch (...) {
      release(b);
      throw;
    }
    drop();  // (the new block is held as an outer reference)
    block_ = b;
    inside_ = false;
  }

  Block* block_ = nullptr;
  bool inside_ = false;  // holds an inside reference (share_inside)
};

}  // namespace reprise::detail
