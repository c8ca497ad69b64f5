//go:build !linux

package presence

// agentProcesses is Linux-only: other systems have no /proc to read the
// working directory of another process from without extra privileges.
func agentProcesses(string) []proc { return nil }

func procStart(int) uint64 { return 0 }
