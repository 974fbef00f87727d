# Helpers the CLI test scripts source (tests/cli/*.sh). A script runs as
#   bash tests/cli/TOPIC.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE [ARGS...]
# and exits 0 with "TOPIC ok: CASE" as its last line, or 1 naming what failed. Each case
# writes under its own folder, WORK_DIR/TOPIC.CASE, emptied first ($W).
set -eu
osim=$(readlink -f "${1:?usage: $0 OVERLAPSIM REPO_ROOT WORK_DIR CASE}"); root=$(readlink -f "${2:?}"); W=$(readlink -m "${3:?}"); case=${4:?}
shift 4
me=$(basename "$0" .sh)
CFG=$root/configs DATA=$root/tests/data REF=$root/validate/reference
top=$W W=$W/$me.$case
rm -rf "$W" && mkdir -p "$W"

fail() { echo "$me $case: $*" >&2; exit 1; }
# has FILE PATTERN...: FILE holds a line matching each extended regular expression.
has() { local f=$1; shift; for p in "$@"; do grep -Eq -- "$p" "$f" || fail "$f: no line matches '$p'"; done; }
# refused RC MESSAGE CMD...: CMD exits RC (2: an input error) and its stderr holds MESSAGE (a fixed string).
refused() {
  local want=$1 says=$2 rc=0; shift 2
  "$@" > "$W/refused.out" 2> "$W/refused.err" || rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, not $want: $(cat "$W/refused.err")"
  grep -qF -- "$says" "$W/refused.err" || fail "$* did not say '$says': $(cat "$W/refused.err")"
}
# manifest FOLDER KEY: a value of FOLDER/manifest.yaml, KEY a top-level key or SECTION.KEY (e.g.
# calibration.file); a path resolved from FOLDER where the key names a file or folder. Read with awk,
# not a YAML library (a Python start is seconds on a loaded machine): plain and single-quoted scalars
# on the key's own line, as the manifests write them; a key not there fails the test.
manifest() {
  local v
  v=$(awk -v key="$2" 'BEGIN { n = split(key, k, ".") }
    n == 1 && index($0, k[1] ":") == 1 { print substr($0, length(k[1]) + 2); exit }
    n == 2 && /^[^ #]/ { sec = index($0, k[1] ":") == 1; next }
    n == 2 && sec && index($0, "  " k[2] ":") == 1 { print substr($0, length(k[2]) + 4); exit }' "$1/manifest.yaml")
  v=$(sed -E "s/^ +//; s/ +$//; s/^'(.*)'$/\1/; s/''/'/g" <<< "$v")
  [ -n "$v" ] || fail "$1/manifest.yaml: no $2"
  case $2 in topology | calibration.file | validation.timing_events | *.runs) v=$(readlink -m "$1/$v") ;; esac
  echo "$v"
}
ok() { echo "$me ok: $case"; }
