#pragma once
// Runtime configuration: the -ll:/-lg:/-level flags, from the command line and REPRISE_ARGS.
#include <cstdint>
#include <string>
#include <vector>

namespace reprise::detail {

struct Config {
  int cpus = 1;             // -ll:cpu
  int utils = 1;            // -ll:util
  std::int64_t csize_mib = 1024;  // -ll:csize
  bool pin = true;          // -ll:pin
  int spin_us = 50;         // -ll:spin
  bool bounds_checks = false;  // -lg:bounds_checks
  bool inorder = false;        // -lg:inorder
  int window = 1024;           // -lg:window
  bool help = false;           // -lg:help
  int log_level = 4;           // -level
  std::string trace_dot_dir;   // -lg:trace:dot
  int max_templates = 8;       // -lg:trace:max_templates
};

struct ParsedArgs {
  Config config;
  std::vector<std::string> app_args;  // everything that is not a runtime flag
};

// Parses runtime flags out of args (REPRISE_ARGS is appended when use_env). An unknown
// -ll:/-lg: flag or a bad value throws reprise::Error naming it.
ParsedArgs parse_args(const std::vector<std::string>& args, bool use_env);
std::string flags_help();

}  // namespace reprise::detail
