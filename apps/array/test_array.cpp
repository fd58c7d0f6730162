// The array library against plain loops: every op, slices at the edges, reductions, the
// region-recycling pool (the Figure 1 alternation, no growth over 10,000 iterations) and the
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "array.h"
#include "array_tasks.h"

using namespace reprise;
using namespace reprise::array;

namespace {

void with_engine(const std::function<void(Engine&)>& body,
                 std::vector<std::string> flags = {"-ll:cpu", "2"}) {
  reprise::run(flags, [&](Context& ctx) {
    Engine np(ctx, 3);
    body(np);
  });
}

std::vector<double> randoms(std::size_t n, std::uint64_t seed) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = tasks::random_value(seed, k);
  return v;
}

}  // namespace

TEST(Array, ElementwiseOpsMatchLoops) {
  with_engine([](Engine& np) {
    const std::size_t n = 37;
    Array a = np.random(coord_t(n), 1), b = np.random(coord_t(n), 2);
    const auto va = randoms(n, 1), vb = randoms(n, 2);
    EXPECT_EQ(a.to_vector(), va);
    struct Case {
      const char* name;
      Array got;
      std::function<double(double, double)> want;
    };
    std::vector<Case> cases = {
        {"a+b", a + b, [](double x, double y) { return x + y; }},
        {"a-b", a - b, [](double x, double y) { return x - y; }},
        {"a*b", a * b, [](double x, double y) { return x * y; }},
        {"a/b", a / b, [](double x, double y) { return x / y; }},
        {"a+2", a + 2.0, [](double x, double) { return x + 2.0; }},
        {"2-a", 2.0 - a, [](double x, double) { return 2.0 - x; }},
        {"a*3", a * 3.0, [](double x, double) { return x * 3.0; }},
        {"1/a", 1.0 / a, [](double x, double) { return 1.0 / x; }},
        {"a/4", a / 4.0, [](double x, double) { return x / 4.0; }},
        {"-a", -a, [](double x, double) { return -x; }},
    };
    for (auto& c : cases) {
      auto got = c.got.to_vector();
      ASSERT_EQ(got.size(), n) << c.name;
      for (std::size_t k = 0; k < n; ++k) EXPECT_EQ(got[k], c.want(va[k], vb[k])) << c.name << k;
    }
    EXPECT_EQ(np.zeros(5).to_vector(), std::vector<double>(5, 0.0));
    EXPECT_EQ(np.ones(4).to_vector(), std::vector<double>(4, 1.0));
  });
}

TEST(Array, SlicesAtTheEdgesMatchLoops) {
  with_engine([](Engine& np) {
    const coord_t r = 13, c = 11;
    Array a = np.random(r, c, 7);
    const auto va = randoms(std::size_t(r * c), 7);
    auto at = [&](coord_t i, coord_t j) { return va[std::size_t(i * c + j)]; };
    // Shifted interior views, as in a 5-point stencil: up + down + left - right.
    Array s = a(slice(0, -2), slice(1, -1)) + a(slice(2), slice(1, -1));
    s = s + a(slice(1, -1), slice(0, -2)) - a(slice(1, -1), slice(2));
    auto got = s.to_vector();
    ASSERT_EQ(got.size(), std::size_t((r - 2) * (c - 2)));
    for (coord_t i = 1; i < r - 1; ++i)
      for (coord_t j = 1; j < c - 1; ++j)
        EXPECT_EQ(got[std::size_t((i - 1) * (c - 2) + (j - 1))],
                  ((at(i - 1, j) + at(i + 1, j)) + at(i, j - 1)) - at(i, j + 1));
    // Boundary assignment by slices: first row, last column, a corner from another view.
    a(slice(0, 1), all()).assign(5.0);
    a(all(), slice(-1)).assign(-1.0);
    a(slice(-2), slice(0, 2)).assign(a(slice(3, 5), slice(4, 6)));
    auto after = a.to_vector();
    for (coord_t i = 0; i < r; ++i)
      for (coord_t j = 0; j < c; ++j) {
        double want = at(i, j);
        if (i == 0) want = 5.0;
        if (j == c - 1) want = -1.0;
        if (i >= r - 2 && j < 2) want = at(i - (r - 2) + 3, j + 4);
        EXPECT_EQ(after[std::size_t(i * c + j)], want) << i << "," << j;
      }
    // 1-d slices with negative bounds, and assigning an overlapping view of itself.
    Array x = np.random(10, 3);
    const auto vx = randoms(10, 3);
    EXPECT_EQ(x(slice(-3)).to_vector(), std::vector<double>(vx.end() - 3, vx.end()));
    x(slice(1)).assign(x(slice(0, -1)));
    auto vy = x.to_vector();
    EXPECT_EQ(vy[0], vx[0]);
    for (std::size_t k = 1; k < 10; ++k) EXPECT_EQ(vy[k], vx[k - 1]);
  });
}

