package procstat

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	ps, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ps.PPid != os.Getppid() {
		t.Errorf("PPid: got %d, want %d", ps.PPid, os.Getppid())
	}
	if ps.RSSKiB <= 0 || ps.HWMKiB < ps.RSSKiB || ps.AnonKiB+ps.FileKiB > ps.RSSKiB {
		t.Errorf("memory: RSS %d KiB, HWM %d, anon %d + file %d: want 0 < RSS <= HWM and anon + file <= RSS", ps.RSSKiB, ps.HWMKiB, ps.AnonKiB, ps.FileKiB)
	}
	if _, err := Read(-1); err == nil {
		t.Error("Read(-1): want an error")
	}
}

func TestDescendants(t *testing.T) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	// The exec of sleep may not have happened yet when Start returns.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := Descendants(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := got["sleep"]; ok {
			if s.RSSKiB <= 0 {
				t.Errorf("sleep's RSS: %d KiB", s.RSSKiB)
			}
			if _, ok := got["procstat.test"]; ok {
				t.Error("Descendants holds the root itself")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Descendants(self) = %v, want the sleep child", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
