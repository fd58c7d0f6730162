#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "reprise_rt/config.h"
#include "reprise_rt/log.h"

using namespace reprise;
using reprise::detail::parse_args;

namespace {
// REPRISE_ARGS set for a scope, and what was there before restored (the whole suite also runs
// with REPRISE_ARGS set: unit_tests_utility_thread).
class ScopedRepriseArgs {
 public:
  explicit ScopedRepriseArgs(const char* value) {
    if (const char* old = std::getenv("REPRISE_ARGS")) old_ = old;
    setenv("REPRISE_ARGS", value, 1);
  }
  ~ScopedRepriseArgs() {
    if (old_)
      setenv("REPRISE_ARGS", old_->c_str(), 1);
    else
      unsetenv("REPRISE_ARGS");
  }
  ScopedRepriseArgs(const ScopedRepriseArgs&) = delete;
  ScopedRepriseArgs& operator=(const ScopedRepriseArgs&) = delete;

 private:
  std::optional<std::string> old_;
};
}  // namespace

TEST(Flags, ParsesRuntimeFlagsAndLeavesTheRest) {
  auto p = parse_args({"-nx", "10", "-ll:cpu", "3", "-lg:inorder", "--trace", "none", "-level",
                       "debug", "-ll:csize", "64"},
                      false);
  EXPECT_EQ(p.config.cpus, 3);
  EXPECT_TRUE(p.config.inorder);
  EXPECT_EQ(p.config.log_level, 1);
  EXPECT_EQ(p.config.csize_mib, 64);
  EXPECT_EQ(p.app_args, (std::vector<std::string>{"-nx", "10", "--trace", "none"}));
}

