#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <cstdlib>

#include "reprise_rt/config.h"

using namespace reprise;
using reprise::detail::parse_args;

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

TEST(Flags, BadValuesAreErrors) {
  EXPECT_THROW(parse_args({"-ll:cpu", "zero"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:cpu", "0"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:cpu"}, false), Error);
  EXPECT_THROW(parse_args({"-level", "loud"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:numa", "0"}, false), Error);
  EXPECT_THROW(parse_args({"-ll:numa", "17"}, false), Error);
  EXPECT_EQ(parse_args({"-ll:numa", "4"}, false).config.numa, 4);
}

TEST(Flags, ReadsReproiseArgsFromTheEnvironment) {
  setenv("REPRISE_ARGS", "-ll:cpu 2 -lg:bounds_checks", 1);
  auto p = parse_args({"-lg:window", "64"}, true);
  unsetenv("REPRISE_ARGS");
  EXPECT_EQ(p.config.cpus, 2);
  EXPECT_TRUE(p.config.bounds_checks);
  EXPECT_EQ(p.config.window, 64);
}

TEST(Flags, TheCommandLineWinsOverReproiseArgs) {
  setenv("REPRISE_ARGS", "-ll:cpu 2 -lg:window 8 extra", 1);
  auto p = parse_args({"app", "-ll:cpu", "3"}, true);
  unsetenv("REPRISE_ARGS");
  EXPECT_EQ(p.config.cpus, 3);    // both set it: the command line
  EXPECT_EQ(p.config.window, 8);  // only the environment set it
  EXPECT_EQ(p.app_args, (std::vector<std::string>{"app", "extra"}));
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
