//go:build !linux

package presence

// procScan is Linux-only: other systems have no /proc to read the working
// directory of another process from without extra privileges.
type procScan struct{}

func newProcScan(string) *procScan { return &procScan{} }

func (*procScan) inRepo(string) []proc { return nil }

func (*procScan) read(int) (proc, bool) { return proc{}, false }

func procStart(int) uint64 { return 0 }
