# The profile's count of the timed window (reprise-prof --range window) equals the app's
# RESULT line: task points and coverage, with automatic tracing (which replays part of it).
set(json "${CMAKE_CURRENT_BINARY_DIR}/window_0.json")
file(REMOVE "${json}")
execute_process(COMMAND ${STENCIL} -nx 64 -ny 64 -px 2 -py 2 -iters 200 -warmup 3 --trace auto
                        -lg:prof "${CMAKE_CURRENT_BINARY_DIR}/window_%.json"
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stencil failed (${rc}):\n${out}")
endif()
string(REGEX MATCH "tasks=([0-9]+) " _ "${out}")
set(tasks "${CMAKE_MATCH_1}")
string(REGEX MATCH "coverage=([0-9.]+)" _ "${out}")
set(coverage "${CMAKE_MATCH_1}")
execute_process(COMMAND ${PYTHON} ${PROF} --range window "${json}"
                OUTPUT_VARIABLE summary RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "reprise-prof failed (${rc}):\n${summary}")
endif()
set(want "total: 1 shard[(]s[)], ${tasks} task points, [0-9]+ replayed, coverage ${coverage}")
if(NOT summary MATCHES "${want}")
  message(FATAL_ERROR "RESULT says tasks=${tasks} coverage=${coverage}; the profile:\n${summary}")
endif()
message(STATUS "window: ${tasks} task points, coverage ${coverage} in both")