TEST(Array, DotDiagAndReductionsMatchLoops) {
  with_engine([](Engine& np) {
    const coord_t n = 20;
    Array m = np.random(n, n, 11), v = np.random(n, 12);
    const auto vm = randoms(std::size_t(n * n), 11), vv = randoms(std::size_t(n), 12);
    auto y = dot(m, v).to_vector();
    for (coord_t i = 0; i < n; ++i) {
      double s = 0;
      for (coord_t j = 0; j < n; ++j) s += vm[std::size_t(i * n + j)] * vv[std::size_t(j)];
      EXPECT_EQ(y[std::size_t(i)], s);
    }
    // dot of a view: the lower-right 12x12 block with the last 12 entries.
    auto yv = dot(m(slice(8), slice(8)), v(slice(8))).to_vector();
    for (coord_t i = 0; i < 12; ++i) {
      double s = 0;
      for (coord_t j = 0; j < 12; ++j)
        s += vm[std::size_t((i + 8) * n + j + 8)] * vv[std::size_t(j + 8)];
      EXPECT_EQ(yv[std::size_t(i)], s);
    }
    auto d = diag(m).to_vector();
    for (coord_t i = 0; i < n; ++i) EXPECT_EQ(d[std::size_t(i)], vm[std::size_t(i * n + i)]);
    auto dm = diag_matrix(v).to_vector();
    for (coord_t i = 0; i < n; ++i)
      for (coord_t j = 0; j < n; ++j)
        EXPECT_EQ(dm[std::size_t(i * n + j)], i == j ? vv[std::size_t(i)] : 0.0);
    // Reductions fold the tiles' partial results in tile order.
    double sum = 0, mx = -INFINITY, sq = 0;
    for (coord_t t = 0; t < coord_t(np.num_tiles()); ++t) {
      double ps = 0, pq = 0;
      Domain tile = np.tile(Rect<1>({0}, {n - 1}), t);
      for (coord_t k = tile.lo[0]; k <= tile.hi[0]; ++k) {
        ps += vv[std::size_t(k)];
        pq += vv[std::size_t(k)] * vv[std::size_t(k)];
        mx = std::max(mx, vv[std::size_t(k)]);
      }
      sum += ps;
      sq += pq;
    }
    EXPECT_EQ(v.sum().get<double>(), sum);
    EXPECT_EQ(v.max().get<double>(), mx);
    EXPECT_EQ(v.norm().get<double>(), std::sqrt(sq));
    EXPECT_NEAR(np.eye(4).sum().get<double>(), 4.0, 0.0);
  });
}

TEST(Array, RollAndCopyMatchLoops) {
  with_engine([](Engine& np) {
    const coord_t r = 5, c = 7;
    Array a = np.random(r, c, 4);
    const auto va = randoms(std::size_t(r * c), 4);
    for (coord_t shift : {-1, 1, 3, 7, -8}) {
      auto cols = roll(a, shift, 1).to_vector();
      auto rows = roll(a, shift, 0).to_vector();
      for (coord_t i = 0; i < r; ++i)
        for (coord_t j = 0; j < c; ++j) {
          const coord_t sj = ((j - shift) % c + c) % c, si = ((i - shift) % r + r) % r;
          EXPECT_EQ(cols[std::size_t(i * c + j)], va[std::size_t(i * c + sj)]) << shift;
          EXPECT_EQ(rows[std::size_t(i * c + j)], va[std::size_t(si * c + j)]) << shift;
        }
    }
    Array v = np.random(6, 5);
    auto vv = randoms(6, 5);
    auto rolled = roll(v, 2, 0).to_vector();
    for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(rolled[k], vv[(k + 4) % 6]);
    Array b = copy(a);
    a.assign(0.0);
    EXPECT_EQ(b.to_vector(), va);
  });
}

