// The randomized equivalence test: hundreds of random valid programs (regions of 1..3
// dimensions, equal/blocks/explicit/translated partitions, disjoint and aliased, complete and
// not, nested in subregions; index launches with identity/constant/translate/affine
// projections and every privilege, single tasks, fills, copies, future maps reduced to
// futures, futures passed to later tasks, fences and blocking gets) must produce bit-identical
// region contents and future values
//   - under -lg:inorder (every op runs to completion before the next: the sequential oracle)
//     and in a host-only reference model of the same program;
//   - in parallel with -ll:cpu 2, and with -ll:cpu 2 -ll:util 2, compared with -lg:inorder;
//   - with several memories (-ll:numa 2 and 4), where the runtime must copy between instances.
// On a mismatch the test prints the seed, the first difference and the program; replay it with
//   random_programs --seeds S:S --repeat 20 <flags>      (add --minimize to reduce it)
// REPRISE_RANDOM_SEEDS=A:B runs another seed range (default 1:kDefaultSeeds).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "random_program.h"

namespace rr = reprise_random;

namespace {

constexpr std::uint64_t kDefaultSeeds = 200;
constexpr int kMaxReported = 3;  // failures printed in full per test

struct SeedRange {
  std::uint64_t first = 1, last = kDefaultSeeds;
};

SeedRange seed_range() {
  SeedRange r;
  if (const char* env = std::getenv("REPRISE_RANDOM_SEEDS")) {
    unsigned long long a = 0, b = 0;
    if (std::sscanf(env, "%llu:%llu", &a, &b) == 2 && a <= b) {
      r.first = a;
      r.last = b;
    } else if (std::sscanf(env, "%llu", &a) == 1) {
      r.first = r.last = a;
    }
  }
  return r;
}

// Programs and their -lg:inorder outcomes, shared by the tests of one process.
struct Case {
  rr::Program program;
  std::unique_ptr<rr::Outcome> inorder;
};

Case& get_case(std::uint64_t seed) {
  static std::map<std::uint64_t, Case> cases;
  Case& c = cases[seed];
  if (c.program.ops.empty()) c.program = rr::generate(seed);
  return c;
}

const rr::Outcome& inorder(std::uint64_t seed) {
  Case& c = get_case(seed);
  if (!c.inorder)
    c.inorder = std::make_unique<rr::Outcome>(rr::run_runtime(c.program, {"-lg:inorder"}));
  return *c.inorder;
}

std::string reproduce(std::uint64_t seed, const std::vector<std::string>& flags) {
  return "reproduce with: random_programs --seeds " + std::to_string(seed) + ":" +
         std::to_string(seed) + " --repeat 20 " + rr::join_flags(flags);
}

// Runs every seed with `flags` and compares with the -lg:inorder oracle.
void check_against_inorder(const std::vector<std::string>& flags) {
  const SeedRange r = seed_range();
  int failures = 0;
  std::size_t ops = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t seed = r.first; seed <= r.last; ++seed) {
    const rr::Program& p = get_case(seed).program;
    ops += p.ops.size();
    const rr::Outcome& want = inorder(seed);
    rr::Outcome got = rr::run_runtime(p, flags);
    std::string d = rr::compare(p, want, got);
    if (d.empty()) continue;
    if (++failures <= kMaxReported)
      ADD_FAILURE() << "seed " << seed << ", '" << rr::join_flags(flags)
                    << "' vs -lg:inorder: " << d << "\n"
                    << reproduce(seed, flags) << "\n"
                    << rr::dump(p);
    else
      ADD_FAILURE() << "seed " << seed << ", '" << rr::join_flags(flags)
                    << "' vs -lg:inorder: " << d;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ random   ] %llu programs (%zu ops) with '%s': %d mismatches, %.1f s\n",
              (unsigned long long)(r.last - r.first + 1), ops, rr::join_flags(flags).c_str(),
              failures, s);
}

}  // namespace

// The oracle itself: -lg:inorder agrees with a host model of the program's semantics.
TEST(RandomEquivalence, InorderMatchesReferenceModel) {
  const SeedRange r = seed_range();
  int failures = 0;
  for (std::uint64_t seed = r.first; seed <= r.last; ++seed) {
    const rr::Program& p = get_case(seed).program;
    rr::Outcome model = rr::run_reference(p);
    ASSERT_EQ(model.error, "") << "seed " << seed << ": the model failed\n" << rr::dump(p);
    std::string d = rr::compare(p, model, inorder(seed));
    if (d.empty()) continue;
    if (++failures <= kMaxReported)
      ADD_FAILURE() << "seed " << seed << ", -lg:inorder vs the reference model: " << d << "\n"
                    << reproduce(seed, {"-lg:inorder"}) << "\n"
                    << rr::dump(p);
    else
      ADD_FAILURE() << "seed " << seed << ", -lg:inorder vs the reference model: " << d;
  }
}

TEST(RandomEquivalence, TwoCpusMatchInorder) {
  check_against_inorder({"-ll:cpu", "2"});
}

TEST(RandomEquivalence, TwoCpusTwoUtilsMatchInorder) {
  check_against_inorder({"-ll:cpu", "2", "-ll:util", "2"});
}

// Several memories: instances per memory, copies between them where a point's data is stale.
TEST(RandomEquivalence, TwoNumaMemoriesMatchInorder) {
  check_against_inorder({"-ll:cpu", "2", "-ll:numa", "2"});
}

TEST(RandomEquivalence, FourNumaMemoriesFourCpusMatchInorder) {
  check_against_inorder({"-ll:cpu", "4", "-ll:numa", "4", "-ll:util", "2"});
}

// The harness can fail: the same comparison notices a perturbed program and a wrong order.
TEST(RandomHarness, NoticesPerturbedSalts) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const rr::Program& p = get_case(seed).program;
    rr::Program q = rr::perturbed(p);
    EXPECT_NE(rr::compare(p, rr::run_reference(p), rr::run_reference(q)), "") << "seed " << seed;
    if (seed <= 3) {
      EXPECT_NE(rr::compare(p, inorder(seed), rr::run_runtime(q, {"-ll:cpu", "2"})), "")
          << "seed " << seed;
    }
  }
}

TEST(RandomHarness, NoticesDependentOpsRunInTheWrongOrder) {
  int swapped = 0, noticed = 0;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    const rr::Program& p = get_case(seed).program;
    bool found = false;
    rr::Program q = rr::reordered(p, &found);
    if (!found) continue;
    ++swapped;
    if (!rr::compare(p, rr::run_reference(p), rr::run_reference(q)).empty()) ++noticed;
    if (swapped <= 3) {
      EXPECT_NE(rr::compare(p, inorder(seed), rr::run_runtime(q, {"-ll:cpu", "2"})), "")
          << "seed " << seed;
    }
  }
  EXPECT_GE(swapped, 90);
  // A swap can be invisible (e.g. two fills of equal values); almost all must be noticed.
  EXPECT_GE(noticed, swapped * 9 / 10) << noticed << " of " << swapped << " swaps noticed";
}

TEST(RandomHarness, GenerationIsDeterministic) {
  for (std::uint64_t seed : {1u, 2u, 99u, 12345u}) {
    EXPECT_EQ(rr::dump(rr::generate(seed)), rr::dump(rr::generate(seed)));
    const rr::Program& p = get_case(seed).program;
    EXPECT_GE(p.ops.size(), 20u);
  }
}
