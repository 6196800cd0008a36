package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

var completionCmd = &command{
	name:    "completion",
	args:    "bash|zsh|fish",
	summary: "print a shell completion script",
	help: `Completion prints a script that completes editguard's commands and
their flags in the shell named, and file names where a command takes a
path. Load it from the shell's start-up file:

  bash   source <(editguard completion bash)      in ~/.bashrc
  zsh    source <(editguard completion zsh)       in ~/.zshrc
  fish   editguard completion fish | source       in ~/.config/fish/config.fish

The script is made from the commands and flags of this editguard: print it
again after an upgrade.`,
}

func runCompletion(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(completionCmd.name)
	pos, err := parseCommand(e, completionCmd, fs, args)
	if err != nil {
		return err
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

// flagNames returns the names of fs's flags, "--" first, and whether each
// takes a value.
func flagNames(fs *flag.FlagSet) (names []string, value map[string]bool) {
	value = map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		names = append(names, "--"+f.Name)
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		value["--"+f.Name] = !ok || !b.IsBoolFlag()
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
	var withValue []string
	for _, n := range global {
		if gvalue[n] {
			withValue = append(withValue, n)
		}
	}
	var cases strings.Builder
	for _, c := range commandList {
		names, _ := flagNames(sets[c.name])
		fmt.Fprintf(&cases, "    %s) flags=%q ;;\n", c.name, strings.Join(names, " "))
	}
	_, err := fmt.Fprintf(w, `# bash completion for editguard (editguard completion bash)
_editguard() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i=1 w flags
  while (( i < COMP_CWORD )); do
    w=${COMP_WORDS[i]}
    case "$w" in
      %s) (( i++ )) ;;
      -*) ;;
      *) cmd=$w; break ;;
    esac
    (( i++ ))
  done
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
  else
    COMPREPLY=( $(compgen -f -- "$cur") )
  fi
}
complete -o default -o bashdefault -F _editguard editguard
`, strings.Join(withValue, "|"), strings.Join(global, " "), strings.Join(commandNames(), " "), cases.String())
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
	for _, c := range commandList {
		fmt.Fprintf(&b, "complete -c editguard -n __fish_use_subcommand -f -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	gfs := globalFlags()
	gfs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(&b, "complete -c editguard -l %s%s -d %s\n", f.Name, fishValue(f), fishQuote(usageLine(f.Usage)))
	})
	for _, c := range commandList {
		sets[c.name].VisitAll(func(f *flag.Flag) {
			if gfs.Lookup(f.Name) != nil && globalUsage[f.Name] == f.Usage {
				return
			}
			fmt.Fprintf(&b, "complete -c editguard -n '__fish_seen_subcommand_from %s' -l %s%s -d %s\n", c.name, f.Name, fishValue(f), fishQuote(usageLine(f.Usage)))
		})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fishValue is " -r" for a flag that takes a value.
func fishValue(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
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
