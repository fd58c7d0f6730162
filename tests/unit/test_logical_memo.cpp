// The logical analysis' memo for untraced launches (LogicalAnalysis::dependences_memoized):
// random programs of launches that share kept requirement lists, analysed by an analysis with
// the memo and one without, must give every point the same preconditions and leave the same
// users; the memo must have answered some of them (else it is not being tested).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "logical_fixture.h"

using namespace logical_fixture;

namespace {

// A kept launch shape: one requirement list that every launch of it shares, and its domain.
struct Shape {
  detail::ReqList reqs;
  Domain domain;
};

struct Program {
  Fixture f;
  std::vector<Partition> parts;
  std::vector<Shape> shapes;

  explicit Program(std::mt19937& rng) {
    parts.push_back(f.partition({r1(0, 49), r1(50, 99)}));   // halves (disjoint)
    parts.push_back(f.partition({r1(0, 51), r1(48, 99)}));   // halves with a halo
    parts.push_back(f.partition({r1(0, 24), r1(75, 99)}));   // the ends
    parts.push_back(f.partition({r1(40, 59), r1(40, 59)}));  // the middle, twice
    const Privilege privileges[] = {Privilege::ReadOnly, Privilege::ReadWrite,
                                    Privilege::WriteDiscard, Privilege::Reduce};
    for (int s = 0; s < 6; ++s) {
      Shape shape;
      const int pick = int(rng() % 3);
      shape.domain = pick == 0 ? f.colors : pick == 1 ? r1(0, 0) : r1(1, 1);
      const int nreq = 1 + int(rng() % 3);
      for (int r = 0; r < nreq; ++r) {
        const Partition& p = parts[rng() % parts.size()];
        detail::ReqInfo& q = shape.reqs.emplace_back();
        q.tree = p.tree();
        q.region = f.region.node();
        q.partition = p.node();
        q.uid = p.uid();
        q.whole_partition = shape.domain == f.colors;
        q.privilege = privileges[rng() % 4];
        // (Points of one launch must not write the same data: writes only to the halves.)
        if (q.privilege != Privilege::ReadOnly && q.privilege != Privilege::Reduce &&
            p.uid() != parts[0].uid())
          q.privilege = Privilege::ReadOnly;
        q.redop = q.privilege == Privilege::Reduce ? ReductionOp::Sum : ReductionOp::None;
        q.mask = detail::FieldMask(1 + rng() % 3);
      }
      // (The list as the analysis completes it — pieces, bounding boxes — as a kept
      // launcher's resolution carries it: launches then stay sharing it.)
      const OpRef first = launch(shape);
      shape.reqs = first->reqs;
      shapes.push_back(std::move(shape));
    }
  }

  OpRef launch(const Shape& s) {
    OpRef op = detail::make_op();
    op->kind = detail::OpKind::IndexTask;
    op->domain = s.domain;
    op->reqs = s.reqs;  // (shared, as a kept launcher's launches share theirs)
    op->done = f.events.create();
    for (std::size_t i = 0; i < op->num_points(); ++i) op->point_done.push_back(f.events.create());
    f.logical.compute_rects(*op);
    return op;
  }
};

std::vector<std::vector<Event>> preconditions(detail::LogicalAnalysis& a, const OpRef& op,
                                              bool memoized) {
  detail::PointPreconditions pre;
  pre.reset(op->num_points());
  if (memoized)
    a.dependences_memoized(op, pre);
  else
    a.dependences(*op, pre);
  std::vector<std::vector<Event>> out;
  for (std::size_t p = 0; p < op->num_points(); ++p) {
    const auto e = pre.of(p);
    out.push_back(sorted(std::vector<Event>(e.begin(), e.end())));
  }
  a.record(op);
  return out;
}

std::vector<Event> users(const detail::LogicalAnalysis& a, std::uint32_t tree) {
  std::vector<Event> out;
  a.users_of(tree, out);
  return sorted(std::move(out));
}

void run(int mode, bool through_readers) {
  std::uint64_t hits = 0;
  // REPRISE_MEMO_SEEDS=N runs more seeds (40 in CI).
  const char* env = std::getenv("REPRISE_MEMO_SEEDS");
  const long asked = env ? std::strtol(env, nullptr, 10) : 0;
  const unsigned seeds = asked > 0 ? unsigned(asked) : 40;
  for (unsigned seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    Program prog(rng);
    detail::LogicalAnalysis memo(prog.f.forest, prog.f.events, false);
    memo.set_memo(mode);
    memo.set_order_through_readers(through_readers);
    prog.f.logical.set_order_through_readers(through_readers);
    // A cycle of two or three shapes, now and then another shape or a fence in between.
    const std::size_t cycle = 2 + rng() % 2;
    for (int i = 0; i < 200; ++i) {
      const std::size_t k = rng() % 8 == 0 ? rng() % prog.shapes.size() : i % cycle;
      if (rng() % 50 == 0) {
        memo.clear();
        prog.f.logical.clear();
      }
      const OpRef op = prog.launch(prog.shapes[k]);
      const auto full = preconditions(prog.f.logical, op, false);
      const auto kept = preconditions(memo, op, true);
      ASSERT_EQ(kept, full) << "seed " << seed << ", launch " << i << " (shape " << k << ")";
      ASSERT_EQ(users(memo, prog.parts[0].tree()), users(prog.f.logical, prog.parts[0].tree()))
          << "seed " << seed << ", launch " << i;
    }
    hits += memo.memo_hits();
  }
  // (Most launches of these programs meet users of other shapes each time, or too many
  // readers: a few hundred are answered — enough to test that they are answered right. How
  // many depends a little on where the lists lie: which slots they take.)
  EXPECT_GT(hits, 100u) << "the memo answered too few launches to be tested";
}

}  // namespace

