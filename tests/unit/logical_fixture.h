#pragma once
// A logical analysis over one 1-d region of 100 elements and launches over two colors, for
// tests that ask which points of a launch wait for which points of earlier ones.
#include <algorithm>
#include <vector>

#include "reprise_analysis/logical.h"
#include "reprise_rt/event.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/op.h"

namespace logical_fixture {

using namespace reprise;
using detail::Event;
using detail::EventTable;
using detail::OpRef;

inline Domain r1(coord_t lo, coord_t hi) {
  return Domain(Rect<1>({lo}, {hi}));
}

struct Fixture {
  EventTable events;
  detail::RegionForest forest;
  detail::LogicalAnalysis logical{forest, events, /*prune_completed=*/false};
  Region region;
  Domain colors = r1(0, 1);

  Fixture() {
    const IndexSpace is = forest.create_index_space(r1(0, 99));
    const FieldSpace fs = forest.create_field_space({{1, 8}, {2, 8}});
    region = forest.create_region(is, fs);
  }
  Partition partition(std::vector<Domain> pieces) {
    return forest.create_partition(region, colors, std::move(pieces));
  }
  // An index launch over `domain` naming `p` by identity on the fields in `mask`; its points'
  // events are made here.
  OpRef launch(const Domain& domain, const Partition& p, Privilege privilege,
               detail::FieldMask mask = 1) {
    OpRef op = detail::make_op();
    op->kind = detail::OpKind::IndexTask;
    op->domain = domain;
    detail::ReqInfo& q = op->reqs.emplace_back();
    q.tree = p.tree();
    q.region = region.node();
    q.partition = p.node();
    q.uid = p.uid();
    q.whole_partition = domain == colors;
    q.privilege = privilege;
    q.mask = mask;
    op->done = events.create();
    for (std::size_t i = 0; i < op->num_points(); ++i) op->point_done.push_back(events.create());
    logical.compute_rects(*op);
    return op;
  }
  // What each point of `op` waits for; then op becomes a user.
  std::vector<std::vector<Event>> analyse(const OpRef& op) {
    detail::PointPreconditions pre;
    pre.reset(op->num_points());
    logical.dependences(*op, pre);
    std::vector<std::vector<Event>> out;
    for (std::size_t p = 0; p < op->num_points(); ++p) {
      const auto events_of = pre.of(p);
      std::vector<Event> v(events_of.begin(), events_of.end());
      std::sort(v.begin(), v.end(), [](Event a, Event b) { return a.id < b.id; });
      out.push_back(std::move(v));
    }
    logical.record(op);
    return out;
  }
};

inline std::vector<Event> sorted(std::vector<Event> v) {
  std::sort(v.begin(), v.end(), [](Event a, Event b) { return a.id < b.id; });
  return v;
}

}  // namespace logical_fixture
