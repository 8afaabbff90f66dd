#!/usr/bin/env bash
# The man page and shell completions that `vramtrace --generate-man` / `--generate-completion`
# write (and the build installs): the page renders with man(1) without warnings and documents
# every command and option that --help lists; the bash completion loads and completes commands,
# options and --format values; the zsh completion loads through compinit and completes in a real
# zsh (driven through tmux). Usage: check.sh VRAMTRACE_BINARY
set -uo pipefail
vt=${1:?usage: check.sh VRAMTRACE_BINARY}
work=$(mktemp -d)
trap 'tmux kill-session -t "vt-zsh-$$" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# --- man page
"$vt" --generate-man > "$work/vramtrace.1" || fail "--generate-man failed"
warnings=$(LC_ALL=C.UTF-8 groff -man -ww -z "$work/vramtrace.1" 2>&1)
[ -z "$warnings" ] || fail "groff warnings: $warnings"
page=$(MANWIDTH=200 LC_ALL=C.UTF-8 man -l "$work/vramtrace.1" 2>&1) || fail "man -l failed"
for section in NAME SYNOPSIS DESCRIPTION COMMANDS "EXIT STATUS" ENVIRONMENT "SEE ALSO"; do
  grep -q "^$section" <<<"$page" || fail "the man page has no $section section"
done
commands=$("$vt" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NF && !/Subcommands:/ {print $1}')
[ "$(wc -w <<<"$commands")" -ge 10 ] || fail "could not read the commands from --help: $commands"
for c in $commands; do
  grep -q "^   vramtrace $c " <<<"$page" || fail "the man page lacks the command $c"
  # Every option --help lists for the command is in its part of the page.
  part=$(awk -v c="   vramtrace $c " 'index($0, c) == 1 {on = 1; next} /^   vramtrace / {on = 0} on' <<<"$page")
  for opt in $("$vt" "$c" --help | grep -oE '^  (-[a-z],)?--[a-z-]+' | sed 's/^ *//; s/.*,//'); do
    grep -qe "$opt" <<<"$part" || fail "the man page's $c lacks $opt"
  done
done
grep -q "vramtrace run \[OPTIONS\] \[--\] CMD ARGS..." <<<"$page" || fail "run's usage is not in the page"

# --- bash
"$vt" --generate-completion bash > "$work/vramtrace.bash" || fail "--generate-completion bash failed"
out=$(bash --norc -c '
  source "$1" || exit 1
  complete -p vramtrace >/dev/null || { echo "not registered"; exit 1; }
  t() { COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _vramtrace; echo "${COMPREPLY[*]}"; }
  t vramtrace rep
  t vramtrace report --fo
  t vramtrace report --format ""
  t vramtrace diff --t
  t vramtrace run -- bas
  t vramtrace ""' _ "$work/vramtrace.bash" 2>&1) || fail "bash: $out"
mapfile -t got <<<"$out"
[ "${got[0]}" = "report" ] || fail "bash: 'vramtrace rep' -> '${got[0]}'"
[ "${got[1]}" = "--format" ] || fail "bash: 'report --fo' -> '${got[1]}'"
[ "${got[2]}" = "text json html" ] || fail "bash: 'report --format ' -> '${got[2]}'"
[ "${got[3]}" = "--top" ] || fail "bash: 'diff --t' -> '${got[3]}'"
grep -qw bash <<<"${got[4]}" || fail "bash: 'run -- bas' does not complete commands: '${got[4]}'"
for c in $commands; do grep -qw -- "$c" <<<"${got[5]}" || fail "bash: the command list lacks $c"; done

# --- zsh
command -v zsh >/dev/null || fail "zsh is not installed (scripts/deps.sh installs it)"
mkdir -p "$work/zfunc"
"$vt" --generate-completion zsh > "$work/zfunc/_vramtrace" || fail "--generate-completion zsh failed"
zsh -n "$work/zfunc/_vramtrace" || fail "zsh: syntax error in the completion"
reg=$(zsh -f -c "fpath=($work/zfunc \$fpath); autoload -Uz compinit; compinit -u -d $work/zcompdump; print -r -- \${_comps[vramtrace]}")
[ "$reg" = "_vramtrace" ] || fail "zsh: compinit did not register _vramtrace ('$reg')"
command -v tmux >/dev/null || fail "tmux is not installed (scripts/deps.sh installs it)"
cat > "$work/.zshrc" <<ZRC
fpath=($work/zfunc \$fpath)
autoload -Uz compinit && compinit -u -d $work/zcompdump
PS1='%% '
vramtrace() { :; }
ZRC
s="vt-zsh-$$"
tmux new-session -d -s "$s" -x 150 -y 20 "env ZDOTDIR=$work zsh -i" || fail "tmux could not start zsh"
sleep 1
tmux send-keys -t "$s" "vramtrace rep" Tab
screen=""
for _ in $(seq 50); do
  sleep 0.1
  screen=$(tmux capture-pane -p -t "$s")
  grep -q "vramtrace report" <<<"$screen" && break
done
grep -q "vramtrace report" <<<"$screen" || fail "zsh: 'vramtrace rep<Tab>' did not complete: $screen"
tmux send-keys -t "$s" C-u "vramtrace report --format " Tab Tab
for _ in $(seq 50); do
  sleep 0.1
  screen=$(tmux capture-pane -p -t "$s")
  grep -q "html" <<<"$screen" && grep -q "json" <<<"$screen" && break
done
grep -q "html" <<<"$screen" && grep -q "json" <<<"$screen" || fail "zsh: --format values not offered: $screen"
echo "PASS man page renders and documents every command and option; bash and zsh completions load and complete"
