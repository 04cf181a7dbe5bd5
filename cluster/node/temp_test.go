package node

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRemoveDeadTemps(t *testing.T) {
	self := processID(os.Getpid())
	if self == "" {
		t.Fatal("processID of this process is empty")
	}
	cases := map[string]struct {
		reason string
		owner  string // "" writes no owner file
		gone   bool
	}{
		"provider-cloudarmor-local-live": {reason: "A folder of a live run stays.", owner: self},
		"provider-cloudarmor-local-dead": {reason: "A folder whose process is gone goes.", owner: "2147483646 1", gone: true},
		"provider-cloudarmor-local-recycled": {reason: "A live PID with another start time is another process: the folder goes.",
			owner: strconv.Itoa(os.Getpid()) + " 1", gone: true},
		"provider-cloudarmor-local-junk": {reason: "An unreadable mark is no live owner: the folder goes.", owner: "junk", gone: true},
		"provider-cloudarmor-node":       {reason: "A folder without the mark (the node's work directory) is not ours to judge."},
		"go-build1234":                   {reason: "Other folders are left alone.", owner: "2147483646 1"},
	}
	dir := t.TempDir()
	for name, tc := range cases {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if tc.owner != "" {
			if err := os.WriteFile(filepath.Join(dir, name, ownerFile), []byte(tc.owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := removeDeadTemps(dir, t.Logf); err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := os.IsNotExist(err); gone != tc.gone {
			t.Errorf("%s\n%s: gone %v, want %v", tc.reason, name, gone, tc.gone)
		}
	}
}

func TestMkdirTemp(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := MkdirTemp("local-")
	if err != nil {
		t.Fatal(err)
	}
	if err := removeDeadTemps(os.TempDir(), t.Logf); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	sort.Strings(got)
	if diff := cmp.Diff([]string{filepath.Base(dir)}, got); diff != "" {
		t.Errorf("a live run's folder must stay: -want, +got:\n%s", diff)
	}
}
