package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Live runs. While a run goes on, its evidence file (runs/<id>.json) holds
// a record marked running, with the time so far and the end of its output,
// rewritten as output arrives. Every process sharing the store sees it: the
// app's Workspaces screen shows a sidecar's run growing. The final record
// replaces it when the run ends; a run that could not happen removes it.
// The same moments feed RunRequest.OnProgress (the sidecar's progress
// notifications).

// RunProgress is a running run's state, as OnProgress is told it.
type RunProgress struct {
	RunID   string
	Elapsed time.Duration
	// OutputBytes counts all output so far, kept or not.
	OutputBytes int64
	// Truncated is set once output went past the run's output limit.
	Truncated bool
	// Stdout and Stderr are the last ProgressTailBytes of each stream's
	// kept output so far.
	Stdout, Stderr string
}

const (
	// ProgressTailBytes bounds the output each progress report carries
	// per stream.
	ProgressTailBytes = 4 << 10
	// liveTailBytes bounds the output a running record on disk holds per
	// stream (the final record has all that was kept).
	liveTailBytes = 64 << 10
	// progressMinGap is the shortest time between two reports caused by
	// output; progressHeartbeat the longest between two reports at all.
	progressMinGap    = 250 * time.Millisecond
	progressHeartbeat = time.Second
)

type liveRun struct {
	m     *Manager
	rec   RunResult // the record's fixed part
	cap   *capture
	start time.Time
	on    func(RunProgress)

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func (m *Manager) startLive(rec RunResult, c *capture, start time.Time, on func(RunProgress)) *liveRun {
	l := &liveRun{m: m, rec: rec, cap: c, start: start, on: on,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	l.rec.Running = true
	if err := m.saveRun(&l.rec); err != nil {
		m.log.Warn("workspace: cannot store a running run", "workspace", rec.WorkspaceID, "run", rec.ID, "err", err)
	}
	c.setKick(func() {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	})
	go l.loop()
	return l
}

func (l *liveRun) loop() {
	defer close(l.done)
	tick := time.NewTicker(progressHeartbeat)
	defer tick.Stop()
	var lastVer int64
	var lastEmit time.Time
	var gapC <-chan time.Time
	emit := func() {
		lastEmit = time.Now()
		var p RunProgress
		p, lastVer = l.snapshot(ProgressTailBytes)
		if l.on != nil {
			l.on(p)
		}
		rec := l.rec
		rec.DurationMS = p.Elapsed.Milliseconds()
		rec.Stdout, rec.Stderr, rec.Truncated, rec.OutputBytes, _ = l.cap.tail(liveTailBytes)
		if err := l.m.saveRun(&rec); err != nil {
			l.m.log.Warn("workspace: cannot store a running run", "workspace", rec.WorkspaceID, "run", rec.ID, "err", err)
		}
	}
	for {
		select {
		case <-l.kick:
			if since := time.Since(lastEmit); since >= progressMinGap {
				emit()
			} else if gapC == nil {
				gapC = time.After(progressMinGap - since)
			}
		case <-gapC:
			gapC = nil
			if l.cap.version() != lastVer {
				emit()
			}
		case <-tick.C:
			emit()
		case <-l.stop:
			// Output since the last report is reported before the result.
			if l.on != nil && l.cap.version() != lastVer {
				p, _ := l.snapshot(ProgressTailBytes)
				l.on(p)
			}
			return
		}
	}
}

func (l *liveRun) snapshot(tail int) (RunProgress, int64) {
	stdout, stderr, truncated, total, ver := l.cap.tail(tail)
	return RunProgress{RunID: l.rec.ID, Elapsed: time.Since(l.start), OutputBytes: total, Truncated: truncated, Stdout: stdout, Stderr: stderr}, ver
}

// finish stops the reports; the caller then writes the final record (or
// discard removes the running one).
func (l *liveRun) finish() {
	l.once.Do(func() {
		l.cap.setKick(nil)
		close(l.stop)
		<-l.done
	})
}

func (l *liveRun) discard() {
	l.finish()
	os.Remove(filepath.Join(l.m.runsDir(l.rec.WorkspaceID), l.rec.ID+".json"))
}

// tailString keeps the last n bytes of s, from a character boundary.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < 4 && i < len(s); i++ {
		if s[i]&0xC0 != 0x80 {
			return s[i:]
		}
	}
	return strings.ToValidUTF8(s, "")
}

// Verdict says in one line how a run ended, the limit it hit first: what
// a person or a model reads before the output.
func (r *RunResult) Verdict() string {
	d := time.Duration(r.DurationMS) * time.Millisecond
	var s string
	switch {
	case r.Running:
		s = "running for " + d.Round(100*time.Millisecond).String()
	case r.Interrupted:
		s = "interrupted: the process running it ended before the run did; there is no result"
	case r.TimedOut:
		s = "killed at its time limit (" + r.Limits.Timeout.String() + ") after " + d.Round(100*time.Millisecond).String()
	case r.OutputStopped:
		s = "stopped for flooding output: far more than its output cap after " + d.Round(100*time.Millisecond).String()
	case r.OOMKilled:
		s = "killed for using more than its memory limit after " + d.Round(100*time.Millisecond).String()
	default:
		s = "exited " + strconv.Itoa(r.ExitCode) + " after " + d.Round(100*time.Millisecond).String()
	}
	if r.Truncated {
		s += "; output went past the " + strconv.FormatInt(r.Limits.OutputBytes, 10) + "-byte cap: " +
			strconv.FormatInt(r.OutputBytes, 10) + " bytes in all, the first " + strconv.FormatInt(r.Limits.OutputBytes, 10) + " kept"
	}
	return s
}
