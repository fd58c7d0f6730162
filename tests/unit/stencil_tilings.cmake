# The stencil verifies at several tilings and worker counts, with bit-identical checksums.
# Runs with several memories (-ll:numa) must also have generated copies between them.
set(runs "-px 1 -py 1" "-px 2 -py 2" "-px 4 -py 1" "-px 3 -py 5" "-px 4 -py 4 -ll:cpu 2"
         "-px 2 -py 3 -lg:inorder" "-px 5 -py 2 -ll:cpu 2 -ll:util 2"
         "-px 4 -py 4 -ll:cpu 2 --trace manual" "-px 3 -py 2 --trace manual -lg:inorder"
         "-px 4 -py 4 -ll:cpu 2 --trace none" "-px 4 -py 4 -ll:cpu 2 --trace auto"
         "-px 2 -py 2 --trace auto -ll:util 2"
         "-px 4 -py 4 -ll:cpu 2 -ll:numa 2 --trace none"
         "-px 4 -py 4 -ll:cpu 2 -ll:numa 2 --trace manual"
         "-px 4 -py 4 -ll:cpu 2 -ll:numa 2 --trace auto"
         "-px 3 -py 5 -ll:cpu 4 -ll:numa 4 --trace none"
         "-px 3 -py 5 -ll:cpu 4 -ll:numa 4 -ll:util 2 --trace manual"
         "-px 2 -py 2 -ll:cpu 2 -ll:numa 2 -lg:inorder")
set(first "")
foreach(r IN LISTS runs)
  set(pretty "${r}")
  separate_arguments(args UNIX_COMMAND "${r}")
  execute_process(COMMAND ${STENCIL} -nx 97 -ny 131 -iters 120 ${args}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "stencil ${pretty} failed (${rc}): ${out}")
  endif()
  if(NOT out MATCHES "verified=1")
    message(FATAL_ERROR "stencil ${pretty} did not verify: ${out}")
  endif()
  string(REGEX MATCH "checksum=[0-9a-f]+" sum "${out}")
  string(REGEX MATCH "copies=[0-9]+" copies "${out}")
  if(r MATCHES "-ll:numa" AND copies STREQUAL "copies=0")
    message(FATAL_ERROR "stencil ${pretty}: several memories but no copies: ${out}")
  endif()
  if(first STREQUAL "")
    set(first "${sum}")
  elseif(NOT sum STREQUAL first)
    message(FATAL_ERROR "stencil ${pretty}: ${sum} differs from ${first}")
  endif()
  message(STATUS "stencil ${pretty}: ${sum} ${copies} verified")
endforeach()
