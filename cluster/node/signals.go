package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// StopSignals are the ordinary ways a long command is stopped: Ctrl-C, kill,
// and closing its terminal. Each leads to the same full teardown.
var StopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// nohup is whether this process started with SIGHUP ignored, as nohup(1)
// starts one: its user asked it to outlive the terminal (and the shell that
// started it), so it keeps SIGHUP ignored and does not watch its parent.
// Read before anything calls signal.Notify, which would un-ignore it.
var nohup = signal.Ignored(syscall.SIGHUP)

// heededSignals are the StopSignals this process acts on.
func heededSignals() []os.Signal {
	var out []os.Signal
	for _, s := range StopSignals {
		if s == syscall.SIGHUP && nohup {
			continue
		}
		out = append(out, s)
	}
	return out
}

var brokenPipeOnce sync.Once

// SurviveBrokenPipe makes a write to a closed stdout or stderr fail with EPIPE
// instead of killing the process. Go's default kills a process that writes to
// a broken pipe on file descriptor 1 or 2 unless it is notified of SIGPIPE;
// `make run 2>&1 | tee log` stopped with Ctrl-C loses tee first, and the
// harness's next line would then end it before its teardown. Children still
// start with SIGPIPE's default action: a handler, unlike SIG_IGN, is not
// inherited across exec.
func SurviveBrokenPipe() {
	brokenPipeOnce.Do(func() {
		// Package signal never blocks on a full channel: nothing reads it.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	})
}

// NotifyContext returns a context that ends at the first of StopSignals, or
// when this process's parent is gone, and calls SurviveBrokenPipe. Every later
// signal is caught and only noted on stderr until stop is called: a second
// Ctrl-C during teardown must not end the process half way, with the host's
// sysctls still changed (SIGKILL still does; the next start then cleans up).
func NotifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	stopNotify := onStopSignal(cancel)
	return ctx, func() { stopNotify(); cancel() }
}

// onStopSignal calls first, in a goroutine of its own, at the first of
// StopSignals or when the parent is gone (watchParent), and catches every
// later signal until stop is called.
func onStopSignal(first func()) (stop func()) {
	SurviveBrokenPipe()
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, heededSignals()...)
	done := make(chan struct{})
	if !nohup {
		go watchParent(os.Getppid(), time.Second, done)
	}
	go func() {
		for seen := false; ; seen = true {
			select {
			case s := <-ch:
				if !seen {
					go first()
					continue
				}
				// The error is ignored: stderr may be gone.
				_, _ = fmt.Fprintf(os.Stderr, "%v: still tearing down, which finishes on its own\n", s)
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

// watchParent sends this process SIGHUP, as a closed terminal would, once its
// parent ppid is gone (it was given another): nothing else would stop a child
// whose parent died without passing a signal on, such as a test binary whose
// `go test` was killed with SIGTERM (go test catches only SIGINT and relies on
// the terminal to signal its child), or make run's program under a script
// killed with SIGKILL. Polled: PR_SET_PDEATHSIG follows the parent's thread,
// not its process.
func watchParent(ppid int, every time.Duration, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if os.Getppid() != ppid {
			_, _ = fmt.Fprintf(os.Stderr, "the parent process (%d) is gone: tearing down as on SIGHUP\n", ppid)
			_ = syscall.Kill(os.Getpid(), syscall.SIGHUP)
			return
		}
	}
}

// live is every node of this process that is up or coming up, for
// DownOnSignal; stopping is set once it tears them down, so that no test
// starts another meanwhile.
var live = struct {
	sync.Mutex
	nodes    map[*Node]bool
	stopping bool
}{nodes: map[*Node]bool{}}

// track adds n to live (up) or removes it. It refuses to add one once
// DownOnSignal is stopping the process.
func track(n *Node, up bool) bool {
	live.Lock()
	defer live.Unlock()
	if !up {
		delete(live.nodes, n)
		return true
	}
	if live.stopping {
		return false
	}
	live.nodes[n] = true
	return true
}

// stopTracking lists the nodes in live and refuses any more.
func stopTracking() []*Node {
	live.Lock()
	defer live.Unlock()
	live.stopping = true
	nodes := make([]*Node, 0, len(live.nodes))
	for n := range live.nodes {
		nodes = append(nodes, n)
	}
	return nodes
}

// DownOnSignal is for a process that boots nodes with Up and has no teardown
// of its own on a signal, such as a test binary: at the first of StopSignals
// (or when its parent is gone) it stops every Up in progress, tears down every
// node still up and exits with status 1. stop ends it.
func DownOnSignal() (stop func()) {
	return onStopSignal(func() {
		nodes := stopTracking()
		for _, n := range nodes {
			n.abortUp()
			if err := n.Down(); err != nil {
				_, _ = fmt.Fprintf(os.Stderr, "node teardown: %v\n", err)
			}
		}
		_, _ = fmt.Fprintf(os.Stderr, "stopped by a signal; %d node(s) torn down\n", len(nodes))
		os.Exit(1)
	})
}

// HangupDefault makes cmd start with SIGHUP's default disposition when this
// process has it ignored (run under nohup, as CI runners often do): an
// ignored signal stays ignored across exec, so a test of what a hangup does
// would otherwise test nothing. coreutils' env resets it and execs cmd's
// program in its place, under the same PID.
func HangupDefault(cmd *exec.Cmd) error {
	if !signal.Ignored(syscall.SIGHUP) {
		return nil
	}
	env, err := exec.LookPath("env")
	if err != nil {
		return err
	}
	cmd.Args = append([]string{"env", "--default-signal=HUP", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = env
	return nil
}

// HangupDefaultPrefix is what a shell command line starts a program with so
// that it gets SIGHUP's default disposition when this process has it ignored
// (see HangupDefault): a shell cannot reset a signal that was ignored when
// it started. Empty when SIGHUP is not ignored.
func HangupDefaultPrefix() string {
	if !signal.Ignored(syscall.SIGHUP) {
		return ""
	}
	return "env --default-signal=HUP "
}
