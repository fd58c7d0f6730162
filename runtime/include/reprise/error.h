#pragma once
// reprise::Error: the one exception type the runtime throws for bad input.
#include <stdexcept>
#include <string>

namespace reprise {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace reprise
