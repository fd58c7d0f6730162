# The application thread's waits for -lg:window are 'wait' spans in the profile: a window of 4
# ops makes it wait far more often than one that never fills.
function(count_waits window out)
  set(json "${CMAKE_CURRENT_BINARY_DIR}/waits_w${window}_0.json")
  file(REMOVE "${json}")
  execute_process(COMMAND ${STENCIL} -nx 64 -ny 64 -px 2 -py 2 -iters 50 -ll:cpu 2
                          -lg:window ${window}
                          -lg:prof "${CMAKE_CURRENT_BINARY_DIR}/waits_w${window}_%.json"
                  OUTPUT_VARIABLE log RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "stencil -lg:window ${window} failed (${rc}):\n${log}")
  endif()
  execute_process(
    COMMAND ${PYTHON} -c "import json,sys; d=json.load(open(sys.argv[1])); e=d['traceEvents'] if isinstance(d,dict) else d; print(sum(1 for x in e if x.get('cat')=='wait' and x.get('ph')=='X'))" "${json}"
    OUTPUT_VARIABLE n OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not read ${json}")
  endif()
  set(${out} ${n} PARENT_SCOPE)
endfunction()
count_waits(4 small)
count_waits(100000 large)
math(EXPR more "${small} - ${large}")
if(more LESS 10)
  message(FATAL_ERROR "window of 4: ${small} wait spans; window of 100000: ${large} (want 10 more)")
endif()
message(STATUS "window waits: ${small} wait spans with a window of 4, ${large} without")
