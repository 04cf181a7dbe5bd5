package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/backends"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/securitypolicies"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// stateFile is the on-disk form: policies, address groups and what is known
// of projects (ids, Cloud Armor tiers). Operations are not kept, so polling
// an operation from before a restart gets 404.
type stateFile struct {
	// Policies, projects and organization security policies.
	securitypolicies.SavedPolicies
	AddressGroups []*networksecurity.AddressGroup `json:"addressGroups,omitempty"`
	// Backend services, backend buckets and network edge security services.
	backends.Saved
}

// loadState reads Options.StateFile; a missing file is an empty state.
func (s *Server) loadState() error {
	if s.opts.StateFile == "" {
		return nil
	}
	b, err := os.ReadFile(s.opts.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read state file: %w", err)
	}
	var st stateFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep numbers inside rules exactly as they were sent
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("cannot parse state file %s: %w", s.opts.StateFile, err)
	}
	s.policies.Load(st.SavedPolicies)
	s.groups.Load(st.AddressGroups)
	s.store.mu.Lock()
	s.store.backends.LoadLocked(st.Saved)
	s.store.mu.Unlock()
	return nil
}

// saveState writes the state atomically (temp file + rename), so a crash
// never leaves a half-written file. Errors are logged, not fatal: the
// emulator keeps serving from memory.
func (s *Server) saveState() {
	if s.opts.StateFile == "" {
		return
	}
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	state := stateFile{SavedPolicies: s.policies.Save(), AddressGroups: s.groups.All()}
	s.store.mu.Lock()
	state.Saved = s.store.backends.SaveLocked()
	s.store.mu.Unlock()
	b, err := json.MarshalIndent(state, "", "  ")
	if err == nil {
		err = writeAtomic(s.opts.StateFile, b)
	}
	if err != nil {
		s.logf("cannot save state file %s: %v", s.opts.StateFile, err)
	}
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after a successful rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close() //nolint:errcheck,gosec // the write error is the one to report
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close() //nolint:errcheck,gosec // the sync error is the one to report
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
