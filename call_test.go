package editguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/editguard/editguard"
)

// Every Session method that takes a context is a call. Those the ledger
// records one by one must be replayable: Replayer has a method of the same
// name and signature, less the context. The others say here why not.
func TestReplayerCoversSession(t *testing.T) {
	notReplayed := map[string]string{
		"Read":            "a read records a baseline, not a ledger record",
		"ReadShown":       "a read another program's tool made: a baseline, like Read",
		"CreateDirectory": "creating a directory displaces nothing and is not recorded",
		"ApplyPatch":      "a patch is a transaction: one record per file, replayed as a whole by nothing yet",
		"UndoPatch":       "a transaction, like ApplyPatch",
		"Guard":           "records another program's change (hooks), which has no result to replay",
		"Record":          "records another program's change (hooks), like Guard",
		"RecordNoWait":    "Record, answering before the fsync",
		"BeginCommand":    "records what a shell command changed after it ran, like Record: no call to replay",
		"Rewind":          "one change per file, chosen from the ledger as it stands when it runs",
		"Publish":         "its outcome is a git remote's: the branch it fetched and pushed to, which the ledger does not hold",
		"Pull":            "one change per file, chosen by comparing with a git remote's branch, which the ledger does not hold",
	}
	ctxType := reflect.TypeFor[context.Context]()
	st, rt := reflect.TypeFor[*editguard.Session](), reflect.TypeFor[*editguard.Replayer]()
	for i := range st.NumMethod() {
		m := st.Method(i)
		if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType {
			continue
		}
		if why, ok := notReplayed[m.Name]; ok {
			if _, has := rt.MethodByName(m.Name); has {
				t.Errorf("Replayer.%s exists, but the test says: %s", m.Name, why)
			}
			delete(notReplayed, m.Name)
			continue
		}
		r, ok := rt.MethodByName(m.Name)
		if !ok {
			t.Errorf("Session.%s has no Replayer.%s", m.Name, m.Name)
			continue
		}
		if r.Type.NumIn() != m.Type.NumIn()-1 || r.Type.NumOut() != m.Type.NumOut() {
			t.Errorf("Replayer.%s = %v, want Session.%s = %v less the context", m.Name, r.Type, m.Name, m.Type)
			continue
		}
		for j := 1; j < r.Type.NumIn(); j++ {
			if r.Type.In(j) != m.Type.In(j+1) {
				t.Errorf("Replayer.%s parameter %d is %v, want %v", m.Name, j, r.Type.In(j), m.Type.In(j+1))
			}
		}
		for j := range r.Type.NumOut() {
			if r.Type.Out(j) != m.Type.Out(j) {
				t.Errorf("Replayer.%s result %d is %v, want %v", m.Name, j, r.Type.Out(j), m.Type.Out(j))
			}
		}
	}
	for name := range notReplayed {
		t.Errorf("notReplayed names Session.%s, which is not a call", name)
	}
}

// Every field of every options struct is recorded: a call that sets it is
// told apart from one that does not.
func TestEveryOptionIsRecorded(t *testing.T) {
	for _, opts := range []any{&editguard.WriteOptions{}, &editguard.EditOptions{}, &editguard.RestoreOptions{},
		&editguard.DeleteOptions{}, &editguard.MoveOptions{}} {
		v := reflect.ValueOf(opts).Elem()
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			one := reflect.New(v.Type())
			switch fv := one.Elem().Field(i); fv.Kind() {
			case reflect.Bool:
				fv.SetBool(true)
			case reflect.String:
				fv.SetString("x")
			case reflect.Pointer:
				// A pointer set to its zero value is still set (nil is not):
				// false for create_parents, 0 for file_mode.
				fv.Set(reflect.New(fv.Type().Elem()))
				if p, ok := fv.Interface().(*editguard.Precondition); ok {
					p.ExpectedSHA256 = "ab"
				}
			default:
				t.Fatalf("%s.%s: kind %v not covered by this test", v.Type().Name(), f.Name, fv.Kind())
			}
			data, err := json.Marshal(one.Interface())
			if err != nil || string(data) == "{}" {
				t.Errorf("%s.%s set encodes as %s (%v): it would not be recorded", v.Type().Name(), f.Name, data, err)
			}
		}
	}
}

