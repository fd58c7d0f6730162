// Compressed event traces (-lg:evtrace): loop folding, values, the text format, merging
// shards, and a recorded program.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "reprise/error.h"
#include "reprise/reprise.h"
#include "reprise_rt/evtrace_format.h"

namespace ev = reprise::detail::evtrace;

namespace {

ev::Node op(const std::string& task, std::uint32_t shard = 0, std::uint32_t points = 1,
            std::uint64_t ns = 1000, std::int32_t send_to = 0) {
  ev::Node n;
  n.element.kind = "index_task";
  n.element.task = task;
  n.element.util.add(ns / 10);
  for (std::uint32_t i = 0; i < points; ++i) n.element.point_ns.add(ns);
  ev::Variant v;
  v.ranks = {shard};
  v.points = points;
  if (send_to != 0) {
    v.sends.push_back(ev::Peer{send_to, {}});
    v.sends.back().bytes.add(4096);
  }
  n.element.variants.push_back(std::move(v));
  return n;
}

// The shape of a sequence, e.g. "a b (c d)x50 e".
std::string shape(const std::vector<ev::Node>& nodes) {
  std::string out;
  for (const ev::Node& n : nodes) {
    if (!out.empty()) out += ' ';
    out += n.is_loop() ? "(" + shape(n.body) + ")x" + std::to_string(n.count) : n.element.task;
  }
  return out;
}

TEST(Evtrace, TailThatRepeatsBecomesALoop) {
  ev::Compressor c;
  c.append(op("a"));
  c.append(op("b"));
  for (int i = 0; i < 50; ++i) {
    c.append(op("c"));
    c.append(op("d"));
  }
  c.append(op("e"));
  EXPECT_EQ(shape(c.nodes()), "a b (c d)x50 e");
  EXPECT_EQ(c.nodes()[2].ops(), 100u);
}

TEST(Evtrace, NestedLoopsAndTrailingIterations) {
  ev::Compressor c;
  for (int outer = 0; outer < 10; ++outer) {
    c.append(op("x"));
    for (int inner = 0; inner < 3; ++inner) c.append(op("y"));
  }
  c.append(op("x"));  // a trailing iteration cut short stays after the loop
  EXPECT_EQ(shape(c.nodes()), "(x (y)x3)x10 x");
}

TEST(Evtrace, ValuesOfALoopAreMergedNotRepeated) {
  ev::Compressor c;
  for (int i = 0; i < 1000; ++i) c.append(op("s", 0, 2, 1000 + std::uint64_t(i % 7) * 100));
  ASSERT_EQ(c.nodes().size(), 1u);
  const ev::Element& e = c.nodes()[0].body[0].element;
  EXPECT_EQ(e.point_ns.n, 2000u);
  EXPECT_EQ(e.point_ns.min, 1000u);
  EXPECT_EQ(e.point_ns.max, 1600u);
  EXPECT_LE(e.point_ns.bins.size(), 3u);  // half-octave bins: a few, whatever the count
}

TEST(Evtrace, DifferentShapesDoNotFold) {
  ev::Compressor c;
  c.append(op("s", 0, 2));
  c.append(op("s", 0, 3));           // another number of points: another shape
  c.append(op("s", 0, 2, 1000, 1));  // data to another shard: another shape
  EXPECT_EQ(c.nodes().size(), 3u);
}

TEST(Evtrace, SamplesStayWithinTheRecordedRange) {
  ev::Stat s;
  for (std::uint64_t v : {100u, 150u, 400u, 900u, 901u}) s.add(v);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 1000; ++i) {
    const double x = s.sample(rng);
    EXPECT_GE(x, 100.0);
    EXPECT_LE(x, 902.0);
  }
}

TEST(Evtrace, TextRoundTrip) {
  ev::Trace t;
  t.shards = 2;
  ev::Compressor c;
  c.append(op("init"));
  for (int i = 0; i < 20; ++i) c.append(op("step", 0, 2, 5000, 1));
  t.groups.push_back(ev::Group{{0}, c.take()});
  t.messages["data"].add(20);
  const std::string text = ev::write(t);
  const ev::Trace back = ev::parse(text);
  EXPECT_EQ(ev::write(back), text);
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(shape(back.groups[0].seq), "init (step)x20");
  const ev::Variant& v = back.groups[0].seq[1].body[0].element.variants[0];
  ASSERT_EQ(v.sends.size(), 1u);
  EXPECT_EQ(v.sends[0].offset, 1);
  EXPECT_EQ(v.sends[0].bytes.n, 20u);
}

