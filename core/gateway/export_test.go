package gateway

import "time"

// SetFrameWriteTimeout sets how long the write of one frame of a run's
// stream may take, until restore.
func SetFrameWriteTimeout(d time.Duration) (restore func()) {
	old := frameWriteTimeout
	frameWriteTimeout = d
	return func() { frameWriteTimeout = old }
}

// HoldRunEnds has every run's handler call f once its end frame is
// written, until restore.
func HoldRunEnds(f func()) (restore func()) {
	runEndedHook.Store(&f)
	return func() { runEndedHook.Store(nil) }
}