TEST(Array, PoolAlternatesTwoRegionsLikeFigure1AndDoesNotGrow) {
  with_engine([](Engine& np) {
    const coord_t n = 8;
    Array a = np.random(n, n, 1) + np.eye(n) * double(n);
    Array b = np.random(n, 2);
    Array x = np.zeros(n);
    Array d = diag(a);
    Array r = a - diag_matrix(d);
    std::vector<const Storage*> xs;
    for (int it = 0; it < 10000; ++it) {
      x = (b - dot(r, x)) / d;
      if (it < 8) xs.push_back(x.storage().get());
    }
    // x lives in two regions, alternately (from the second iteration on).
    for (std::size_t k = 3; k < xs.size(); ++k) EXPECT_EQ(xs[k], xs[k - 2]);
    EXPECT_NE(xs[2], xs[3]);
    const Engine::Stats s = np.stats();
    EXPECT_LE(s.regions_created, 12u) << "the pool must recycle temporaries";
    EXPECT_GE(s.reused, 29990u);
    EXPECT_LE(s.pooled, 6u);
    // Converged: x solves a x = b.
    auto vx = x.to_vector();
    auto ax = dot(a, x).to_vector();
    auto vb = b.to_vector();
    for (coord_t i = 0; i < n; ++i) EXPECT_NEAR(ax[std::size_t(i)], vb[std::size_t(i)], 1e-12);
  });
}

TEST(Array, BadShapesAndSlicesAreErrors) {
  with_engine([](Engine& np) {
    Array a = np.zeros(5), b = np.zeros(6), m = np.zeros(4, 5);
    auto expect = [](const std::function<void()>& f, const std::string& what) {
      try {
        f();
        ADD_FAILURE() << "expected an error mentioning " << what;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      }
    };
    expect([&] { (void)(a + b); }, "shapes (5) and (6) differ");
    expect([&] { (void)a(slice(3, 9)); }, "out of range");
    expect([&] { (void)a(slice(2, 2)); }, "empty");
    expect([&] { (void)a(all(), all()); }, "needs 1 slices");
    expect([&] { (void)dot(m, b); }, "(4, 5) matrix times a length-6 vector");
    expect([&] { (void)diag(m); }, "square");
    expect([&] { a(slice(0, 2)).assign(b); }, "differ");
    expect([&] { (void)np.zeros(0); }, "at least one element");
  });
}

// The element-wise tasks' CPU variants are the host compiler's copies in every build: in CUDA
// builds nvcc's copies, called from host code, go through nvcc's lambda wrapper (an indirect
// call per element, 3-4x the time on cfd) and are the GPU variants only.
TEST(Array, ElementwiseTasksRunTheHostCompilersCopyOnCpus) {
  tasks::register_all();
  struct Expected {
    TaskID id;
    TaskVariant want_cpu, want_gpu;  // (the functions, wrapped as the registry holds them)
  };
  namespace host = tasks::host_kernels;
#if REPRISE_ARRAY_NVCC_KERNELS
  namespace device = tasks::nvcc_kernels;
#else
  namespace device = tasks::host_kernels;
#endif
  const Expected expected[] = {
      {tasks::kSet, cpu(host::set_task), gpu(device::set_task)},
      {tasks::kRandom, cpu(host::random_task), gpu(device::random_task)},
      {tasks::kBinary, cpu(host::binary_task), gpu(device::binary_task)},
      {tasks::kScalar, cpu(host::scalar_task), gpu(device::scalar_task)},
      {tasks::kCopy, cpu(host::copy_task), gpu(device::copy_task)},
      {tasks::kDot, cpu(host::dot_task), gpu(device::dot_task)},
      {tasks::kDiag, cpu(host::diag_task), gpu(device::diag_task)},
      {tasks::kDiagMatrix, cpu(host::diag_matrix_task), gpu(device::diag_matrix_task)},
  };
  for (const Expected& e : expected) {
    const auto on_cpu = TaskRegistry::variant(e.id, ProcessorKind::CPU);
    const auto on_gpu = TaskRegistry::variant(e.id, ProcessorKind::GPU);
    ASSERT_TRUE(on_cpu && on_gpu) << "task " << e.id;
    EXPECT_EQ(on_cpu->fn, e.want_cpu.fn) << "task " << e.id;
    EXPECT_EQ(on_gpu->fn, e.want_gpu.fn) << "task " << e.id;
  }
  // The reductions have a CPU variant only.
  EXPECT_TRUE(TaskRegistry::variant(tasks::kSum, ProcessorKind::CPU).has_value());
  EXPECT_FALSE(TaskRegistry::variant(tasks::kSum, ProcessorKind::GPU).has_value());
}
