package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	// TempPrefix starts the name of every folder the harness makes in the
	// temporary folder.
	TempPrefix = "provider-cloudarmor-"
	// ownerFile in such a folder names the process that made it.
	ownerFile = ".owner"
)

// MkdirTemp makes a folder for this run in the temporary folder, named
// TempPrefix+pattern as os.MkdirTemp names it, and marks it with this process:
// a run killed before it could remove the folder leaves it, and the next
// node's start (Recover) removes it.
func MkdirTemp(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", TempPrefix+pattern)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(processID(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// processID names a live process by its PID and start time, so that a
// recycled PID is not taken for it; "" if there is no such process.
func processID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name, in parentheses, may hold spaces; the start time is
	// the 22nd field, the 20th after it.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b)[i+1:])
	if i < 0 || len(f) < 20 {
		return ""
	}
	return strconv.Itoa(pid) + " " + f[19]
}

// removeDeadTemps removes each folder MkdirTemp made in dir whose process is
// gone. Folders of live runs (a `make run` into a cluster of the user's, which
// takes no node lock) and any without the mark are left alone.
func removeDeadTemps(dir string, logf func(string, ...any)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), TempPrefix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		marked, live := TempOwner(p)
		if !marked || live {
			continue
		}
		logf("node: removing %s, left by a run that ended without removing it", p)
		if err := os.RemoveAll(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TempOwner reports whether dir carries MkdirTemp's mark, and whether the
// process it names still runs.
func TempOwner(dir string) (marked, live bool) {
	owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false, false
	}
	pid, _, _ := strings.Cut(string(owner), " ")
	n, err := strconv.Atoi(pid)
	return true, err == nil && processID(n) == string(owner)
}
