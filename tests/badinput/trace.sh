#!/usr/bin/env bash
# `import-trace` on damaged torch.profiler traces (one damage each, beside a
# good two-rank pair): each refused naming the file, the event and what is
# wrong, never a schedule with a negative, vanished or made-up time or size.
#   trace.sh OVERLAPSIM SOURCE_DIR WORK_DIR
set -u
OSIM="$1" D="$2/tests/badinput/trace" W="$3"
. "$2/tests/badinput/common.sh"
mkdir -p "$W"
import() { rm -rf "$W/imp"; "$OSIM" import-trace "$@" -o "$W/imp"; }
import "$D/good.r0.json" "$D/good.r1.json" | grep -q '^ *2  collective all_reduce$' || { echo "FAIL good.r0.json good.r1.json: not imported"; exit 1; }
# A collective of a group of one rank, imported alone (it crashed the importer): a measured kernel.
import "$D/group-of-one.json" | grep -q '^ *1  kernel (NCCL, measured)$' || echo "FAIL group-of-one.json: not imported with its collective measured"
# One rank's damage, beside the other's good trace.
one() { import "$D/$1.json" "$D/good.r1.json"; }
gemm="traceEvents[4] (kernel 'gemm_kernel' at ts"
refuse "$D/kernel-dur-negative.json" ": error: $gemm 117 us): dur -500 us is negative" one kernel-dur-negative
refuse "$D/kernel-dur-huge.json" ": error: $gemm 117 us): dur 1e+300 us is over an hour" one kernel-dur-huge
refuse "$D/kernel-before-launch.json" ": error: $gemm -5000 us) starts 5030.000 us before traceEvents[3] (CUDA call 'cudaLaunchKernel' at ts 30 us), the call that launched it" one kernel-before-launch
copy="traceEvents[1] (gpu_memcpy 'Memcpy HtoD (Pinned -> Device)' at ts 16 us): args.bytes"
refuse "$D/memcpy-bytes-negative.json" ": error: $copy -1 is not a size" one memcpy-bytes-negative
refuse "$D/memcpy-bytes-huge.json" ": error: $copy 1e+30 is not a size" one memcpy-bytes-huge
refuse "$D/memcpy-bytes-text.json" ": error: $copy \"lots\" is not a size" one memcpy-bytes-text
refuse "$D/ts-nanoseconds.json" "if this trace's are nanoseconds, divide them by 1000" one ts-nanoseconds
refuse "$D/rank-negative.json" ": error: distributedInfo.rank is -1: ranks count from 0" one rank-negative
nccl="traceEvents[8] (kernel 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)' at ts 200 us)"
refuse "$D/nelems-negative.json" ": error: $nccl: args.In msg nelems -5 is not an element count (0 to 2^46)" one nelems-negative
refuse "$D/nelems-fraction.json" ": error: $nccl: args.In msg nelems 2.5 is not an element count" one nelems-fraction
refuse "$D/nelems-huge.json" ": error: $nccl: args.Out msg nelems 1e+30 is not an element count" one nelems-huge
refuse "$D/group-rank-20-digits.json" ": error: $nccl: args.Process Group Ranks \"[0, 99999999999999999999]\" names rank 99999999999999999999, past any job's" one group-rank-20-digits
refuse "$D/group-rank-outside-job.json" ": error: $nccl: args.Process Group Ranks \"[0, 5]\" names rank 5, outside the job's 2 ranks" one group-rank-outside-job
refuse "$D/group-without-own-rank.json" ": error: $nccl: args.Process Group Ranks \"[1]\" does not hold this trace's rank 0" one group-without-own-rank
refuse "$D/group-rank-negative.json" ": error: $nccl: args.Process Group Ranks \"[-1, 0]\" holds a negative rank" one group-rank-negative
refuse "$D/name-number.json" ": error: traceEvents[5]: name -5.5 is not a string" one name-number
refuse "$D/ph-boolean.json" ": error: traceEvents[4]: ph true is not a string" one ph-boolean
# The pair disagrees: the second file named.
refuse "$D/base-time-huge.json" ": error: baseTimeNanoseconds 9223372036854775807 is past any clock" import "$D/good.r0.json" "$D/base-time-huge.json"
refuse "$D/world-4.r1.json" ": error: distributedInfo.world_size 4 where $D/good.r0.json says 2: give the traces of one job" import "$D/good.r0.json" "$D/world-4.r1.json"
refuse "$D/days-apart.r1.json" ": error: it starts 2.0 days after $D/good.r0.json" import "$D/good.r0.json" "$D/days-apart.r1.json"
refuse "$D/all-gather.r1.json" ": error: collective 0 of group [0, 1] is all_gather of 2000 bytes" import "$D/good.r0.json" "$D/all-gather.r1.json"
[ ! -e "$W/imp" ] || echo "FAIL a refused import wrote $W/imp"
finish trace
