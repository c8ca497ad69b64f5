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

// procScan reads, for one Detect, the processes under procfs that can
// matter to it. Every process on the machine is asked one thing, where it
// works (one readlink of /proc/<pid>/cwd, the cheapest read procfs offers:
// about a third of reading its stat and command line). What a process is
// (stat and command line) is read only for the processes working in the
// repository, their parents and this process's ancestors, each at most once
// per scan. Nothing is kept between scans, so no answer can be stale: a
// process that exec'd another program, or a pid reused by a new process, is
// read as it is now.
type procScan struct {
	procfs string
	r      procReader
	procs  map[int]proc
}

func newProcScan(procfs string) *procScan {
	return &procScan{procfs: procfs, r: procReader{buf: make([]byte, 4096)}, procs: map[int]proc{}}
}

// inRepo lists the processes whose working directory is repo or inside it,
// with that directory, canonical (pid and cwd only; read says the rest).
// Processes of other users, whose working directory cannot be read, and
// processes gone while listed are passed over.
func (s *procScan) inRepo(repo string) []proc {
	f, err := os.Open(s.procfs)
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	// Most processes share a few working directories: each is made
	// canonical once per scan.
	canon := map[string]string{}
	var out []proc
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		link, err := s.r.readlink(filepath.Join(s.procfs, name, "cwd"))
		if err != nil {
			continue
		}
		cwd, ok := canon[string(link)]
		if !ok {
			cwd = string(link)
			if c, err := filepath.EvalSymlinks(cwd); err == nil {
				cwd = c
			}
			canon[string(link)] = cwd
		}
		if within(cwd, repo) {
			out = append(out, proc{pid: pid, cwd: cwd})
		}
	}
	return out
}

// read returns pid's parent and the agent it is (cwd unset); false when
// it is gone or unreadable.
func (s *procScan) read(pid int) (proc, bool) {
	if pid <= 0 {
		return proc{}, false
	}
	p, ok := s.procs[pid]
	if !ok {
		p, ok = readProc(&s.r, filepath.Join(s.procfs, strconv.Itoa(pid)), pid)
		if !ok {
			p = proc{}
		}
		s.procs[pid] = p
	}
	return p, p.pid != 0
}

// readProc reads the process in dir (a /proc/<pid>): its parent from stat,
// the agent from comm and argv.
func readProc(r *procReader, dir string, pid int) (proc, bool) {
	stat, err := r.read(filepath.Join(dir, "stat"))
	if err != nil {
		return proc{}, false
	}
	comm, fields, ok := parseStat(stat)
	if !ok || len(fields) < 2 {
		return proc{}, false
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
	return p, true
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

// procReader reads small procfs files and links into one buffer (a result
// is valid until the next read), without the stat and the poller
// registration that os.ReadFile spends on each file: a scan reads a link
// of every process on the machine.
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

// readlink reads a procfs link into the buffer (valid until the next
// read).
func (r *procReader) readlink(path string) ([]byte, error) {
	for {
		n, err := syscall.Readlink(path, r.buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		case n < len(r.buf):
			return r.buf[:n], nil
		}
		r.buf = make([]byte, 2*len(r.buf))
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
