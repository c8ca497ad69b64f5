//go:build linux

package presence

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// agentProcesses lists the processes under procfs, naming the agents.
// Processes of other users, or gone while being read, are skipped.
func agentProcesses(procfs string) []proc {
	des, err := os.ReadDir(procfs)
	if err != nil {
		return nil
	}
	var out []proc
	r := procReader{buf: make([]byte, 4096)}
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(procfs, de.Name())
		stat, err := r.read(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		comm, fields, ok := parseStat(stat)
		if !ok || len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		p := proc{pid: pid, ppid: ppid}
		var argv []string
		// A kernel thread has no command line: only its name can say
		// anything, and reading the empty file costs as much as the rest.
		if flags, err := strconv.ParseUint(fieldAt(fields, 6), 10, 64); err != nil || flags&pfKthread == 0 {
			cmdline, _ := r.read(filepath.Join(dir, "cmdline"))
			for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
				if len(a) > 0 {
					argv = append(argv, string(a))
				}
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

// pfKthread is the kernel thread flag of a process's flags (field 9 of
// /proc/<pid>/stat).
const pfKthread = 0x00200000

func fieldAt(fields []string, i int) string {
	if i < len(fields) {
		return fields[i]
	}
	return ""
}

// procReader reads small procfs files into one buffer (a result is valid
// until the next read), without the stat and the poller registration
// that os.ReadFile spends on each file: a scan reads two files for every
// process on the machine.
type procReader struct{ buf []byte }

func (r *procReader) read(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := syscall.Read(fd, r.buf[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		case m == 0:
			return r.buf[:n], nil
		}
		n += m
	}
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