TEST(LogicalMemo, RandomProgramsGetTheFullAnalysisAnswers) {
  run(1, true);
}

TEST(LogicalMemo, WithoutOrderingThroughReaders) {
  run(1, false);
}

TEST(LogicalMemo, CheckedReusesAgreeWithTheFullAnalysis) {
  run(2, true);
}

// A stencil's timesteps (Task Bench's stencil_1d): fields 1 and 2 take turns, each timestep
// writing one field's halves and reading the other's halves with a halo. From the third
// launch on every launch meets what the launch two timesteps before met.
TEST(LogicalMemo, AStencilsTimestepsAreAnsweredFromTheThirdOn) {
  std::mt19937 rng(1);
  Program prog(rng);
  Shape step[2];
  for (int s = 0; s < 2; ++s) {
    for (int r = 0; r < 2; ++r) {
      const Partition& p = prog.parts[std::size_t(r)];  // halves; halves with a halo
      detail::ReqInfo& q = step[s].reqs.emplace_back();
      q.tree = p.tree();
      q.region = prog.f.region.node();
      q.partition = p.node();
      q.uid = p.uid();
      q.whole_partition = true;
      q.privilege = r == 0 ? Privilege::WriteDiscard : Privilege::ReadOnly;
      q.mask = detail::FieldMask(r == 0 ? 1 + s : 2 - s);
    }
    step[s].domain = prog.f.colors;
    step[s].reqs = prog.launch(step[s])->reqs;
  }
  detail::LogicalAnalysis memo(prog.f.forest, prog.f.events, false);
  memo.set_memo(1);
  memo.set_order_through_readers(true);
  prog.f.logical.set_order_through_readers(true);
  for (int t = 0; t < 200; ++t) {
    const OpRef op = prog.launch(step[t % 2]);
    ASSERT_EQ(preconditions(memo, op, true), preconditions(prog.f.logical, op, false))
        << "timestep " << t;
  }
  EXPECT_GE(memo.memo_hits(), 190u);
}

TEST(LogicalMemo, OffAnswersNothing) {
  std::mt19937 rng(7);
  Program prog(rng);
  detail::LogicalAnalysis memo(prog.f.forest, prog.f.events, false);
  memo.set_memo(0);
  for (int i = 0; i < 50; ++i) preconditions(memo, prog.launch(prog.shapes[i % 2]), true);
  EXPECT_EQ(memo.memo_hits(), 0u);
}

// A launch whose requirement list nobody else holds is not kept: no later launch can share it.
TEST(LogicalMemo, APrivateListIsNotKept) {
  std::mt19937 rng(3);
  Program prog(rng);
  detail::LogicalAnalysis memo(prog.f.forest, prog.f.events, false);
  memo.set_memo(1);
  for (int i = 0; i < 50; ++i) {
    OpRef op = prog.launch(prog.shapes[0]);
    op->reqs.edit(0);  // (its own copy now)
    preconditions(memo, op, true);
  }
  EXPECT_EQ(memo.memo_hits(), 0u);
}
