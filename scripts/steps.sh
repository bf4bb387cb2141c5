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

steps_end() { # [suffix]
  [ -n "$steps_label" ] || return 0
  steps_done+=("$steps_label $(( $(date +%s) - steps_from ))s${1:-}")
  steps_label=""
}

step() {
  steps_end
  steps_label=$1
  shift
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
