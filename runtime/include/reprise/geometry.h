#pragma once
// Points and rectangles in 1..3 dimensions: typed (Point<N>, Rect<N>) for task code and
// dimension-erased (DomainPoint, Domain) for handles. Rectangles are inclusive [lo, hi];
// iteration is row-major (the last dimension varies fastest).
#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "reprise/error.h"

// Marks what GPU kernels may call (kernel::for_each lambdas, accessors) when nvcc compiles it.
#if defined(__CUDACC__)
#define REPRISE_HOST_DEVICE __host__ __device__
#else
#define REPRISE_HOST_DEVICE
#endif

namespace reprise {

inline constexpr int kMaxDim = 3;
using coord_t = std::int64_t;

template <int N>
struct Point {
  static_assert(N >= 1 && N <= kMaxDim, "Point dimension must be 1..3");
  std::array<coord_t, N> x{};

  constexpr Point() = default;
  constexpr Point(std::initializer_list<coord_t> v) {
    int i = 0;
    for (coord_t c : v) {
      if (i < N) x[i++] = c;
    }
  }
  template <int M = N, typename = std::enable_if_t<M == 1>>
  constexpr Point(coord_t v) {  // NOLINT: 1-d points convert from integers
    x[0] = v;
  }
  REPRISE_HOST_DEVICE constexpr coord_t& operator[](int i) { return x[i]; }
  REPRISE_HOST_DEVICE constexpr coord_t operator[](int i) const { return x[i]; }
  friend constexpr bool operator==(const Point&, const Point&) = default;
  friend constexpr Point operator+(Point a, const Point& b) {
    for (int i = 0; i < N; ++i) a.x[i] += b.x[i];
    return a;
  }
  friend constexpr Point operator-(Point a, const Point& b) {
    for (int i = 0; i < N; ++i) a.x[i] -= b.x[i];
    return a;
  }
};

template <int N>
struct Rect {
  Point<N> lo, hi;

  constexpr Rect() { hi.x.fill(-1); }
  constexpr Rect(Point<N> l, Point<N> h) : lo(l), hi(h) {}
  constexpr bool empty() const {
    for (int i = 0; i < N; ++i)
      if (hi[i] < lo[i]) return true;
    return false;
  }
  constexpr coord_t volume() const {
    coord_t v = 1;
    for (int i = 0; i < N; ++i) v *= std::max<coord_t>(0, hi[i] - lo[i] + 1);
    return v;
  }
  REPRISE_HOST_DEVICE constexpr bool contains(const Point<N>& p) const {
    for (int i = 0; i < N; ++i)
      if (p[i] < lo[i] || p[i] > hi[i]) return false;
    return true;
  }
  constexpr bool contains(const Rect& r) const {
    return r.empty() || (contains(r.lo) && contains(r.hi));
  }
  friend constexpr Rect operator&(const Rect& a, const Rect& b) {
    Rect r;
    for (int i = 0; i < N; ++i) {
      r.lo[i] = std::max(a.lo[i], b.lo[i]);
      r.hi[i] = std::min(a.hi[i], b.hi[i]);
    }
    return r;
  }
  friend constexpr bool operator==(const Rect& a, const Rect& b) {
    return (a.empty() && b.empty()) || (a.lo == b.lo && a.hi == b.hi);
  }

  class iterator {
   public:
    constexpr iterator(const Rect* r, bool end) : r_(r), p_(r->lo), done_(end || r->empty()) {}
    constexpr const Point<N>& operator*() const { return p_; }
    constexpr iterator& operator++() {
      for (int i = N - 1; i >= 0; --i) {
        if (++p_[i] <= r_->hi[i]) return *this;
        p_[i] = r_->lo[i];
      }
      done_ = true;
      return *this;
    }
    constexpr bool operator!=(const iterator& o) const { return done_ != o.done_; }

   private:
    const Rect* r_;
    Point<N> p_;
    bool done_;
  };
  constexpr iterator begin() const { return iterator(this, false); }
  constexpr iterator end() const { return iterator(this, true); }
};

template <int N>
constexpr Rect<N> grow(const Rect<N>& r, coord_t by) {
  Rect<N> g = r;
  for (int i = 0; i < N; ++i) {
    g.lo[i] -= by;
    g.hi[i] += by;
  }
  return g;
}

// A point of any dimension 1..3.
struct DomainPoint {
  int dim = 0;
  std::array<coord_t, kMaxDim> x{};

