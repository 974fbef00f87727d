# The bad-input suite's one check, sourced by each input kind's script:
#   refuse FILE WANT COMMAND...
# COMMAND must exit 2 (an input refused: no crash, no internal error, no
# sanitizer report) with a message that starts with FILE (where) and holds
# WANT (what is wrong). `finish KIND` prints the count and sets the status.
refused=0 failed=0
refuse() {
  local file="$1" want="$2" err rc=0
  shift 2
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -ne 2 ]; then
    failed=$((failed + 1))
    printf 'FAIL %s: exit %s (a refusal exits 2)\n%s\n' "$file" "$rc" "$err"
  elif [[ "$err" != "$file"* || "$err" != *"$want"* ]]; then
    failed=$((failed + 1))
    printf 'FAIL %s: the message does not start with the file or lacks "%s":\n%s\n' "$file" "$want" "$err"
  else
    refused=$((refused + 1))
  fi
}
finish() {
  echo "$1: $refused bad inputs refused, $failed not"
  [ "$failed" -eq 0 ] && echo "$1 bad inputs: ok"
}
