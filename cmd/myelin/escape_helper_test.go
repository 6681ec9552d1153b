//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// escapeHelperArg, as the first argument of this test binary, makes it the
// program an attacking command runs (escape_test.go): it goes up its
// ancestors to the topmost process named myelin — myelin itself, which
// holds the provider keys — and tries to reach into it. It is asked by an
// argument, not by a variable, because a sandbox scrubs the environment.
const escapeHelperArg = "myelin-escape-helper"

func init() {
	if len(os.Args) >= 3 && os.Args[1] == escapeHelperArg {
		if os.Args[2] == "unix" && len(os.Args) == 4 {
			os.Exit(dialUnix(os.Args[3]))
		}
		os.Exit(escapeHelper(os.Args[2]))
	}
}

// escapeHelper does one attack on myelin's process and says on stdout
// what it got: "attach" (PTRACE_ATTACH), "mem" (a read of
// /proc/PID/mem, which needs the same right), "environ" (its
// environment, which holds the provider keys), "signal" (a SIGCONT,
// harmless, where a SIGKILL would do harm). It returns the exit status:
// 0 when the attack worked.
func escapeHelper(attack string) int {
	pid, chain := myelinAncestor()
	if pid == 0 {
		fmt.Printf("no process named myelin among my ancestors (%s)\n", chain)
		return 3
	}
	switch attack {
	case "attach":
		runtime.LockOSThread() // the tracer is this thread
		if err := syscall.PtraceAttach(pid); err != nil {
			fmt.Printf("PTRACE_ATTACH of myelin (pid %d): %v\n", pid, err)
			return 1
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WALL, nil)
		_ = syscall.PtraceDetach(pid)
		fmt.Printf("attached to myelin (pid %d)\n", pid)
	case "mem":
		start, err := firstReadable(pid)
		if err != nil {
			fmt.Printf("the memory map of myelin (pid %d): %v\n", pid, err)
			return 1
		}
		f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
		if err != nil {
			fmt.Printf("opening the memory of myelin (pid %d): %v\n", pid, err)
			return 1
		}
		defer f.Close()
		buf := make([]byte, 16)
		n, err := f.ReadAt(buf, int64(start))
		if n == 0 {
			fmt.Printf("reading the memory of myelin (pid %d) at %#x: %v\n", pid, start, err)
			return 1
		}
		fmt.Printf("read %d bytes of the memory of myelin (pid %d) at %#x\n", n, pid, start)
	case "environ":
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || len(data) == 0 {
			fmt.Printf("the environment of myelin (pid %d): %v (%d bytes)\n", pid, err, len(data))
			return 1
		}
		fmt.Printf("the environment of myelin (pid %d): %s\n", pid, strings.ReplaceAll(string(data), "\x00", " "))
	case "signal":
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			fmt.Printf("signalling myelin (pid %d): %v\n", pid, err)
			return 1
		}
		fmt.Printf("signalled myelin (pid %d)\n", pid)
	default:
		fmt.Printf("no attack %q\n", attack)
		return 2
	}
	return 0
}

// dialUnix connects to the Unix socket at path (an ssh-agent's, a
// Docker daemon's, a database's) and prints what it says first.
func dialUnix(path string) int {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		fmt.Printf("connecting to %s: %v\n", path, err)
		return 1
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if n == 0 {
		fmt.Printf("reading from %s: %v\n", path, err)
		return 1
	}
	fmt.Printf("%s said: %s\n", path, buf[:n])
	return 0
}

// myelinAncestor is the topmost ancestor of this process whose name (the
// comm of /proc/PID/stat, readable without any right over it) is myelin,
// 0 when none is seen; chain lists the ancestors seen.
func myelinAncestor() (pid int, chain string) {
	var seen []string
	for p := os.Getppid(); p > 0 && len(seen) < 64; {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			seen = append(seen, fmt.Sprintf("%d: %v", p, err))
			break
		}
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			break
		}
		comm := s[open+1 : end]
		seen = append(seen, fmt.Sprintf("%d %s", p, comm))
		if comm == "myelin" {
			pid = p
		}
		fields := strings.Fields(s[end+1:]) // state ppid ...
		if len(fields) < 2 {
			break
		}
		p, _ = strconv.Atoi(fields[1])
	}
	return pid, strings.Join(seen, " < ")
}

// firstReadable is the start of the first readable mapping of pid's
// memory.
func firstReadable(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text()) // start-end perms ...
		if len(fields) < 2 || !strings.HasPrefix(fields[1], "r") {
			continue
		}
		start, _, _ := strings.Cut(fields[0], "-")
		return strconv.ParseUint(start, 16, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no readable mapping")
}
