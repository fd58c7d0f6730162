// A launch whose requirements may interfere is checked once per launch shape: a shape that
// passed is not checked again, a shape that interferes fails every time, and shapes that
// differ only in partition, projection or domain are told apart.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <string>

using namespace reprise;

namespace {
enum : TaskID { T_NOOP = 9960, T_ADD_SHIFTED, T_READ_AT };
enum : FieldID { FA = 0, FB = 1 };

constexpr coord_t kPiece = 10;  // 8 pieces of 10 elements

void noop(TaskContext&) {}
// Requirement 0 (read-write) += requirement 1 (read-only), element by element.
void add_shifted(TaskContext& tc) {
  auto out = tc.accessor<double, 1>(0, FA);
  auto in = tc.accessor<const double, 1>(1, FA);
  Rect<1> ro = tc.domain(0), ri = tc.domain(1);
  for (coord_t i = 0; i <= ro.hi[0] - ro.lo[0]; ++i)
    out[Point<1>(ro.lo[0] + i)] += in[Point<1>(ri.lo[0] + i)];
}
double read_at(TaskContext& tc) {
  auto acc = tc.accessor<const double, 1>(0, FA);
  return acc[Point<1>(tc.args<coord_t>())];
}

void register_all() {
  TaskRegistry::add(T_NOOP, "noop", {cpu(noop)});
  TaskRegistry::add(T_ADD_SHIFTED, "add_shifted", {cpu(add_shifted)});
  TaskRegistry::add(T_READ_AT, "read_at", {cpu(read_at)});
}

struct Data {
  Region r;
  IndexSpace colors;  // 0..7
  Partition part;     // 8 disjoint pieces
  Partition halo;     // the same pieces grown by 2: aliased
};

Data make(Context& ctx) {
  Data d;
  auto is = ctx.create_index_space(Rect<1>({0}, {8 * kPiece - 1}));
  auto fs = ctx.create_field_space({{FA, sizeof(double)}, {FB, sizeof(double)}});
  d.r = ctx.create_region(is, fs);
  d.colors = ctx.create_index_space(Rect<1>({0}, {7}));
  d.part = ctx.partition_equal(d.r, d.colors);
  d.halo = ctx.partition_by_rects(
      d.r, d.colors, [&](const DomainPoint& c) { return grow(d.part.rect(c), 2) & d.r.bounds(); });
  return d;
}

// Writes pieces dom of `part`, reads the pieces `proj` maps them to through `read`.
IndexLauncher shifted(const Data& d, const Domain& dom, const Partition& read,
                      const Projection& proj) {
  IndexLauncher l(T_ADD_SHIFTED, dom);
  l.add(d.part, Projection::identity(), Privilege::ReadWrite, {FA});
  l.add(read, proj, Privilege::ReadOnly, {FA});
  return l;
}

// The error the launch throws, or "" if it does not.
std::string error_of(Context& ctx, const IndexLauncher& l) {
  try {
    ctx.execute(l);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
std::string error_of(Context& ctx, const TaskLauncher& l) {
  try {
    ctx.execute(l);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kInterfere = "requirements 0 and 1 interfere";

void expect_interferes(const std::string& error, const char* what) {
  EXPECT_NE(error.find(kInterfere), std::string::npos) << what << ": '" << error << "'";
}
}  // namespace

// An interfering shape throws each time, before and after a passing shape on the same data.
TEST(InterferenceCache, InterferingShapeThrowsEveryTime) {
  register_all();
  reprise::run({}, [](Context& ctx) {
    Data d = make(ctx);
    const Domain two = Rect<1>({0}, {1});
    const IndexLauncher bad = shifted(d, two, d.part, Projection::translate(Point<1>(1)));
    const IndexLauncher good = shifted(d, two, d.part, Projection::translate(Point<1>(2)));
    expect_interferes(error_of(ctx, bad), "first");
    expect_interferes(error_of(ctx, bad), "second");
    EXPECT_EQ(error_of(ctx, good), "");
    EXPECT_EQ(error_of(ctx, good), "");
    expect_interferes(error_of(ctx, bad), "after a passing shape");
    ctx.fence().wait();
  });
  // A single task: two subregions of one tree.
  reprise::run({}, [](Context& ctx) {
    Data d = make(ctx);
    auto task = [&](int read_piece) {
      TaskLauncher l(T_NOOP);
      l.add(d.part[Point<1>(0)], Privilege::ReadWrite, {FA});
      l.add(d.part[Point<1>(read_piece)], Privilege::ReadOnly, {FA});
      return l;
    };
    expect_interferes(error_of(ctx, task(0)), "same subregion");
    EXPECT_EQ(error_of(ctx, task(1)), "");
    EXPECT_EQ(error_of(ctx, task(1)), "");
    expect_interferes(error_of(ctx, task(0)), "same subregion, after a passing one");
    ctx.fence().wait();
  });
}

// Once a shape passed, one that differs from it in a single part and interferes still throws.
TEST(InterferenceCache, ShapesThatDifferAreCheckedApart) {
  register_all();
  reprise::run({}, [](Context& ctx) {
    Data d = make(ctx);
    const Domain two = Rect<1>({0}, {1});
    EXPECT_EQ(error_of(ctx, shifted(d, two, d.part, Projection::translate(Point<1>(2)))), "");
    expect_interferes(error_of(ctx, shifted(d, two, d.halo, Projection::translate(Point<1>(2)))),
                      "another partition");
    expect_interferes(error_of(ctx, shifted(d, two, d.part, Projection::translate(Point<1>(1)))),
                      "another translation");
    expect_interferes(
        error_of(ctx, shifted(d, Rect<1>({0}, {2}), d.part, Projection::translate(Point<1>(2)))),
        "another domain");
    // The same projection kind with another parameter.
    EXPECT_EQ(error_of(ctx, shifted(d, two, d.part, Projection::constant(Point<1>(3)))), "");
    expect_interferes(error_of(ctx, shifted(d, two, d.part, Projection::constant(Point<1>(1)))),
                      "another constant");
    expect_interferes(
        error_of(ctx, shifted(d, Rect<1>({2}, {3}), d.part, Projection::constant(Point<1>(3)))),
        "another domain of the same size");
    // Other fields do not interfere (and are not checked at all).
    IndexLauncher other_field(T_NOOP, two);
    other_field.add(d.part, Projection::identity(), Privilege::ReadWrite, {FA});
    other_field.add(d.part, Projection::translate(Point<1>(1)), Privilege::ReadOnly, {FB});
    EXPECT_EQ(error_of(ctx, other_field), "");
    ctx.fence().wait();
  });
}

// Each runtime starts with nothing known: node ids restart, so the same ids name other data.
TEST(InterferenceCache, EachRuntimeStartsAfresh) {
  register_all();
  // The read partition is made the same way in both runs (the same node id), with other rects.
  auto program = [](bool grown) {
    return [grown](Context& ctx) {
      Data d = make(ctx);
      Partition read = ctx.partition_by_rects(d.r, d.colors, [&](const DomainPoint& c) {
        return grown ? grow(d.part.rect(c), 2) & d.r.bounds() : d.part.rect(c);
      });
      std::string error =
          error_of(ctx, shifted(d, Rect<1>({0}, {1}), read, Projection::translate(Point<1>(2))));
      if (grown)
        expect_interferes(error, "in a second runtime");
      else
        EXPECT_EQ(error, "");
      ctx.fence().wait();
    };
  };
  reprise::run({}, program(false));
  reprise::run({}, program(true));
}

// A shape that passed gives the right results however often it is launched.
TEST(InterferenceCache, PassingShapeLaunchedManyTimes) {
  register_all();
  constexpr int kLaunches = 50;
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    Data d = make(ctx);
    for (coord_t c = 0; c < 8; ++c)
      ctx.fill(FillLauncher::of(d.part[Point<1>(c)], {FA}, c < 4 ? 0.0 : double(c)));
    // Pieces 0..3 += pieces 4..7, kLaunches times.
    const IndexLauncher l =
        shifted(d, Rect<1>({0}, {3}), d.part, Projection::translate(Point<1>(4)));
    for (int i = 0; i < kLaunches; ++i) ctx.execute(l);
    for (coord_t c = 0; c < 8; ++c)
      for (coord_t at : {c * kPiece, c * kPiece + kPiece - 1}) {
        TaskLauncher read(T_READ_AT, TaskArgs{at});
        read.add(d.r, Privilege::ReadOnly, {FA});
        double want = c < 4 ? double(kLaunches) * double(c + 4) : double(c);
        EXPECT_EQ(ctx.execute(read).get<double>(), want) << "element " << at;
      }
  });
}
