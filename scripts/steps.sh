# Step timing for scripts/test and scripts/test-broker; sourced, not a command.
#
#   step LABEL DESCRIPTION...   ends the previous step and prints a header with the wall
#                               time and the seconds since the script started
#   steps_summary NAME STATUS   prints one line: every step's duration (the step running
#                               when a failure stopped the script is marked "stopped")
#
# STEPS_MARK sets the header marker (scripts/test-broker's sub-steps use "-->").
steps_t0=$(date +%s)
steps_label=""
steps_from=$steps_t0
steps_done=()

# /dev/null must be the null device: once something replaced it with a regular file (seen on
# this machine), every `rustc -` probe cargo runs read that file's text as its stdin and the
# build failed with a misleading "failed to run rustc to learn about target-specific
# information". Checked at every step boundary: the step that broke it is named, and the
# device is restored when we are allowed to (root, as in CI), so one bad step cannot fail the rest.
steps_check_dev_null() { # where
  [ -c /dev/null ] && return 0
  echo "WARNING: /dev/null is not a character device ($1); restoring it" >&2
  if rm -f /dev/null && mknod -m 666 /dev/null c 1 3; then
    # cargo caches the failed probe; drop it so the next build probes afresh.
    rm -f "${CARGO_TARGET_DIR:-target}/.rustc_info.json"
    return 0
  fi
  echo "ERROR: cannot restore /dev/null (need root): builds will fail" >&2
  return 1
}
steps_check_dev_null "at start" || true

steps_end() { # [suffix]
  [ -n "$steps_label" ] || return 0
  steps_check_dev_null "after step $steps_label" || true
  steps_done+=("$steps_label $(( $(date +%s) - steps_from ))s${1:-}")
  steps_label=""
}

step() {
  steps_end
  steps_label=$1
  shift
  steps_check_dev_null "before step $steps_label"
  steps_from=$(date +%s)
  printf '\n%s [%s +%ss] %s\n' "${STEPS_MARK:-==>}" "$(date -u +%H:%M:%S)" \
    "$(( steps_from - steps_t0 ))" "$*"
}

steps_summary() { # name status
  if [ "$2" -ne 0 ]; then steps_end " (stopped)"; else steps_end; fi
  local line="" s
  for s in "${steps_done[@]}"; do line+="${line:+, }$s"; done
  printf '%s: %s; total %ss\n' "$1" "${line:-none}" "$(( $(date +%s) - steps_t0 ))"
}
