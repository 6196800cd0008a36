package history

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The test binary re-executes itself as a helper process when
// HISTORY_TEST_HELPER is set; see helperMain.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HISTORY_TEST_HELPER"); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain saves HISTORY_TEST_N versions of HISTORY_TEST_PATH (forever if
// N is 0, printing each ID) into the store HISTORY_TEST_DIR. It waits for
// the file HISTORY_TEST_START to exist, so that all helpers start together.
func helperMain(mode string) int {
	dir, path, tag := os.Getenv("HISTORY_TEST_DIR"), os.Getenv("HISTORY_TEST_PATH"), os.Getenv("HISTORY_TEST_TAG")
	n, _ := strconv.Atoi(os.Getenv("HISTORY_TEST_N"))
	s, err := openAt(dir, &Options{KeepVersions: 1000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if start := os.Getenv("HISTORY_TEST_START"); start != "" {
		for {
			if _, err := os.Stat(start); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := 0; n == 0 || i < n; i++ {
		content := []byte(fmt.Sprintf("%s save %d\n", tag, i))
		v, err := s.Save(path, content, false, sumOf(content), Meta{Op: mode, Session: tag})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if n == 0 {
			fmt.Println(v.ID)
		}
	}
	return 0
}

// checkComplete verifies that path has exactly want versions with IDs
// v000001..want and that each loads with the content its session saved.
func checkComplete(t *testing.T, s *Store, path string, want int, contents map[string]bool) {
	t.Helper()
	list, err := s.List(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != want {
		t.Fatalf("List(%s) has %d versions, want %d", path, len(list), want)
	}
	seen := make(map[string]bool)
	for i, v := range list {
		if wantID := formatID(uint64(want - i)); v.ID != wantID {
			t.Fatalf("List(%s)[%d].ID = %s, want %s (IDs unique and gapless)", path, i, v.ID, wantID)
		}
		_, data, err := s.Load(path, v.ID)
		if err != nil {
			t.Fatalf("Load(%s) error: %v", v.ID, err)
		}
		if !contents[string(data)] || seen[string(data)] {
			t.Fatalf("Load(%s) = %q: unexpected or duplicated content", v.ID, data)
		}
		seen[string(data)] = true
	}
}

func TestConcurrentSaveGoroutines(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 1000})
	const workers, each = 8, 15
	contents := make(map[string]bool)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		for i := range each {
			contents[fmt.Sprintf("g%d save %d\n", w, i)] = true
		}
		wg.Go(func() {
			for i := range each {
				c := []byte(fmt.Sprintf("g%d save %d\n", w, i))
				if _, err := s.Save("shared.txt", c, false, sumOf(c), Meta{Op: "edit_file"}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkComplete(t, s, "shared.txt", workers*each, contents)
}

func helperCmd(t *testing.T, mode, dir, path, tag string, n int, start string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"HISTORY_TEST_HELPER="+mode, "HISTORY_TEST_DIR="+dir, "HISTORY_TEST_PATH="+path,
		"HISTORY_TEST_TAG="+tag, "HISTORY_TEST_N="+strconv.Itoa(n), "HISTORY_TEST_START="+start)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestConcurrentSaveProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	s, err := openAt(dir, &Options{KeepVersions: 1000})
	if err != nil {
		t.Fatal(err)
	}
	const procs, each = 3, 25
	start := filepath.Join(t.TempDir(), "start")
	contents := make(map[string]bool)
	var cmds []*exec.Cmd
	for p := range procs {
		tag := fmt.Sprintf("p%d", p)
		for i := range each {
			contents[fmt.Sprintf("%s save %d\n", tag, i)] = true
		}
		cmd := helperCmd(t, "save", dir, "shared.txt", tag, each, start)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}
	checkComplete(t, s, "shared.txt", procs*each, contents)
}

// TestPruneConcurrentWithSave runs Prune in a loop (KeepVersions 1) while
// other goroutines save a small set of contents to several paths, so that
// Save keeps reusing objects that Prune finds unreferenced. No saved version
// may lose its object.
func TestPruneConcurrentWithSave(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 1})
	contents := [][]byte{[]byte("alpha"), []byte("beta"), []byte("gamma")}
	const workers, each = 4, 30
	stop := make(chan struct{})
	var pruneErr error
	var prunes sync.WaitGroup
	prunes.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Prune(); err != nil {
				pruneErr = err
				return
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			path := fmt.Sprintf("f%d", w)
			for i := range each {
				c := contents[(w+i)%len(contents)]
				v, err := s.Save(path, c, false, sumOf(c), Meta{})
				if err != nil {
					errs <- err
					return
				}
				// The version just saved is the newest, so Prune keeps it:
				// its object must be loadable until the next Save.
				if _, data, err := s.Load(path, v.ID); err != nil || string(data) != string(c) {
					errs <- fmt.Errorf("Load(%s, %s) = %q, %v; want %q", path, v.ID, data, err, c)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	prunes.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if pruneErr != nil {
		t.Fatal(pruneErr)
	}
	if _, err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	for w := range workers {
		path := fmt.Sprintf("f%d", w)
		list, err := s.List(path)
		if err != nil || len(list) != 1 || list[0].ID != formatID(each) {
			t.Fatalf("List(%s) after final Prune = %v, %v; want only %s", path, ids(list), err, formatID(each))
		}
		if _, _, err := s.Load(path, list[0].ID); err != nil {
			t.Fatalf("Load(%s, %s): %v", path, list[0].ID, err)
		}
	}
}