// Each replayable call, made with options, replays to its recorded result;
// the same call with an option changed diverges.
func TestReplayEveryCall(t *testing.T) {
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	writeFile(t, dir, "a.txt", "one\n")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	type call struct {
		name   string
		run    func() (*editguard.Result, error)
		replay func(r *editguard.Replayer) (*editguard.Result, error)
		other  func(r *editguard.Replayer) (*editguard.Result, error) // an option changed
	}
	var version string
	calls := []call{
		{"Write",
			func() (*editguard.Result, error) {
				return s.Write(ctx, "a.txt", "two\n", &editguard.WriteOptions{LineEnding: "crlf"})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) {
				return r.Write("a.txt", "two\n", &editguard.WriteOptions{LineEnding: "crlf"})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) { return r.Write("a.txt", "two\n", nil) }},
		{"Edit",
			func() (*editguard.Result, error) {
				return s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "two", NewString: "three"}}, &editguard.EditOptions{AllowPlaceholders: true})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) {
				return r.Edit("a.txt", []editguard.Edit{{OldString: "two", NewString: "three"}}, &editguard.EditOptions{AllowPlaceholders: true})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) {
				return r.Edit("a.txt", []editguard.Edit{{OldString: "two", NewString: "three"}}, &editguard.EditOptions{})
			}},
		{"Restore",
			func() (*editguard.Result, error) {
				return s.Restore(ctx, "a.txt", version, &editguard.RestoreOptions{DryRun: true})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) {
				return r.Restore("a.txt", version, &editguard.RestoreOptions{DryRun: true})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) { return r.Restore("a.txt", version, nil) }},
		{"Move",
			func() (*editguard.Result, error) {
				return s.Move(ctx, "a.txt", "b.txt", &editguard.MoveOptions{Overwrite: true})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) {
				return r.Move("a.txt", "b.txt", &editguard.MoveOptions{Overwrite: true})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) { return r.Move("a.txt", "b.txt", nil) }},
		{"Delete",
			func() (*editguard.Result, error) {
				return s.Delete(ctx, "b.txt", &editguard.DeleteOptions{Precondition: &editguard.Precondition{}})
			},
			func(r *editguard.Replayer) (*editguard.Result, error) { return r.Delete("b.txt", nil) },
			func(r *editguard.Replayer) (*editguard.Result, error) {
				return r.Delete("b.txt", &editguard.DeleteOptions{DryRun: true})
			}},
	}
	want := make([]*editguard.Result, len(calls))
	for i, c := range calls {
		res, err := c.run()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want[i] = res
		if i == 0 {
			version = res.BackupVersion
		}
	}
	for i, c := range calls {
		r, err := editguard.NewReplayer(w, "agent")
		if err != nil {
			t.Fatal(err)
		}
		for _, before := range calls[:i] {
			if _, err := before.replay(r); err != nil {
				t.Fatalf("replay before %s: %v", c.name, err)
			}
		}
		var div *editguard.ReplayDivergence
		if _, err := c.other(r); !errors.As(err, &div) || div.Reason != "args" {
			t.Errorf("%s with an option changed replayed as %v, want a divergence in args", c.name, err)
		}
		got, err := c.replay(r)
		if err != nil {
			t.Fatalf("replay %s: %v", c.name, err)
		}
		if got.SHA256 != want[i].SHA256 || got.BackupVersion != want[i].BackupVersion || got.DryRun != want[i].DryRun {
			t.Errorf("replay %s = %+v, want %+v", c.name, got, want[i])
		}
	}
}
