#!/usr/bin/env bash
# The documentation's examples and tables are what the binary does:
#   calibration_fields     docs/formats/calibration.md holds the table `overlapsim calibration-fields` prints
#   workload_blocks_example  the block language's example in docs/formats/workload.md runs as written,
#                          with tensor parallelism, Ulysses and phase offload; every shipped workload of
#                          another model runs
#   calibrate_how_to       docs/calibrate-your-node.md is a how-to: steps first, under 120 lines, the
#                          files it links and the script it runs there
#
#   bash tests/cli/docs.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
cd $root
case $case in
  calibration_fields)
    "$osim" calibration-fields > $W/fields.md
    test $(grep -c '^| `' $W/fields.md) -gt 60 || fail "60 fields or fewer"
    diff $W/fields.md <(sed -n '/^### overheads$/,$p' docs/formats/calibration.md) || fail "docs/formats/calibration.md's table differs" ;;
  workload_blocks_example)
    { echo 'name: doc-example'; echo 'model:'
      sed -n '/^  dims: {hidden: 3072, ffn: 12288, heads: 24, head_dim: 128, depth: 24}/,/^```/p' docs/formats/workload.md | sed '$d'
      echo 'tokens: 8192'; echo 'parallelism: {ulysses: 2, tp: 2}'; echo 'offload: {policy: phase}'; } > $W/doc-example.yaml
    "$osim" run $W/doc-example.yaml -t configs/topologies/h200x4-nvlink.yaml > $W/doc-example.txt
    has $W/doc-example.txt '^  model: 24 x block, 2.72 B parameters a rank'
    for f in flux1-dev-1024-h200x4 hunyuanvideo-720p-dgx-sp8-layerwise llama3-70b-prefill-dgx-tp8; do
      "$osim" run configs/workloads/$f.yaml --set steps=1 > /dev/null || fail "$f did not run"
    done ;;
  calibrate_how_to)
    D=docs/calibrate-your-node.md
    test $(wc -l < $D) -lt 120 || fail "$D has $(wc -l < $D) lines: a how-to stays under 120 (history goes to docs/journal/)"
    test "$(grep -m1 '^## ' $D)" = "## Steps" || fail "$D: the first section is '$(grep -m1 '^## ' $D)', not the steps"
    for l in $(grep -o '](\([^)#]*\))' $D | sed 's/^](//; s/)$//'); do test -e docs/$l || fail "$D links $l, which is not there"; done
    for c in $(grep -o 'validate/[a-z-]*\.sh' $D | sort -u); do test -x $c || fail "$D runs $c, which is not there"; done ;;
  *) fail "no case $case" ;;
esac
ok
