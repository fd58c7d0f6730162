#pragma once
// The message of the reprise::Error that f() throws, or "no error": tests look for words in
// it (EXPECT_NE(error_text(...).find("…"), npos)).
#include <reprise/error.h>

#include <string>

template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const reprise::Error& e) {
    return e.what();
  }
  return "no error";
}
