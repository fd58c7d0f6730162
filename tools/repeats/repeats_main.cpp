// reprise-repeats: the repeat finder on whitespace-separated tokens (any strings) from stdin.
// Prints one line per selected group, in selection order: its occurrences as start:end
// (0-based, end exclusive) separated by spaces. Nothing else goes to stdout.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "reprise_tracing/repeats.h"

namespace {
[[noreturn]] void usage(const std::string& msg, int code) {
  std::fprintf(stderr,
               "%s%susage: reprise-repeats [--min-length N] [--max-length N] [--min-repeats N] "
               "< tokens\n  defaults: 1, unbounded, 2\n",
               msg.c_str(), msg.empty() ? "" : "\n");
  std::exit(code);
}
std::size_t number(const std::string& flag, const char* v) {
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (!*v || *end || x < 1) usage("reprise-repeats: bad value for " + flag + ": " + v, 2);
  return std::size_t(x);
}
}  // namespace

int main(int argc, char** argv) {
  reprise::tracing::RepeatOptions opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") usage("", 0);
    if (i + 1 >= argc) usage("reprise-repeats: missing value for " + a, 2);
    if (a == "--min-length")
      opt.min_length = number(a, argv[++i]);
    else if (a == "--max-length")
      opt.max_length = number(a, argv[++i]);
    else if (a == "--min-repeats")
      opt.min_repeats = number(a, argv[++i]);
    else
      usage("reprise-repeats: unknown flag " + a, 2);
  }
  std::unordered_map<std::string, std::uint64_t> ids;
  std::vector<std::uint64_t> tokens;
  std::string tok;
  while (std::cin >> tok) tokens.push_back(ids.emplace(tok, ids.size()).first->second);
  for (const auto& g : reprise::tracing::find_repeats(tokens, opt)) {
    std::string line;
    for (const auto& o : g.occurrences) {
      if (!line.empty()) line += ' ';
      line += std::to_string(o.start) + ":" + std::to_string(o.end);
    }
    std::puts(line.c_str());
  }
  return 0;
}
