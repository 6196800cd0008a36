package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/editguard/editguard"
)

var completionCmd = &command{
	name:    "completion",
	args:    "bash|zsh|fish | --list shells|clients|sessions|versions [PATH]",
	summary: "print a shell completion script",
	help: `Completion prints a script that completes editguard's commands and
their flags in the shell named, file names where a command takes a path,
and the arguments that are names: the shell of completion, the client of
init, the session of --session (those that kept reads in the workspace
and those of its latest ledger records) and the version of restore and
diff (the history of the PATH before it). The script asks "editguard
completion --list" for those that depend on the workspace: it prints the
candidates, one to a line, and creates nothing. Load the script from the
shell's start-up file:

  bash   source <(editguard completion bash)      in ~/.bashrc
  zsh    source <(editguard completion zsh)       in ~/.zshrc
  fish   editguard completion fish | source       in ~/.config/fish/config.fish

The script is made from the commands and flags of this editguard: print it
again after an upgrade.`,
}

func runCompletion(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(completionCmd.name)
	list := fs.String("list", "", "print the candidates for `WHAT`, one to a line: shells, clients, sessions, or versions of PATH")
	pos, err := parseCommand(e, completionCmd, fs, args)
	if err != nil {
		return err
	}
	if *list != "" {
		return listCandidates(e, *list, pos)
	}
	if len(pos) != 1 {
		return usagef(completionCmd.name, "completion takes one shell: bash, zsh or fish")
	}
	sets := flagSets(ctx)
	var b strings.Builder
	switch pos[0] {
	case "bash":
		err = bashCompletion(&b, sets)
	case "zsh":
		// zsh runs bash's completion functions through bashcompinit.
		fmt.Fprintln(&b, "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit")
		err = bashCompletion(&b, sets)
	case "fish":
		err = fishCompletion(&b, sets)
	default:
		return usagef(completionCmd.name, "unknown shell %q: use bash, zsh or fish", pos[0])
	}
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]any{"shell": pos[0], "script": b.String()})
	}
	_, err = io.WriteString(e.stdout, b.String())
	return err
}

// listCandidates prints what completion --list what asks for.
func listCandidates(e *env, what string, pos []string) error {
	var names []string
	switch what {
	case "shells":
		names = []string{"bash", "zsh", "fish"}
	case "clients":
		names = initClientNames(initClients)
	case "sessions":
		names = e.sessionNames()
	case "versions":
		if len(pos) != 1 {
			return usagef(completionCmd.name, "completion --list versions takes one PATH")
		}
		names = e.versionIDs(pos[0])
	default:
		return usagef(completionCmd.name, "--list takes shells, clients, sessions or versions, got %q", what)
	}
	if what != "versions" && len(pos) != 0 {
		return usagef(completionCmd.name, "completion --list %s takes no arguments", what)
	}
	if e.json {
		if names == nil {
			names = []string{}
		}
		return e.printJSON(map[string]any{"candidates": names})
	}
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	_, err := io.WriteString(e.stdout, b.String())
	return err
}

// hasState reports whether the root has editguard's state, so that
// completion reads it without creating it in a directory that had none.
func (e *env) hasState() bool {
	fi, err := os.Stat(filepath.Join(e.root, ".editguard"))
	return err == nil && fi.IsDir()
}

// completable reports whether name can be offered to a shell as it is:
// the characters of a session name or version ID, nothing a shell or a
// terminal would read otherwise.
func completable(name string) bool {
	return name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
}

