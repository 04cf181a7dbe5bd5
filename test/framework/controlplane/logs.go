package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Names of the log files in ControlPlane.LogDir.
const (
	APIServerLogFile = "kube-apiserver.log"
	EtcdLogFile      = "etcd.log"
)

// tailLines is how much of each log a start error or failed test shows:
// enough for the fatal message and its cause, short enough to read.
const tailLines = 30

// logFiles receives the processes' output. Plain files rather than pipes: exec
// hands an *os.File straight to the child, so no copying goroutine can block Stop,
// and the logs survive for a developer to read after `make run` misbehaves.
type logFiles struct {
	apiServer, etcd *os.File
}

func openLogFiles(dir string) (*logFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create log folder: %w", err)
	}
	open := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cannot create log file: %w", err)
		}
		return f, nil
	}
	kas, err := open(APIServerLogFile)
	if err != nil {
		return nil, err
	}
	etcd, err := open(EtcdLogFile)
	if err != nil {
		_ = kas.Close()
		return nil, err
	}
	return &logFiles{apiServer: kas, etcd: etcd}, nil
}

func (l *logFiles) close() {
	_ = l.apiServer.Close()
	_ = l.etcd.Close()
}

// tails returns the end of each non-empty log, formatted to append to an error.
func (l *logFiles) tails() string {
	var b bytes.Buffer
	for _, f := range []*os.File{l.apiServer, l.etcd} {
		if t := tail(f.Name(), tailLines); t != "" {
			fmt.Fprintf(&b, "\nlast lines of %s:\n%s", f.Name(), t)
		}
	}
	return b.String()
}

// tail returns up to n final lines of the file at path ("" if unreadable).
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