TEST(Evtrace, MergeJoinsShardsOfOneShape) {
  // Four shards of a 1-d halo: the first sends right, the last left, the middle ones both.
  ev::Trace all;
  for (std::uint32_t s = 0; s < 4; ++s) {
    ev::Compressor c;
    for (int i = 0; i < 10; ++i) {
      ev::Node n = op("halo", s, 2, 1000);
      if (s > 0) n.element.variants[0].sends.push_back(ev::Peer{-1, {}});
      if (s < 3) n.element.variants[0].sends.push_back(ev::Peer{+1, {}});
      c.append(std::move(n));
    }
    ev::Trace one;
    one.shards = 4;
    one.groups.push_back(ev::Group{{s}, c.take()});
    if (s == 0)
      all = std::move(one);
    else
      ev::merge(all, std::move(one));
  }
  ASSERT_EQ(all.groups.size(), 1u);
  EXPECT_EQ(ev::ranks_text(all.groups[0].ranks), "0-3");
  const ev::Element& e = all.groups[0].seq[0].body[0].element;
  ASSERT_EQ(e.variants.size(), 3u);  // first, last, and the interior shards together
  EXPECT_EQ(e.point_ns.n, 80u);      // times merged over every shard and iteration
  bool interior = false;
  for (const ev::Variant& v : e.variants) interior = interior || ev::ranks_text(v.ranks) == "1-2";
  EXPECT_TRUE(interior);
}

TEST(Evtrace, MergeKeepsShardsOfOtherLoopsApart) {
  ev::Compressor a, b;
  for (int i = 0; i < 10; ++i) a.append(op("s", 0));
  for (int i = 0; i < 12; ++i) b.append(op("s", 1));
  ev::Trace t, u;
  t.groups.push_back(ev::Group{{0}, a.take()});
  u.groups.push_back(ev::Group{{1}, b.take()});
  ev::merge(t, std::move(u));
  EXPECT_EQ(t.groups.size(), 2u);
}

TEST(Evtrace, MalformedFilesNameTheLine) {
  try {
    ev::parse("reprise-evtrace 1\ngroup 0\n  loop 3\n    bogus\n");
    FAIL() << "no error";
  } catch (const reprise::Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ev::parse("not a trace\n"), reprise::Error);
  EXPECT_THROW(ev::parse("reprise-evtrace 1\ngroup 0\n  loop 2\n"), reprise::Error);  // unclosed
  EXPECT_THROW(ev::read_file("/nonexistent/trace.txt"), reprise::Error);
}

// A program with a loop, recorded: the file holds the loop with its count.
constexpr reprise::TaskID kStep = 9101;
void evtrace_step(reprise::TaskContext& tc) {
  auto a = tc.accessor<double, 1>(0, 0);
  for (auto p : reprise::Rect<1>(tc.domain(0))) a[p] = a[p] + 1.0;
}

TEST(Evtrace, RecordsTheProgramsLoop) {
  using namespace reprise;
  TaskRegistry::add(kStep, "evtrace_step", {cpu(evtrace_step)});
  const std::string path =
      (std::filesystem::temp_directory_path() / "reprise_test_evtrace.txt").string();
  std::filesystem::remove(path);
  reprise::run({"-ll:cpu", "1", "-lg:no_auto_tracing", "-lg:evtrace", path}, [](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {63}));
    Region r = ctx.create_region(is, ctx.create_field_space({{0, 8}}));
    Partition part = ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {3})));
    ctx.fill(r, 0, 0.0);
    for (int i = 0; i < 30; ++i) {
      IndexLauncher step(kStep, ctx.create_index_space(Rect<1>({0}, {3})));
      step.add(part, Projection::identity(), Privilege::ReadWrite, {0});
      ctx.execute(step);
    }
  });
  const ev::Trace t = ev::read_file(path);
  ASSERT_EQ(t.groups.size(), 1u);
  bool loop = false;
  for (const ev::Node& n : t.groups[0].seq)
    loop = loop ||
           (n.is_loop() && n.count >= 25 && n.body.size() == 1 &&
            n.body[0].element.task == "evtrace_step" && n.body[0].element.variants[0].points == 4);
  EXPECT_TRUE(loop) << ev::write(t);
  std::filesystem::remove(path);
}

}  // namespace
