#!/usr/bin/env bash
# validate/calibrate-node.sh without a GPU (its --fit-only half), called from another folder:
#   fit_only.MACHINE  --fit-only on a reference folder with a relative --out: the manifest's sources and
#                     topology fit the calibration the manifest names (configs/calibrations/) byte for
#                     byte, nothing is written into the reference folder, and the "use it" line's
#                     topology resolves from the caller's folder
#   paths             the caller's paths: a relative --out that cannot be measured into leaves no folder
#                     (there or at the root); --fit-only FROM fits gzipped results in FROM, the VAE
#                     steps' conv.json and channels-first.json among them, and a PCIe capture imports
#                     no nvlink_c2c link
#   c2c               a capture whose machine/nvidia-smi-c2c.txt lists GPU 0's C2C links (synthetic, beside
#                     the H100 SXM's bench: the wiring, not a GH200's numbers) imports an nvlink_c2c host link
#                     and fits the C2C engine caps; a topology.yaml edited since is kept on the next fit
#
#   bash tests/cli/calibrate-node.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
node() { OVERLAPSIM=$osim bash $root/validate/calibrate-node.sh "$@"; }
cd $W
case $case in
  fit_only.*)
    M=$REF/${case#fit_only.}
    node --fit-only $M --out fit > fit.txt
    C=$(manifest $M calibration.file)
    cmp fit/calibration.yaml $C || fail "not the calibration $C"
    T=$(sed -n 's/^use it: .* -t \(.*\) --calibration .*/\1/p' fit.txt)
    test -e "$T" || fail "'use it' names the topology '$T', which is not there from the caller's folder"
    test ! -e $M/calibration.yaml -a ! -e $M/report.txt || fail "wrote into $M" ;;
  paths)
    R=$REF/h100-sxm; mkdir res
    if ! command -v nvidia-smi > /dev/null; then
      refused 2 'no nvidia-smi' node --out nodir
      test ! -e nodir -a ! -e $root/nodir || fail "a run that could not measure left its --out folder"
    fi
    cp $R/bench-default.json.gz res/; gzip -c $R/attention.json > res/attention.json.gz; cp $R/bench-phase-2.json.gz res/
    cp $R/conv/conv.json.gz $R/channels-first/channels-first.json.gz res/
    mkdir res/machine; cp $REF/h200/machine/nvidia-smi-q.txt res/machine/  # a PCIe Hopper's: GPU C2C Mode Disabled
    node --fit-only res > fit.txt
    has res/calibration.yaml '^#   .*res/bench-default.json.gz$' '^#   .*res/attention.json.gz$' '^#   .*res/conv.json.gz$' \
      '^#   .*res/channels-first.json.gz$'
    has res/report.txt 'fitted from 4 files' '^  second run \(.*res/bench-phase-2.json.gz\)'
    test -s res/topology.yaml || fail "no topology.yaml"
    ! grep -q nvlink_c2c res/topology.yaml || fail "a PCIe capture imported with an nvlink_c2c link" ;;
  c2c)
    mkdir -p res/machine
    cp $REF/h100-sxm/bench-default.json.gz res/
    sed '/^GPU 1:/,$d' $DATA/nvidia-smi/gh200x2-synthetic-c2c.txt > res/machine/nvidia-smi-c2c.txt
    node --fit-only res > fit.txt
    has res/topology.yaml '^  - \{name: gpu_c2c-gpu0, role: gpu_c2c, a: gpu0, b: cpu0, kind: nvlink_c2c, bandwidth: 447.12 GB/s, latency: 0.5 us\}'
    cmp res/topology.yaml res/topology-imported.yaml || fail "topology.yaml is not the import"
    has res/topology.yaml "^name: topology$"
    has res/report.txt '^topology: .*res/topology.yaml \(imported: 1 GPUs; set the lines marked ASSUMED; its nvlink_c2c host links fit the C2C'
    has res/calibrate.txt "GPU 0's host link is nvlink_c2c: the rate is copy_engine_bandwidth_c2c"
    has res/calibration.yaml '^  copy_engine_bandwidth_c2c: 54\.[0-9]+ GB/s$' '^  copy_engine_bandwidth_c2c_d2h: 54\.[0-9]+ GB/s$'
    # Fitted again unedited: still the import.
    node --fit-only res > fit1.txt
    has res/report.txt '^topology: .*res/topology.yaml \(imported: 1 GPUs'
    # Edited since: kept and fitted with; the import goes beside it.
    sed -i 's/memory_bandwidth: 250 GB\/s/memory_bandwidth: 480 GB\/s/' res/topology.yaml
    node --fit-only res > fit2.txt
    has res/report.txt '^topology: .*res/topology.yaml \(yours, kept: it differs from the import in .*res/topology-imported.yaml; delete it'
    has res/topology.yaml 'memory_bandwidth: 480 GB/s'
    has res/topology-imported.yaml 'memory_bandwidth: 250 GB/s' ;;
  *) fail "no case $case" ;;
esac
ok