// sessionNames returns, sorted, the sessions that kept reads in the
// workspace (.editguard/sessions/NAME.b) and those of its last 1,000
// ledger records (agents' sessions, which keep no reads there).
func (e *env) sessionNames() []string {
	if !e.hasState() {
		return nil
	}
	seen := map[string]bool{}
	if ents, err := os.ReadDir(filepath.Join(e.root, ".editguard", "sessions")); err == nil {
		for _, ent := range ents {
			if n, ok := strings.CutSuffix(ent.Name(), ".b"); ok && ent.IsDir() && completable(n) {
				seen[n] = true
			}
		}
	}
	if w, err := e.workspace(); err == nil {
		w.Log(editguard.LogFilter{Last: 1000}, func(r *editguard.LedgerRecord) error {
			if completable(r.Session) {
				seen[r.Session] = true
			}
			return nil
		})
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// versionIDs returns the history versions of the file p, newest first.
func (e *env) versionIDs(p string) []string {
	if !e.hasState() {
		return nil
	}
	w, err := e.workspace()
	if err != nil {
		return nil
	}
	vs, err := w.History(p)
	if err != nil {
		return nil
	}
	var ids []string
	for _, v := range vs {
		if completable(v.ID) {
			ids = append(ids, v.ID)
		}
	}
	return ids
}

// flagSets returns the flag set of every command, by name, learnt by
// running each command's run function with env.collect set: parseCommand
// hands over the flag set the command defined and stops it there.
func flagSets(ctx context.Context) map[string]*flag.FlagSet {
	sets := make(map[string]*flag.FlagSet, len(commandList))
	for _, c := range commandList {
		e := &env{stdout: io.Discard, stderr: io.Discard}
		e.collect = func(fs *flag.FlagSet) { sets[c.name] = fs }
		c.run(ctx, e, nil)
		if sets[c.name] == nil {
			sets[c.name] = newFlagSet(c.name)
		}
	}
	return sets
}

// flagNames returns the names of fs's flags as help spells them ("--name",
// "-n"), and whether each takes a value.
func flagNames(fs *flag.FlagSet) (names []string, value map[string]bool) {
	value = map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		names = append(names, flagDash(f.Name))
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		value[flagDash(f.Name)] = !ok || !b.IsBoolFlag()
	})
	sort.Strings(names)
	return names, value
}

// globalFlags is a flag set of the global flags alone.
func globalFlags() *flag.FlagSet {
	fs := newFlagSet("editguard")
	(&env{}).addGlobalFlags(fs)
	return fs
}

func bashCompletion(w io.Writer, sets map[string]*flag.FlagSet) error {
	global, gvalue := flagNames(globalFlags())
	// Every flag that takes a value, of any command: its value is no
	// positional argument.
	valued := map[string]bool{}
	for n, v := range gvalue {
		if v {
			valued[n] = true
		}
	}
	var cases strings.Builder
	for _, c := range commandList {
		names, value := flagNames(sets[c.name])
		for n, v := range value {
			if v {
				valued[n] = true
			}
		}
		fmt.Fprintf(&cases, "    %s) flags=%q ;;\n", c.name, strings.Join(names, " "))
	}
	delete(valued, "--root") // read for its value, below
	withValue := make([]string, 0, len(valued))
	for n := range valued {
		withValue = append(withValue, n)
	}
	sort.Strings(withValue)
	_, err := fmt.Fprintf(w, `# bash completion for editguard (editguard completion bash)
_editguard() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev="" cmd="" i=1 w flags
  local -a args=() eg=("${COMP_WORDS[0]}")
  (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
  while (( i < COMP_CWORD )); do
    w=${COMP_WORDS[i]}
    case "$w" in
      --root) (( i + 1 < COMP_CWORD )) && eg+=(--root "${COMP_WORDS[i+1]}"); (( i++ )) ;;
      --root=*) eg+=("$w") ;;
      %s) (( i++ )) ;;
      -*) ;;
      *) if [[ -z $cmd ]]; then cmd=$w; else args+=("$w"); fi ;;
    esac
    (( i++ ))
  done
  if [[ $prev == --session ]]; then
    COMPREPLY=( $(compgen -W "$("${eg[@]}" completion --list sessions 2>/dev/null)" -- "$cur") )
    return
  fi
  if [[ -z $cmd ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=( $(compgen -W %q -- "$cur") )
    else
      COMPREPLY=( $(compgen -W %q -- "$cur") )
    fi
    return
  fi
  case "$cmd" in
%s    *) flags="" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
    return
  fi
  case "$cmd:${#args[@]}" in
    completion:0) COMPREPLY=( $(compgen -W "bash zsh fish" -- "$cur") ) ;;
    init:0) COMPREPLY=( $(compgen -W %q -- "$cur") ) ;;
    restore:1|diff:1) COMPREPLY=( $(compgen -W "$("${eg[@]}" completion --list versions -- "${args[0]}" 2>/dev/null)" -- "$cur") ) ;;
    *) COMPREPLY=( $(compgen -f -- "$cur") ) ;;
  esac
}
complete -o default -o bashdefault -F _editguard editguard
`, strings.Join(withValue, "|"), strings.Join(global, " "), strings.Join(commandNames(), " "), cases.String(), strings.Join(initClientNames(initClients), " "))
	return err
}

