//go:build linux

package presence

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// agentProcesses lists the processes under procfs, naming the agents.
// Processes of other users, or gone while being read, are skipped.
func agentProcesses(procfs string) []proc {
	des, err := os.ReadDir(procfs)
	if err != nil {
		return nil
	}
	var out []proc
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(procfs, de.Name())
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		comm, fields, ok := parseStat(stat)
		if !ok || len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		p := proc{pid: pid, ppid: ppid}
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		var argv []string
		for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
			if len(a) > 0 {
				argv = append(argv, string(a))
			}
		}
		p.agent = agentOf(comm, argv)
		if p.agent != "" {
			if cwd, err := os.Readlink(filepath.Join(dir, "cwd")); err == nil {
				if canon, err := filepath.EvalSymlinks(cwd); err == nil {
					cwd = canon
				}
				p.cwd = cwd
			}
		}
		out = append(out, p)
	}
	return out
}

// parseStat splits /proc/<pid>/stat into comm and the fields after it
// (fields[0] is the state, fields[1] the ppid). comm is in parentheses and
// may itself contain spaces and parentheses, so split at the last ')'.
func parseStat(b []byte) (string, []string, bool) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	return string(b[open+1 : end]), strings.Fields(string(b[end+1:])), true
}

// procStart is the process's start time (clock ticks after boot), 0 when
// unknown.
func procStart(pid int) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	_, fields, ok := parseStat(b)
	// starttime is field 22 of stat; fields here start at field 3.
	if !ok || len(fields) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(fields[19], 10, 64)
	return v
}
