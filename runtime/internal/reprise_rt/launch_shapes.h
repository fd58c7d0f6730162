#pragma once
// The launch shapes whose requirements were checked for interference and passed (the
// application thread's check in Context::execute is O(requirements² × points²)). The verdict
// depends only on the launch domain and, per requirement, on (node uid, projection,
// privilege, redop, mask); a node never changes, and its uid is never given to another node
// (slots are reused after destruction, uids are not), so a shape that passed passes again. Keys are
// compared in full (a hash collision only costs a comparison), and only shapes that passed are
// kept: one that interferes is checked, and fails, every time. One per runtime; application thread
// only.
#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "reprise/types.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

class LaunchShapes {
 public:
  bool contains(const Domain& domain, const ReqList& reqs) const {
    return shapes_.find(Probe{domain, reqs}) != shapes_.end();
  }
  void add(const Domain& domain, const ReqList& reqs) {
    // A program that launches ever new shapes (a domain that grows each iteration) does not
    // grow the set without bound: it starts over.
    if (shapes_.size() >= kMaxShapes) shapes_.clear();
    Shape s;
    s.domain = domain;
    s.reqs.reserve(reqs.size());
    for (const ReqInfo& r : reqs)
      s.reqs.push_back(Req{r.uid, r.projection, r.privilege, r.redop, r.mask});
    shapes_.insert(std::move(s));
  }
  static constexpr std::size_t kMaxShapes = 4096;

 private:
  struct Req {
    std::uint64_t uid;
    Projection projection;
    Privilege privilege;
    ReductionOp redop;
    FieldMask mask;
  };
  struct Shape {
    Domain domain;
    std::vector<Req> reqs;
  };
  // A launch looked up without copying it.
  struct Probe {
    const Domain& domain;
    const ReqList& reqs;
  };
  template <typename R>
  static bool same_req(const R& a, const Req& b) {
    return a.uid == b.uid && a.privilege == b.privilege && a.redop == b.redop && a.mask == b.mask &&
           a.projection == b.projection;
  }
  template <typename S>
  static bool same_shape(const S& a, const Shape& b) {
    if (a.domain.dim != b.domain.dim || a.domain.lo != b.domain.lo || a.domain.hi != b.domain.hi ||
        a.reqs.size() != b.reqs.size())
      return false;
    for (std::size_t i = 0; i < b.reqs.size(); ++i)
      if (!same_req(a.reqs[i], b.reqs[i])) return false;
    return true;
  }
  struct Hash {
    using is_transparent = void;
    template <typename S>
    std::size_t operator()(const S& s) const {
      Hasher h;
      h.mix(s.domain);
      for (const auto& r : s.reqs) {
        h.mix(r.uid);
        h.mix(std::uint64_t(r.privilege) << 8 | std::uint64_t(r.redop));
        h.mix(r.mask);
        h.mix(r.projection.hash());
      }
      return std::size_t(h.h);
    }
  };
  struct Eq {
    using is_transparent = void;
    bool operator()(const Shape& a, const Shape& b) const { return same_shape(a, b); }
    bool operator()(const Probe& a, const Shape& b) const { return same_shape(a, b); }
    bool operator()(const Shape& a, const Probe& b) const { return same_shape(b, a); }
  };
  std::unordered_set<Shape, Hash, Eq> shapes_;
};

}  // namespace reprise::detail