func commandNames() []string {
	var names []string
	for _, c := range commandList {
		names = append(names, c.name)
	}
	return names
}

func fishCompletion(w io.Writer, sets map[string]*flag.FlagSet) error {
	var b strings.Builder
	b.WriteString("# fish completion for editguard (editguard completion fish)\n")
	// Every flag that takes a value, of any command: its value is no
	// positional argument.
	valued := map[string]bool{}
	for _, c := range commandList {
		_, value := flagNames(sets[c.name])
		for n, v := range value {
			if v {
				valued[n] = true
			}
		}
	}
	_, gvalue := flagNames(globalFlags())
	for n, v := range gvalue {
		if v {
			valued[n] = true
		}
	}
	withValue := make([]string, 0, len(valued))
	for n := range valued {
		withValue = append(withValue, n)
	}
	sort.Strings(withValue)
	fmt.Fprintf(&b, `# The command and its positional arguments so far, one to a line.
function __fish_editguard_args
    set -l tokens (commandline -opc)
    set -l skip 0
    for t in $tokens[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $t
            case %s
                set skip 1
            case '-*'
            case '*'
                echo $t
        end
    end
end
# Whether the command is one of $argv[2..-1] with $argv[1] arguments so far.
function __fish_editguard_at
    set -l a (__fish_editguard_args)
    test (count $a) -eq (math $argv[1] + 1); and contains -- $a[1] $argv[2..-1]
end
# The candidates completion --list gives, in the workspace of --root.
function __fish_editguard_list
    set -l tokens (commandline -opc)
    set -l eg $tokens[1]
    for i in (seq 2 (math (count $tokens) - 1))
        if test $tokens[$i] = --root
            set eg $eg --root $tokens[(math $i + 1)]
        end
    end
    $eg completion --list $argv 2>/dev/null
end
`, strings.Join(withValue, " "))
	for _, c := range commandList {
		fmt.Fprintf(&b, "complete -c editguard -n __fish_use_subcommand -f -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	gfs := globalFlags()
	gfs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(&b, "complete -c editguard %s%s -d %s\n", fishOption(f), fishValue(f), fishQuote(usageLine(f.Usage)))
	})
	for _, c := range commandList {
		sets[c.name].VisitAll(func(f *flag.Flag) {
			if gfs.Lookup(f.Name) != nil && globalUsage[f.Name] == f.Usage {
				return
			}
			fmt.Fprintf(&b, "complete -c editguard -n '__fish_seen_subcommand_from %s' %s%s -d %s\n", c.name, fishOption(f), fishValue(f), fishQuote(usageLine(f.Usage)))
		})
	}
	b.WriteString(`complete -c editguard -n '__fish_editguard_at 0 completion' -f -a 'bash zsh fish'
`)
	fmt.Fprintf(&b, "complete -c editguard -n '__fish_editguard_at 0 init' -f -a %s\n", fishQuote(strings.Join(initClientNames(initClients), " ")))
	b.WriteString(`complete -c editguard -n '__fish_editguard_at 1 restore diff' -f -a '(__fish_editguard_list versions -- (__fish_editguard_args)[2])'
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// fishOption names the flag f for fish's complete: -l name, or -s n for
// a flag of one letter.
func fishOption(f *flag.Flag) string {
	if len(f.Name) == 1 {
		return "-s " + f.Name
	}
	return "-l " + f.Name
}

// fishValue is " -r" for a flag that takes a value, and for --session
// the sessions to choose from too.
func fishValue(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	if f.Name == "session" {
		return " -x -a '(__fish_editguard_list sessions)'"
	}
	return " -r"
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// usageLine is a flag's usage for a short description: its first line,
// without the backquotes that name the value.
func usageLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.ReplaceAll(line, "`", "")
}

// didYouMean suggests the command nearest to name, a command that does
// not exist, or says nothing when none is near: within two edits (one for
// a name of four letters or fewer), or name a prefix of exactly one
// command.
func didYouMean(name string) string {
	best, bestD := "", 3
	if len(name) <= 4 {
		bestD = 2
	}
	var prefixed []string
	for _, c := range commandList {
		if strings.HasPrefix(c.name, name) {
			prefixed = append(prefixed, c.name)
		}
		if d := editDistance(name, c.name); d < bestD {
			best, bestD = c.name, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions) between a and b, as bytes.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