  constexpr DomainPoint() = default;
  template <int N>
  constexpr DomainPoint(const Point<N>& p) : dim(N) {  // NOLINT: implicit by design
    for (int i = 0; i < N; ++i) x[i] = p[i];
  }
  constexpr DomainPoint(coord_t v) : dim(1) { x[0] = v; }  // NOLINT
  template <int N>
  Point<N> as() const {
    if (dim != N)
      throw Error("point of dimension " + std::to_string(dim) + " used where dimension " +
                  std::to_string(N) + " is required");
    Point<N> p;
    for (int i = 0; i < N; ++i) p[i] = x[i];
    return p;
  }
  template <int N>
  operator Point<N>() const {  // NOLINT: checked conversion
    return as<N>();
  }
  constexpr coord_t operator[](int i) const { return x[i]; }
  constexpr coord_t& operator[](int i) { return x[i]; }
  friend constexpr bool operator==(const DomainPoint& a, const DomainPoint& b) {
    if (a.dim != b.dim) return false;
    for (int i = 0; i < a.dim; ++i)
      if (a.x[i] != b.x[i]) return false;
    return true;
  }
  std::string str() const;
};

// A rectangle of any dimension 1..3 (the bounds of index spaces, regions and pieces).
struct Domain {
  int dim = 0;
  std::array<coord_t, kMaxDim> lo{}, hi{};

  constexpr Domain() = default;
  template <int N>
  constexpr Domain(const Rect<N>& r) : dim(N) {  // NOLINT: implicit by design
    for (int i = 0; i < N; ++i) {
      lo[i] = r.lo[i];
      hi[i] = r.hi[i];
    }
  }
  static Domain from_points(const DomainPoint& l, const DomainPoint& h);
  template <int N>
  Rect<N> as() const {
    if (dim != N)
      throw Error("rectangle of dimension " + std::to_string(dim) + " used where dimension " +
                  std::to_string(N) + " is required");
    Rect<N> r;
    for (int i = 0; i < N; ++i) {
      r.lo[i] = lo[i];
      r.hi[i] = hi[i];
    }
    return r;
  }
  template <int N>
  operator Rect<N>() const {  // NOLINT: checked conversion
    return as<N>();
  }
  constexpr bool empty() const {
    for (int i = 0; i < dim; ++i)
      if (hi[i] < lo[i]) return true;
    return dim == 0;
  }
  constexpr coord_t volume() const {
    if (dim == 0) return 0;
    coord_t v = 1;
    for (int i = 0; i < dim; ++i) v *= std::max<coord_t>(0, hi[i] - lo[i] + 1);
    return v;
  }
  constexpr coord_t extent(int i) const { return hi[i] - lo[i] + 1; }
  constexpr bool contains(const DomainPoint& p) const {
    if (p.dim != dim) return false;
    for (int i = 0; i < dim; ++i)
      if (p.x[i] < lo[i] || p.x[i] > hi[i]) return false;
    return true;
  }
  constexpr bool contains(const Domain& r) const {
    if (r.empty()) return true;
    if (r.dim != dim) return false;
    for (int i = 0; i < dim; ++i)
      if (r.lo[i] < lo[i] || r.hi[i] > hi[i]) return false;
    return true;
  }
  constexpr bool overlaps(const Domain& r) const {
    if (r.dim != dim || dim == 0) return false;
    for (int i = 0; i < dim; ++i)
      if (std::max(lo[i], r.lo[i]) > std::min(hi[i], r.hi[i])) return false;
    return true;
  }
  DomainPoint lo_point() const;
  DomainPoint hi_point() const;
  // Row-major linear index of p inside this domain, and its inverse.
  coord_t linearize(const DomainPoint& p) const;
  // (Inline: the analysis and the executor ask this for every point they launch; 1-d and in
  // range takes no division.)
  DomainPoint delinearize(coord_t idx) const {
    if (dim == 1 && idx >= 0 && idx <= hi[0] - lo[0]) return DomainPoint(lo[0] + idx);
    DomainPoint p;
    p.dim = dim;
    for (int i = dim - 1; i >= 0; --i) {
      const coord_t e = extent(i);
      p.x[i] = lo[i] + idx % e;
      idx /= e;
    }
    return p;
  }
  friend constexpr Domain operator&(const Domain& a, const Domain& b) {
    Domain r;
    r.dim = a.dim;
    for (int i = 0; i < a.dim; ++i) {
      r.lo[i] = std::max(a.lo[i], b.lo[i]);
      r.hi[i] = std::min(a.hi[i], b.hi[i]);
    }
    return r;
  }
  friend constexpr bool operator==(const Domain& a, const Domain& b) {
    if (a.dim != b.dim) return false;
    // (Equal bounds first: the usual case, and two empty domains with the same bounds.)
    bool same = true;
    for (int i = 0; i < a.dim; ++i) same = same && a.lo[i] == b.lo[i] && a.hi[i] == b.hi[i];
    return same || (a.empty() && b.empty());
  }
  std::string str() const;
};

Domain grow(const Domain& r, coord_t by);
Domain translate(const Domain& r, const DomainPoint& by);

}  // namespace reprise
