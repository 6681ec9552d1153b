package supervisor

import "syscall"

// children are the supervisor's child processes, as /proc shows them: the
// children files of its threads (an orphan is given to any of them), or
// where the kernel has none (CONFIG_PROC_CHILDREN unset) every process
// whose parent it is.
func children() []int {
	if kids, ok := childrenOf("self"); ok {
		return kids
	}
	return Parents()[syscall.Getpid()]
}

// ChildrenOf are process pid's children, as the children files of its
// threads show them (an orphan is given to any of them; none for a
// process gone). Where the kernel has no such files (HasChildrenFiles),
// Parents gives them. It is for myelin's child package, which kills what
// is below a supervisor that does not answer.
func ChildrenOf(pid int) []int {
	kids, _ := childrenOf(itoa(pid))
	return kids
}

// childrenOf is ChildrenOf of the process /proc names proc ("self" or a
// pid), and false when a thread of it has no children file.
func childrenOf(proc string) ([]int, bool) {
	var kids []int
	tids, ok := dirNames("/proc/" + proc + "/task")
	for _, tid := range tids {
		data := readFile("/proc/" + proc + "/task/" + tid + "/children")
		if data == nil {
			return nil, false
		}
		kids = append(kids, fields(data)...)
	}
	return kids, ok
}

// HasChildrenFiles reports whether this kernel shows a process's children
// in /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN).
func HasChildrenFiles() bool {
	return readFile("/proc/thread-self/children") != nil
}

// Parents are every process's children, by parent, from one scan of
// /proc (each process's parent in its stat line): what shows children
// where the kernel has no children files.
func Parents() map[int][]int {
	byParent := map[int][]int{}
	pids, _ := dirNames("/proc")
	for _, p := range pids {
		pid := atoi(p)
		if pid <= 0 {
			continue
		}
		if ppid := ppidOf(readFile("/proc/" + p + "/stat")); ppid > 0 {
			byParent[ppid] = append(byParent[ppid], pid)
		}
	}
	return byParent
}

// ppidOf is the parent's pid in a /proc/PID/stat line: the second field
// after the command name, which is in parentheses and may hold anything.
func ppidOf(stat []byte) int {
	end := -1
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			end = i
			break
		}
	}
	if end < 0 {
		return -1
	}
	f := fields(stat[end+1:]) // state is not a number: fields skips it
	if len(f) == 0 {
		return -1
	}
	return f[0]
}

// readFile is the whole content of a small file, or nil when it cannot be
// read (a file of /proc reads as empty, never nil, when it exists).
func readFile(path string) []byte {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	out := []byte{}
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

// dirNames are the names in a directory.
func dirNames(path string) ([]string, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return names, err == nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

// fields are the unsigned decimal numbers in data, separated by anything
// else (a word that is not a number is skipped).
func fields(data []byte) []int {
	var out []int
	n, in := 0, false
	for _, c := range append(data, ' ') {
		if c >= '0' && c <= '9' {
			n, in = n*10+int(c-'0'), true
			continue
		}
		if in {
			out = append(out, n)
		}
		n, in = 0, false
	}
	return out
}

// split0 splits a NUL-separated list (a /proc/PID/cmdline).
func split0(data []byte) []string {
	var out []string
	start := 0
	for i, c := range data {
		if c == 0 {
			out = append(out, string(data[start:i]))
			start = i + 1
		}
	}
	if start < len(data) {
		out = append(out, string(data[start:]))
	}
	return out
}

func atoi(s string) int {
	if s == "" || len(s) > 9 {
		return -1
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// say writes one line to fd.
func say(fd int, line string) {
	b := []byte(line + "\n")
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		b = b[n:]
	}
}

func sleepBriefly() {
	ts := syscall.Timespec{Nsec: 1_000_000}
	_ = syscall.Nanosleep(&ts, nil)
}
