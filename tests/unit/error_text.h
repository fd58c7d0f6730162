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

// Expects f to throw a reprise::Error whose message names `words` (a gtest assertion: the
// file using it includes gtest).
#define EXPECT_ERROR(f, words) \
  EXPECT_NE(error_text([&] { f; }).find(words), std::string::npos) << error_text([&] { f; })
