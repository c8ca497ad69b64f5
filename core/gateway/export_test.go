package gateway

import "time"

// SetFrameWriteTimeout sets how long the write of one frame of a run's
// stream may take, until restore.
func SetFrameWriteTimeout(d time.Duration) (restore func()) {
	old := frameWriteTimeout
	frameWriteTimeout = d
	return func() { frameWriteTimeout = old }
}
