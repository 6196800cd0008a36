package main

import (
	"strings"
	"testing"
)

// TestInitHooksAddsSkillShellEvents: Claude Code settings that an earlier
// init --hooks wrote (Bash guarded, no PowerShell, no skill shell events)
// are reported by doctor; init --hooks brings them up to date in place,
// keeping the rest of the file, and doctor is then content.
func TestInitHooksAddsSkillShellEvents(t *testing.T) {
	root := t.TempDir()
	runInitJSON(t, root, "claude-code", "--hooks")
	hook := get(hookGroups(t, root, "claude-code", "PreToolUse")[0], "hooks").([]any)[0].(map[string]any)["command"].(string)
	earlier := `{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Write|Edit|MultiEdit|NotebookEdit|Bash", "hooks": [{"type": "command", "command": ` + string(mustJSON(hook)) + `}]}], ` +
		`"PostToolUse": [{"matcher": "Read|Write|Edit|MultiEdit|NotebookEdit|Bash", "hooks": [{"type": "command", "command": ` + string(mustJSON(hook)) + `}]}]}}`
	writeFile(t, root, claudeLocalSettings, earlier)

	_, rep := runDoctorJSON(t, root, "claude-code")
	var msgs []string
	for _, c := range findChecks(rep, "claude-code", "settings") {
		if !c.OK {
			msgs = append(msgs, c.Message)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"hooks.PreToolUse runs for PowerShell", "no editguard hook on hooks.PreSkillShellCommand"} {
		if !strings.Contains(all, want) {
			t.Errorf("doctor does not report %q:\n%s", want, all)
		}
	}

	f := runInitJSON(t, root, "claude-code", "--hooks").Files[0]
	if f.Action != "changed" || len(f.Added) != 5 {
		t.Fatalf("init over the earlier hooks: %+v", f)
	}
	checkHooks(t, root, "claude-code")
	if get(readJSON(t, root, claudeLocalSettings), "model") != "opus" {
		t.Errorf("the settings lost entries:\n%s", readFile(t, root, claudeLocalSettings))
	}
	_, rep = runDoctorJSON(t, root, "claude-code")
	for _, c := range findChecks(rep, "claude-code", "settings") {
		if !c.OK && strings.Contains(c.Message, "no editguard hook") {
			t.Errorf("after init, doctor: %s", c.Message)
		}
	}
}
