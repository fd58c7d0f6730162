# Runs the control-replication checks: results on 2 and 4 ranks equal the single process's;
# failures end every rank with the error.
function(run_np np out_var rc_var)
  execute_process(COMMAND ${MPIRUN} -np ${np} --oversubscribe ${ARGN}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
  set(${out_var} "${out}${err}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

# `${PROGRAM} mode` (flags in ARGN) on np ranks, its output in `out`; fails unless it exits 0.
function(run_mode_np np mode)
  run_np(${np} out rc ${PROGRAM} ${mode} ${ARGN})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${mode} on ${np} ranks failed (exit ${rc}):\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# `${PROGRAM} mode` alone and on each rank count in ARGN must print the same `key=` value;
# leaves the last run's output in `out`.
function(same_as_one_process mode key)
  execute_process(COMMAND ${PROGRAM} ${mode} OUTPUT_VARIABLE single RESULT_VARIABLE rc)
  string(REGEX MATCH "${key}=[0-9a-f]+" want "${single}")
  if(NOT rc EQUAL 0 OR want STREQUAL "")
    message(FATAL_ERROR "${mode}, single process, failed: ${single}")
  endif()
  foreach(np ${ARGN})
    run_np(${np} out rc ${PROGRAM} ${mode} -ll:cpu 1)
    string(REGEX MATCH "${key}=[0-9a-f]+" got "${out}")
    if(NOT rc EQUAL 0 OR NOT got STREQUAL want)
      message(FATAL_ERROR "${mode} on ${np} ranks: '${got}' vs '${want}' (exit ${rc}):\n${out}")
    endif()
    message(STATUS "${mode}, ${np} ranks: ${got}")
  endforeach()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# The numbers N of the `key=N` lines the 8 shards of a run printed into `text`, as the list
# `var`; fails, naming the run `what`, unless every shard printed one.
function(shard_counts var text what key)
  string(REGEX MATCHALL "${key}=[0-9]+" found "${text}")
  list(LENGTH found n)
  if(NOT n EQUAL 8)
    message(FATAL_ERROR "${what} on 8 ranks: expected 8 shards' ${key}:\n${text}")
  endif()
  list(TRANSFORM found REPLACE "${key}=" "")
  set(${var} ${found} PARENT_SCOPE)
endfunction()

# Every one of the 8 shards' `key=N` in `text` lies within [lo, hi]; fails, naming the run
# `what` and saying what `expected`, otherwise.
function(shard_counts_within text what key lo hi expected)
  shard_counts(values "${text}" ${what} ${key})
  foreach(v ${values})
    if(v LESS ${lo} OR v GREATER ${hi})
      message(FATAL_ERROR "${what} on 8 ranks: a shard's ${key}=${v}, expected ${expected}:\n${text}")
    endif()
  endforeach()
  message(STATUS "${what}, 8 ranks: ${key} ${values}")
endfunction()

# The halo loop and the stencil: identical checksums on 1, 2 and 4 ranks, every trace mode.
same_as_one_process(ok checksum 2 4)
set(args -nx 97 -ny 131 -px 3 -py 5 -iters 60)
execute_process(COMMAND ${STENCIL} ${args} --trace none OUTPUT_VARIABLE single)
string(REGEX MATCH "checksum=[0-9a-f]+" want "${single}")
foreach(np 2 3 4 8)
  foreach(mode none manual auto)
    run_np(${np} out rc ${STENCIL} ${args} --trace ${mode} -ll:cpu 1)
    string(REGEX MATCH "checksum=[0-9a-f]+" got "${out}")
    if(NOT rc EQUAL 0 OR NOT got STREQUAL want OR NOT out MATCHES "verified=1")
      message(FATAL_ERROR "stencil on ${np} ranks, --trace ${mode}: '${got}' vs '${want}' (exit ${rc}):\n${out}")
    endif()
    # Traces replay under control replication (templates per shard, copies split in halves).
    if(mode STREQUAL "manual" AND NOT out MATCHES "coverage=(0\\.9|1\\.0)")
      message(FATAL_ERROR "stencil on ${np} ranks, --trace manual: expected coverage >= 0.9:\n${out}")
    endif()
    # Each rank's cost is on the RESULT line: shard 0 sends halo data (batched by the
    # progress thread, so less than one message per iteration is possible, none is not).
    if(NOT out MATCHES "msgs_per_iter=[0-9.]+ util_busy_us_per_iter=[0-9.]+ peers_heard=[1-9]"
       OR out MATCHES "msgs_per_iter=0\\.0 ")
      message(FATAL_ERROR "stencil on ${np} ranks, --trace ${mode}: no per-rank cost on RESULT:\n${out}")
    endif()
    # Halo data moves once per shard and iteration, and no more.
    string(REGEX MATCH "shard_bytes_per_iter=[0-9]+" moved "${out}")
    string(REGEX MATCH "halo_min_bytes_per_iter=[0-9]+" needed "${out}")
    string(REPLACE "shard_bytes_per_iter=" "" moved "${moved}")
    string(REPLACE "halo_min_bytes_per_iter=" "" needed "${needed}")
    if(NOT moved EQUAL needed)
      message(FATAL_ERROR "stencil on ${np} ranks, --trace ${mode}: ${moved} bytes moved per iteration, the halo needs ${needed}:\n${out}")
    endif()
    string(REGEX MATCH "coverage=[0-9.]+" cov "${out}")
    message(STATUS "stencil, ${np} ranks, --trace ${mode}: ${got} ${cov} ${moved} B/iteration")
  endforeach()
endforeach()

# Completions are not broadcast: on 8 ranks, a 1-d halo loop over two tiles per shard makes
# every shard hear from its one or two neighbours only (a broadcast would make it 7).
# (Untraced: 20 launches are enough for automatic tracing to record a trace, and a recording
# still analyses every point on every shard.)
run_mode_np(8 neighbours -ll:cpu 1 -lg:no_auto_tracing)
shard_counts_within("${out}" neighbours heard_from 1 2 "its 1 or 2 neighbours")
# Nor does a remote point cost a proxy: untraced, a shard's points and copy halves wait for
# its own work and their data only, so no event is made for another shard's point (one per
# remote point would be 20 × 14 = 280; one per point a dependence names, as until
# 2026-11-28, up to 80).
shard_counts_within("${out}" neighbours proxies 0 0 "no proxy of another shard's point")
# And no shard asks for another's completion at all (the halo data is every message).
shard_counts_within("${out}" neighbours requests 0 0 "no completion asked (waits by data)")

# Nor are a future map's values broadcast: a residual every iteration (a launch returning a
# double per tile, reduced, and one point picked) folds in point order, bit-identical on any
# number of ranks, with the values going up a binary tree of shards and the result down it:
# on 8 ranks a shard hears from its halo neighbours (2) and its tree neighbours (its parent and
# two children): at most 5; a broadcast of the values would make it 7.
same_as_one_process(residual residual 3 8)
shard_counts_within("${out}" residual heard_from 0 5 "at most 5 (values broadcast?)")
# Reading a map's points costs one round, however many are read: 10 iterations of a
# reduction and 17 gets (one picked point, then all 16) make 20 rounds on every shard (170 if
# each get were a round of its own).
shard_counts_within("${out}" residual value_rounds 20 20
                    "20 (one per reduction, one per map read)")

# A single task's completion (and value) reaches every shard down a tree rooted where it ran:
# 40 single tasks, all on shard 0, whose values every shard reads, cost shard 0 two messages
# each (80), no shard more than three per task; a broadcast cost shard 0 seven each (280).
run_mode_np(8 singles -ll:cpu 1)
shard_counts_within("${out}" singles sum 820 820 "820, the sum of the 40 tasks' values")
shard_counts_within("${out}" singles messages 0 120
                    "at most 3 per single task (completions broadcast?)")

# Replays and templates are per shard: with the same loop under a manual trace, each shard's
# replays set up only its own instructions and halves of copies (under half of the trace's
# points on 8 ranks; all of them if replays walked other shards' work), and its template
# holds no instruction for another shard's point far from its data (recorded for its writes
# only: fewer instructions than the trace has points; more if it held every shard's).
run_np(8 out rc ${PROGRAM} neighbours_traced -ll:cpu 1)
string(REGEX MATCHALL "replays=[0-9]+ replay_instructions=[0-9]+ here=[0-9]+ points_replayed=[0-9]+"
       lines "${out}")
list(LENGTH lines n)
if(NOT rc EQUAL 0 OR NOT n EQUAL 8)
  message(FATAL_ERROR "neighbours_traced on 8 ranks failed (exit ${rc}):\n${out}")
endif()
foreach(l ${lines})
  string(REGEX MATCH
         "replays=([0-9]+) replay_instructions=([0-9]+) here=([0-9]+) points_replayed=([0-9]+)" _
         "${l}")
  set(replays ${CMAKE_MATCH_1})
  set(all ${CMAKE_MATCH_2})
  set(here ${CMAKE_MATCH_3})
  set(points ${CMAKE_MATCH_4})
  math(EXPR here_x2 "${here} * 2")
  if(replays LESS 5 OR here EQUAL 0 OR NOT here_x2 LESS points OR NOT all LESS points)
    message(FATAL_ERROR "neighbours_traced on 8 ranks: ${l} (a shard's replays should set up under half of the trace's points, from a template of fewer instructions than the trace has points):\n${out}")
  endif()
endforeach()
message(STATUS "neighbours_traced, 8 ranks: ${lines}")
# Replays too wait by data: no instruction of a shard waits for another shard's point, within a
# replay or through the elision links of the next.
shard_counts_within("${out}" neighbours_traced requests 0 0 "no completion asked (waits by data)")
# Nor does a recording make a proxy for another shard's point (nothing waits for one; 56 per
# shard until 2026-11-28).
shard_counts_within("${out}" neighbours_traced proxies 0 0 "no proxy while recording")
# And a recording takes the other shards' points far from this shard's data for their writes
# only (-lg:shard_recording, on with -lg:shard_checks from 4 shards): ~50 per shard here.
shard_counts_within("${out}" neighbours_traced recorded_far 1 1000000 "far points recorded")
# Their writes deferred, as untraced (the halo launches write whole disjoint partitions): the
# recording applies only those its shard meets.
shard_counts_within("${out}" neighbours_traced recorded_deferred 1 1000000
                    "far points' writes deferred while recording")

# A divergent program, a failing task, and a divergence no completion message shows (rank 1
# issues two extra fences; its later ops pair up with same-shaped ops elsewhere, and the
# shards end up waiting for each other: the stall probe compares the op streams, and
# -lg:safe_ctrlrepl finds it at op 1024 and names the first differing op). Every rank reports
# the error and exits non-zero. Cases: mode|extra flag ("-": none)|expected text.
foreach(case "diverge|-|different programs" "throw|-|boom" "diverge_quiet|-|different programs"
        "diverge_quiet|-lg:safe_ctrlrepl|first difference at op #8: shard 0 issued index task 'step', shard 1 issued fence")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 mode)
  list(GET case 1 flag)
  list(GET case 2 text)
  if(flag STREQUAL "-")
    set(flag "")
  endif()
  run_np(2 out rc ${PROGRAM} ${mode} -ll:cpu 1 ${flag})
  string(REGEX MATCHALL "reprise: error: [^\n]*${text}" hits "${out}")
  list(LENGTH hits n)
  if(rc EQUAL 0 OR n LESS 2)
    message(FATAL_ERROR "'${mode} ${flag}' on 2 ranks: expected both ranks to fail with '${text}' (exit ${rc}, ${n} ranks reported):\n${out}")
  endif()
  message(STATUS "${mode} ${flag}: both ranks stopped with the error")
endforeach()

# A stalled shard says what it waits for (-lg:stall_report 1): the last tile's task sleeps
# 2.5 s before the checksum, which the other shard waits for.
run_np(2 out rc ${PROGRAM} slow -ll:cpu 1 -lg:stall_report 1)
if(NOT rc EQUAL 0 OR NOT out MATCHES "watchdog [0-9.]+ warning ctrlrepl. no op issued for 1 s [(]after [0-9]+ ops; [0-9]+ in flight[^)]*[)]: [^\n]*op #[0-9]+")
  message(FATAL_ERROR "slow with -lg:stall_report 1: expected a stall report naming an op (exit ${rc}):\n${out}")
endif()
message(STATUS "slow: the stalled shard reported what it waits for")

# Automatic tracing decides alike on every shard (Apophenia §5.1): rank 1's analyses are made
# slow, so only rank 1 waits for them; the shards agree on raising the ingestion delay, and
# take the same results in at the same ops, so both logs record the same decisions (which
# traces, where) and the same delay. (Without the agreement the logs differ.) Unbound ranks,
# so that oneTBB has a worker thread for the background analyses. Traces of 20 ops at least:
# no early probe (they mine inline) finds the loop, and the first slices on the ruler schedule
# are mined in the background (once the loop replays, the ops before its run are its first
# iterations: nothing left to mine).
set(dir "${CMAKE_CURRENT_BINARY_DIR}/late_agreement")
file(REMOVE_RECURSE "${dir}")
file(MAKE_DIRECTORY "${dir}")
set(s ${STENCIL} -nx 64 -ny 64 -px 2 -py 2 -iters 400 --trace auto -ll:cpu 1
      -lg:auto_trace:min_trace_length 20 -lg:auto_trace:log ${dir}/log)
execute_process(COMMAND ${STENCIL} -nx 64 -ny 64 -px 2 -py 2 -iters 400 --trace none
                OUTPUT_VARIABLE single)
string(REGEX MATCH "checksum=[0-9a-f]+" want "${single}")
execute_process(COMMAND ${MPIRUN} --bind-to none --oversubscribe -np 1 ${s} : -np 1 ${s}
                        -lg:auto_trace:analysis_delay_us 3000
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
string(REGEX MATCH "checksum=[0-9a-f]+" got "${out}")
if(NOT rc EQUAL 0 OR NOT got STREQUAL want)
  message(FATAL_ERROR "stencil, auto, slow analyses on rank 1: '${got}' vs '${want}' (exit ${rc}):\n${out}${err}")
endif()
foreach(r 0 1)
  file(STRINGS "${dir}/log.${r}" lines${r})
  list(FILTER lines${r} EXCLUDE REGEX "^#")
  file(STRINGS "${dir}/log.${r}" summary${r} REGEX "^# (ops|ingest_delay) ")
  string(REGEX MATCH "late [0-9]+" late${r} "${summary${r}}")
  string(REGEX MATCH "ingest_delay [0-9]+" delay${r} "${summary${r}}")
  string(REGEX MATCH "traces [0-9]+" traces${r} "${summary${r}}")
endforeach()
if(NOT lines0 STREQUAL lines1 OR NOT delay0 STREQUAL delay1)
  message(FATAL_ERROR "automatic tracing decided differently on the two shards (${delay0} vs ${delay1}); see ${dir}/log.0 and log.1")
endif()
if(late1 STREQUAL "late 0" OR traces1 STREQUAL "traces 0")
  message(FATAL_ERROR "the slow analyses on rank 1 were never late or nothing was traced: ${summary1}")
endif()
message(STATUS "auto tracing with slow analyses on rank 1: same decisions (${late0} / ${late1}, agreed ${delay0}, ${traces1})")
