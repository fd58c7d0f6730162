#pragma once
// A small cuNumeric-like array library on Reprise's public API: 1-d and 2-d float64 arrays,
// each a region tiled into row blocks over the processors; numpy-style slicing (a view is the
// same region seen through a partition whose pieces are the result's tiles shifted by the
// view's offset); element-wise arithmetic with scalar broadcast; matrix-vector dot; diag;
// reductions to futures. Every op is one index launch over the tiles.
//
// Temporaries come from a pool that recycles the regions of dead arrays of the same shape,
// most recently freed first, so `x = (b - dot(R, x)) / d` alternates between two regions for
// x exactly like the paper's Figure 1 — and a trace around one iteration never repeats.
#include <reprise/reprise.h>

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <vector>

namespace reprise::array {

// A slice [start, stop) along one dimension; negative values count from the end (python).
inline constexpr coord_t kEnd = std::numeric_limits<coord_t>::max();
struct Slice {
  coord_t start = 0, stop = kEnd;
};
inline Slice slice(coord_t start, coord_t stop = kEnd) {
  return Slice{start, stop};
}
inline Slice all() {
  return Slice{};
}

class Engine;
struct Storage;

// A rectangle as a map key (dimension, then lo/hi per dimension): no allocation per lookup.
using RectKey = std::array<coord_t, 5>;

class Array {
 public:
  Array() = default;
  bool valid() const { return store_ != nullptr; }
  int dim() const { return view_.dim; }
  coord_t size(int d) const { return view_.extent(d); }
  coord_t volume() const { return view_.volume(); }
  // The shape as a rectangle at the origin.
  Domain shape() const;
  Engine& engine() const;

  // Views (no data moves): a(slice) for 1-d, a(rows, cols) for 2-d.
  Array operator()(Slice s) const;
  Array operator()(Slice rows, Slice cols) const;

  // Writes into this array (or view) the values of src (same shape), or v everywhere.
  void assign(const Array& src) const;
  void assign(double v) const;

  Future sum() const;
  Future max() const;
  Future norm() const;  // sqrt of the sum of squares
  // Blocking: the values in row-major order (tests and verification).
  std::vector<double> to_vector() const;
  // A hash of the values in row-major order (compare runs bit for bit).
  Future checksum() const;

  // For the implementation: the region, this view's rectangle in it, and a partition of the
  // region whose piece c is tile c of shape() shifted to the view.
  const std::shared_ptr<Storage>& storage() const { return store_; }
  const Domain& view() const { return view_; }
  Partition tiles() const;

 private:
  friend class Engine;
  Array(std::shared_ptr<Storage> s, const Domain& view) : store_(std::move(s)), view_(view) {}
  std::shared_ptr<Storage> store_;
  Domain view_;
};

Array operator+(const Array& a, const Array& b);
Array operator-(const Array& a, const Array& b);
Array operator*(const Array& a, const Array& b);
Array operator/(const Array& a, const Array& b);
Array operator+(const Array& a, double s);
Array operator-(const Array& a, double s);
Array operator*(const Array& a, double s);
Array operator/(const Array& a, double s);
Array operator+(double s, const Array& a);
Array operator-(double s, const Array& a);
Array operator*(double s, const Array& a);
Array operator/(double s, const Array& a);
Array operator-(const Array& a);
// Matrix (n x m) times vector (m): a vector (n).
Array dot(const Array& m, const Array& v);
// The diagonal of a square matrix; a square matrix with v on its diagonal.
Array diag(const Array& a);
Array diag_matrix(const Array& v);
// numpy.roll: a copy shifted by `shift` along `axis`, wrapping around (out[k] = a[k - shift]).
Array roll(const Array& a, coord_t shift, int axis);
// A copy (numpy's a.copy()).
Array copy(const Array& a);

class Engine {
 public:
  // tiles: row blocks per array (0: one per CPU of every shard).
  explicit Engine(Context& ctx, std::uint32_t tiles = 0);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  Array zeros(coord_t n);
  Array zeros(coord_t rows, coord_t cols);
  Array ones(coord_t n);
  Array full(const Domain& shape, double v);
  // Uniform in [0, 1): element k (row-major) is a hash of (seed, k), so the values do not
  // depend on the tiling.
  Array random(coord_t n, std::uint64_t seed);
  Array random(coord_t rows, coord_t cols, std::uint64_t seed);
  Array eye(coord_t n);

  Context& ctx() { return ctx_; }
  std::uint32_t num_tiles() const { return tiles_; }
  // The color space every array's tiling uses, and tile c of a shape.
  const IndexSpace& colors() const { return colors_; }
  Domain tile(const Domain& shape, coord_t c) const;

  struct Stats {
    std::uint64_t regions_created = 0;
    std::uint64_t reused = 0;  // allocations served from the pool
    std::uint64_t pooled = 0;  // free regions in the pool now
    std::uint64_t partitions = 0;
  };
  Stats stats() const;

  // For the implementation: a new array of this shape, uninitialised (from the pool when a
  // region of that shape is free).
  Array allocate(const Domain& shape);
  void release(std::unique_ptr<Storage> s);  // back into the pool
  Partition partition_for(Storage& s, const Domain& view);

 private:
  Context& ctx_;
  std::uint32_t tiles_;
  IndexSpace colors_;
  FieldSpace fs_;
  std::map<RectKey, std::vector<std::unique_ptr<Storage>>> pool_;
  Stats stats_;
  std::shared_ptr<bool> alive_;
};

// One region and the partitions made for views of it (kept with the region in the pool, so a
// recycled region needs no new partitions).
struct Storage {
  Engine* engine = nullptr;
  std::weak_ptr<bool> engine_alive;
  Region region;
  Domain bounds;
  std::map<RectKey, Partition> partitions;  // by view rectangle
};

// Field of every array region.
inline constexpr FieldID kValue = 0;

}  // namespace reprise::array
