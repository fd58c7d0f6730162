# Warnings, sanitizers and helpers shared by every Reprise target.
set(REPRISE_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(REPRISE_WERROR)
  list(APPEND REPRISE_WARNINGS -Werror)
endif()

if(REPRISE_SANITIZE STREQUAL "address")
  # (C++ only: nvcc-compiled kernels stay uninstrumented.)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
elseif(REPRISE_SANITIZE STREQUAL "thread")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  # TSan cannot see synchronisation inside the uninstrumented oneTBB libraries: use malloc and
  # std::async there instead, so its reports are about our code.
  add_compile_definitions(REPRISE_PLAIN_MALLOC=1 REPRISE_NO_TBB_TASKS=1)
  add_link_options(-fsanitize=thread)
elseif(NOT REPRISE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "REPRISE_SANITIZE must be '', address or thread")
endif()
if(NOT REPRISE_SANITIZE STREQUAL "")
  add_compile_definitions(REPRISE_ASSERTS=1)  # the runtime's invariants (reprise_rt/assert.h)
endif()

# reprise_library(name SOURCES ... DEPS ...): a component library with our warnings.
function(reprise_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} ${ARG_SOURCES})  # static or shared by BUILD_SHARED_LIBS
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${REPRISE_WARNINGS}>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# reprise_executable(name SOURCES ... DEPS ...)
function(reprise_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${REPRISE_WARNINGS}>)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()
