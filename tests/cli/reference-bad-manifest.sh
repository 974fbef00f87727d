#!/usr/bin/env bash
# A reference manifest with one mistake (the H200's, copied and edited) is
# refused before anything runs: exit 2, and an error naming the manifest's
# file:line:column and what is wrong.
#
#   bash tests/cli/reference-bad-manifest.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
#   CASE: bad_repeats | missing_runs | bad_manifest | no_sources | stages_without_requests
set -euo pipefail
osim=${1:?usage: reference-bad-manifest.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE}; root=${2:?}; work=${3:?}; case=${4:?}
case $case in
  bad_repeats) edit='s/repeats: .*/repeats: [programs-run-99]/'; says="programs 'repeats': no folder" ;;
  missing_runs) edit='s/^  runs: models$/  runs: models-9/'; says="models 'runs': no folder .*models-9" ;;
  bad_manifest) edit='s/^expected:/expectd:/'; says="unknown key 'expectd'" ;;
  no_sources) edit='s/^  sources: .*/  sources: []/'; says="calibration 'sources': expected a list" ;;
  stages_without_requests) edit='s/^expected:$/expected:\n  requests_stages: {median_pct: 5, worst_pct: 10}/'
    says="expected 'requests_stages': the manifest has no requests: section" ;;
  *) echo "reference-bad-manifest.sh: no case $case" >&2; exit 2 ;;
esac
dir=$work/bad-manifest-$case
rm -rf "$dir" && mkdir -p "$work" && cp -r "$root/validate/reference/h200" "$dir"
sed -i "$edit; s|\.\./\.\./\.\./|$root/|" "$dir/manifest.yaml"
cmp -s "$dir/manifest.yaml" "$root/validate/reference/h200/manifest.yaml" && { echo "reference-bad-manifest.sh: $case edited nothing" >&2; exit 1; }
rc=0; "$osim" reference "$dir" > "$dir.out" 2>&1 || rc=$?
cat "$dir.out"
test "$rc" = 2 || { echo "reference-bad-manifest.sh: exit $rc, not 2" >&2; exit 1; }
grep -Eq "manifest.yaml:[0-9]+:[0-9]+: error: $says" "$dir.out" || { echo "reference-bad-manifest.sh: no error saying $says" >&2; exit 1; }
echo "bad manifest refused: $case"
