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
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// stateFile is the on-disk form: policies, address groups and what is known
// of projects (ids, Cloud Armor tiers). Operations are not kept, so polling
// an operation from before a restart gets 404.
type stateFile struct {
	Policies      []*policy                       `json:"policies"`
	AddressGroups []*networksecurity.AddressGroup `json:"addressGroups,omitempty"`
	Projects      map[string]*projectInfo         `json:"projects,omitempty"`
	// Organization security policies; backend services, backend buckets
	// and network edge security services.
	OrgPolicies []*orgPolicy `json:"organizationSecurityPolicies,omitempty"`
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
	s.store.load(st.Policies)
	s.groups.Load(st.AddressGroups)
	s.store.loadProjects(st.Projects)
	s.store.loadMore(st)
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
	state := stateFile{Policies: s.store.all(), AddressGroups: s.groups.All(), Projects: s.store.allProjects()}
	s.store.saveMore(&state)
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