TEST(Flags, UnknownFlagIsAnErrorNamingIt) {
  try {
    parse_args({"-ll:cpus", "2"}, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-ll:cpus"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_args({"-lg:bogus"}, false), Error);
}

TEST(Flags, WhetherTheNextWordIsAFlagsValue) {
  // As parse_args reads them: programs that pass runtime flags on ask this.
  using reprise::detail::runtime_flag_takes;
  EXPECT_TRUE(runtime_flag_takes("-ll:cpu", "2"));
  EXPECT_TRUE(runtime_flag_takes("-ll:app_cpu", "auto"));
  EXPECT_FALSE(runtime_flag_takes("-lg:inline_analysis", "-ll:app_cpu"));
  EXPECT_FALSE(runtime_flag_takes("-lg:no_inline_analysis", "1"));
  EXPECT_TRUE(runtime_flag_takes("-lg:safe_ctrlrepl", "1"));  // an optional number
  EXPECT_FALSE(runtime_flag_takes("-lg:safe_ctrlrepl", "-ll:cpu"));
  EXPECT_TRUE(runtime_flag_takes("-ll:no_such_flag", "3"));  // passed on: parse_args names it
}

TEST(Flags, BadValuesAreErrors) {
  EXPECT_THROW(parse_args({"-ll:cpu", "zero"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:cpu", "0"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:cpu"}, false), Error);
  EXPECT_THROW(parse_args({"-level", "loud"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:numa", "0"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:numa", "17"}, false), Error);
  EXPECT_EQ(parse_args({"-ll:numa", "4"}, false).config.numa, 4);
  EXPECT_THROW(parse_args({"-ll:nccl", "2"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:nccl", "yes"}, false), Error);
  // Per-shard recordings are safe only where the shards vote on every check.
  EXPECT_THROW(parse_args({"-lg:shard_recording", "1", "-lg:shard_checks", "0"}, false), Error);
  EXPECT_NO_THROW(parse_args({"-lg:shard_recording", "1", "-lg:shard_checks", "1"}, false));
  EXPECT_NO_THROW(parse_args({"-lg:shard_recording", "0", "-lg:shard_checks", "0"}, false));
  EXPECT_EQ(parse_args({}, false).config.nccl, 0);  // off unless asked for
  EXPECT_EQ(parse_args({"-ll:nccl", "auto"}, false).config.nccl, -1);
  EXPECT_EQ(parse_args({"-ll:nccl", "1"}, false).config.nccl, 1);
  EXPECT_EQ(parse_args({}, false).config.eager_wait_us, 200);
  EXPECT_EQ(parse_args({"-lg:eager_wait_us", "0"}, false).config.eager_wait_us, 0);
  EXPECT_THROW(parse_args({"-lg:eager_wait_us", "-1"}, false), Error);
  EXPECT_THROW(parse_args({"-lg:eager_wait_us", "10000001"}, false), Error);
  // The one-thread counters, eager launches and followed runs can be turned off, not forced on.
  for (const auto& [flag, member, refused] :
       {std::tuple{"-lg:alone", &detail::Config::alone, "1"},
        std::tuple{"-lg:eager", &detail::Config::eager, "yes"},
        std::tuple{"-lg:auto_trace:follow", &detail::Config::at_follow, "1"}}) {
    EXPECT_EQ(parse_args({}, false).config.*member, -1) << flag;
    EXPECT_EQ(parse_args({flag, "0"}, false).config.*member, 0) << flag;
    try {
      parse_args({flag, refused}, false);
      ADD_FAILURE() << flag << " " << refused << " accepted";
    } catch (const Error& e) {
      const std::string want = std::string(flag) + ": '" + refused + "': auto or 0";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(Flags, ReadsReproiseArgsFromTheEnvironment) {
  auto p = [] {
    ScopedRepriseArgs env("-ll:cpu 2 -lg:bounds_checks");
    return parse_args({"-lg:window", "64"}, true);
  }();
  EXPECT_EQ(p.config.cpus, 2);
  EXPECT_TRUE(p.config.bounds_checks);
  EXPECT_EQ(p.config.window, 64);
}

TEST(Flags, TheCommandLineWinsOverReproiseArgs) {
  auto p = [] {
    ScopedRepriseArgs env("-ll:cpu 2 -lg:window 8 extra");
    return parse_args({"app", "-ll:cpu", "3"}, true);
  }();
  EXPECT_EQ(p.config.cpus, 3);    // both set it: the command line
  EXPECT_EQ(p.config.window, 8);  // only the environment set it
  EXPECT_EQ(p.app_args, (std::vector<std::string>{"app", "extra"}));
}

// reprise::run reads REPRISE_ARGS as start does (unit_tests_utility_thread relies on it: until
// it did, that suite ran every test with the analysis inline, as unit_tests does).
TEST(Flags, RunReadsRepriseArgsAndItsOwnFlagsWin) {
  std::uint32_t cpus = 0;
  {
    ScopedRepriseArgs env("-ll:cpu 3 -lg:window 8");
    reprise::run({"-ll:cpu", "1"}, [&](Context& ctx) { cpus = ctx.num_cpus(); });
    EXPECT_EQ(cpus, 1u);  // both set it: run's flags
    reprise::run({}, [&](Context& ctx) { cpus = ctx.num_cpus(); });
    EXPECT_EQ(cpus, 3u);  // only the environment set it
  }
  ScopedRepriseArgs bad("-ll:cpus 2");
  try {
    reprise::run({"-ll:cpu", "1"}, [](Context&) {});
    FAIL() << "a bad flag in REPRISE_ARGS was ignored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-ll:cpus"), std::string::npos) << e.what();
  }
}

TEST(Flags, HelpListsEveryFlagWithItsDefault) {
  std::string h = detail::flags_help();
  for (const char* f : {"-ll:cpu", "-ll:util", "-ll:csize", "-lg:bounds_checks", "-lg:inorder",
                        "-lg:window", "-lg:help", "-level"})
    EXPECT_NE(h.find(f), std::string::npos) << f;
  EXPECT_NE(h.find("default"), std::string::npos);
}

TEST(Flags, AppArgsDropRuntimeFlags) {
  const char* argv[] = {"app", "-x", "1", "-ll:cpu", "2", "-lg:inorder", "y"};
  auto a = app_args(7, const_cast<char**>(argv));
  EXPECT_EQ(a, (std::vector<std::string>{"app", "-x", "1", "y"}));
}

// A Legion command line runs unchanged (issue "Fits a Legion user's habits").
TEST(Flags, LegionSpellings) {
  auto p = parse_args({"-lg:no_tracing",
                       "-lg:partcheck",
                       "-ll:nsize",
                       "512",
                       "-ll:numa",
                       "2",
                       "-ll:ncpu",
                       "3",
                       "-lg:safe_ctrlrepl",
                       "1",
                       "-logfile",
                       "run_%.log",
                       "-lg:autotrace:min_trace_length",
                       "25",
                       "-lg:auto_trace:repeats_algorithm",
                       "quick_matching_of_substrings",
                       "-lg:enable_automatic_tracing",
                       "-lg:inline_transitive_reduction",
                       "-ll:zsize",
                       "64",
                       "app-arg"},
                      false);
  EXPECT_TRUE(p.config.no_tracing);
  EXPECT_EQ(p.config.csize_mib, 512);
  EXPECT_EQ(p.config.cpus, 6) << "-ll:ncpu is per NUMA memory";
  EXPECT_TRUE(p.config.safe_ctrlrepl);
  EXPECT_EQ(p.config.log_file, "run_%.log");
  EXPECT_EQ(p.config.at_min_length, 25);
  EXPECT_EQ(p.config.zsize_mib, 64);  // Legion's zero-copy memory, here too (with -ll:gpu)
  ASSERT_EQ(p.config.notices.size(), 2u);
  EXPECT_NE(p.config.notices[0].find("-lg:partcheck"), std::string::npos);
  EXPECT_EQ(p.app_args, (std::vector<std::string>{"app-arg"}));
  // -lg:safe_ctrlrepl takes Legion's level only when one follows; 0 turns it off.
  EXPECT_EQ(parse_args({"-lg:safe_ctrlrepl", "-nx", "4"}, false).app_args,
            (std::vector<std::string>{"-nx", "4"}));
  EXPECT_TRUE(parse_args({"-lg:safe_ctrlrepl"}, false).config.safe_ctrlrepl);
  EXPECT_FALSE(parse_args({"-lg:safe_ctrlrepl", "0"}, false).config.safe_ctrlrepl);
  EXPECT_THROW(parse_args({"-lg:auto_trace:repeats_algorithm", "magic"}, false), Error);
  // The profiler: our file, or Legion's node count (with or without its log file).
  EXPECT_EQ(parse_args({"-lg:prof", "p_%.json"}, false).config.prof_file, "p_%.json");
  EXPECT_EQ(parse_args({"-lg:prof", "1"}, false).config.prof_file, "reprise_prof_%.json");
  EXPECT_EQ(parse_args({"-lg:prof_logfile", "x_%.json", "-lg:prof", "2"}, false).config.prof_file,
            "x_%.json");
  EXPECT_THROW(parse_args({"-lg:autotrace:bogus", "1"}, false), Error);
  const std::string h = detail::flags_help();
  EXPECT_NE(h.find("Legion's spellings"), std::string::npos);
  for (const char* f : {"-lg:no_tracing", "-lg:partcheck", "-ll:nsize", "-ll:ncpu", "-logfile"})
    EXPECT_NE(h.find(f), std::string::npos) << f;
}

TEST(Flags, LevelsPerCategory) {
  auto p = parse_args({"-level", "2,auto_trace=debug,ctrlrepl=5"}, false);
  EXPECT_EQ(p.config.log_level, 2);
  EXPECT_EQ(p.config.log_category_levels,
            (std::vector<std::pair<std::string, int>>{{"auto_trace", 1}, {"ctrlrepl", 5}}));
  try {
    parse_args({"-level", "legion_spy=2"}, false);
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown log category 'legion_spy'"), std::string::npos) << what;
    EXPECT_NE(what.find("auto_trace"), std::string::npos) << what;
  }
  EXPECT_THROW(parse_args({"-level", "tracing=loud"}, false), Error);
}

// Log lines name the shard, the thread, the time and the category, and go to a file per shard.
TEST(Flags, LogLinesToAFilePerShard) {
  namespace d = reprise::detail;
  const std::string dir = ::testing::TempDir();
  d::set_log_output(3, dir + "/reprise_log_%.txt");
  d::set_log_level(d::LogLevel::Warning);
  d::set_log_level(d::LogCategory::CtrlRepl, d::LogLevel::Debug);
  REPRISE_LOG_DEBUG(LogCategory::CtrlRepl, "hello {}", 42);
  REPRISE_LOG_DEBUG(LogCategory::Tracing, "not shown");
  d::set_log_output(0, "");  // back to stderr
  d::set_log_level(d::LogLevel::Warning);
  std::ifstream in(dir + "/reprise_log_3.txt");
  std::string line, all;
  while (std::getline(in, line)) all += line + "\n";
  // "[reprise s3 <thread> <seconds, 6 decimals> debug ctrlrepl] hello 42"
  std::istringstream words(all);
  std::string tag, shard, thread, seconds, level, category;
  words >> tag >> shard >> thread >> seconds >> level >> category;
  EXPECT_EQ(tag, "[reprise");
  EXPECT_EQ(shard, "s3");
  EXPECT_FALSE(thread.empty());
  const std::size_t dot = seconds.find('.');
  EXPECT_TRUE(dot != std::string::npos && seconds.size() - dot - 1 == 6) << seconds;
  EXPECT_EQ(level, "debug");
  EXPECT_EQ(category, "ctrlrepl]");
  EXPECT_EQ(all.substr(all.find(']') + 1), " hello 42\n") << all;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1) << "the tracing line is below its level";
  EXPECT_THROW(d::set_log_output(0, "/nonexistent-dir/x.log"), Error);
}
