package supervisor

import (
	"syscall"
	"unsafe"
)

func init() {
	v, ok := syscall.Getenv(Env)
	if !ok {
		if _, sandboxed := syscall.Getenv(SandboxEnv); sandboxed {
			// A command package sandbox prepared, started without package
			// child: it would run unconfined, so it does not run.
			say(2, "myelin: a sandboxed command must be started with package child (child.Start); it was not run")
			syscall.Exit(126)
		}
		return
	}
	// Package initialization runs on the main thread, locked to it: the
	// command's parent-death signal fires only when this process ends.
	syscall.Exit(run(v))
}

// run is the supervisor: it starts the command given by its arguments
// (os.Args[1] the path, the rest its argv), as a child in a process group
// of its own (a session of its own when sandboxed, after setting the
// sandbox up: sandbox_linux.go), becomes the subreaper of everything
// below it, and waits for the command's end or myelin's word.
func run(fdv string) int {
	first := atoi(fdv)
	if first < 3 {
		return 126
	}
	ctl, status := first, first+1
	for _, fd := range []int{ctl, status} {
		syscall.CloseOnExec(fd)
		_ = syscall.SetNonblock(fd, false)
	}
	argv := split0(readFile("/proc/self/cmdline"))
	if len(argv) < 3 {
		say(status, StatusError+"the supervisor was started without a command")
		return 127
	}
	// Orphans of the command's subtree (a child that called setsid, a
	// double fork) become this process's children instead of init's.
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); e != 0 {
		say(status, StatusError+"making the supervisor a subreaper (prctl PR_SET_CHILD_SUBREAPER): "+e.Error())
		return 127
	}
	env, spec, sandboxed := commandEnv()
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	tmp := ""
	if sandboxed {
		var why string
		if tmp, why = setUpSandbox(spec); why != "" {
			say(status, StatusError+SandboxFailed+why)
			return 127
		}
		env, sys = confined(env, tmp)
	}
	pid, err := syscall.ForkExec(argv[1], argv[2:], &syscall.ProcAttr{
		Env:   env,
		Files: inherited(first),
		Sys:   sys,
	})
	if err != nil {
		say(status, StatusError+"fork/exec "+argv[1]+": "+err.Error())
		return 127
	}
	say(status, StatusOK+" "+itoa(pid))
	waitForEnd(pid, ctl)
	ws := killAll(pid)
	// The temp dir's contents, even when myelin is gone; the directory
	// itself myelin removes (this thread may not: it is a mount here, and
	// its parent is read-only), or, when myelin is gone, another's sweep
	// once it is empty (package child, temp_linux.go).
	removeAll(tmp)
	return exitAs(ws)
}

// inherited is the files the command gets: the supervisor's below first
// (its standard files and cmd.ExtraFiles), as they are.
func inherited(first int) []uintptr {
	files := make([]uintptr, first)
	for i := range files {
		files[i] = uintptr(i)
	}
	return files
}

// commandEnv is the command's environment: the supervisor's less its own
// variables, and the sandbox's spec when it is sandboxed.
func commandEnv() (env []string, spec string, sandboxed bool) {
	for _, kv := range syscall.Environ() {
		if _, ok := cut(kv, Env); ok {
			continue
		}
		if v, ok := cut(kv, SandboxEnv); ok {
			spec, sandboxed = v, true
			continue
		}
		env = append(env, kv)
	}
	return env, spec, sandboxed
}

// confined is how a sandboxed command starts, its sandbox set up: with
// its own temp dir tmp as TMPDIR, in a session of its own.
func confined(env []string, tmp string) ([]string, *syscall.SysProcAttr) {
	// TMPDIR is the command's own temp dir.
	kept := env[:0]
	for _, kv := range env {
		if _, ok := cut(kv, "TMPDIR"); !ok {
			kept = append(kept, kv)
		}
	}
	env = append(kept, "TMPDIR="+tmp)
	// A session of its own: no controlling terminal, whose input a
	// command could fake (TIOCSTI) for the user's shell to run.
	return env, &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// waitForEnd returns when the command pid has exited (it is not reaped:
// its group id stays the command's) or myelin has closed the control pipe
// ctl, sending the command's group each signal myelin writes there
// meanwhile.
func waitForEnd(pid, ctl int) {
	exited := make(chan struct{})
	go func() { // waits without reaping: the group id stays the command's
		ExitedUnreaped(pid)
		close(exited)
	}()
	words := make(chan byte)
	go func() {
		var b [1]byte
		for {
			n, err := syscall.Read(ctl, b[:])
			if err == syscall.EINTR {
				continue
			}
			if n != 1 || err != nil {
				close(words)
				return
			}
			words <- b[0]
		}
	}()
	for done := false; !done; {
		select {
		case <-exited:
			done = true
		case sig, ok := <-words:
			if !ok {
				done = true
				break
			}
			if sig >= 1 && sig <= 64 {
				_ = syscall.Kill(-pid, syscall.Signal(sig))
			}
		}
	}
}

// cut is the value of kv when it is name's.
func cut(kv, name string) (string, bool) {
	if len(kv) > len(name) && kv[:len(name)] == name && kv[len(name)] == '=' {
		return kv[len(name)+1:], true
	}
	return "", false
}

const (
	prSetChildSubreaper = 36
	pPID                = 1
	wEXITED             = 4
	wNOWAIT             = 0x1000000
)

// killAll kills every process below the supervisor and reaps it: each
// round kills the children there are, and reaps one; the children of a
// killed process become the supervisor's (it is their subreaper), to be
// killed in a later round. A process can only be made by a live one, and
// every live one is killed, so the rounds end. It returns the command's
// wait status.
func killAll(cmd int) syscall.WaitStatus {
	var cmdStatus syscall.WaitStatus
	for {
		kids := children()
		for _, k := range kids { // not reaped yet, so no pid here is reused
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		opts := 0
		if len(kids) == 0 {
			opts = syscall.WNOHANG // a child may be on its way here
		}
		got, err := syscall.Wait4(-1, &ws, opts, nil)
		switch {
		case err == syscall.EINTR:
		case err == syscall.ECHILD:
			return cmdStatus
		case err != nil:
			return cmdStatus
		case got == cmd:
			cmdStatus = ws
		case got == 0:
			sleepBriefly()
		}
	}
}

// exitAs ends the supervisor as the command ended: with its exit status,
// or by its signal (SIGKILL directly; another through /bin/sh, whose
// signal dispositions are the defaults again, with core dumps off).
func exitAs(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case !ws.Signaled():
		return 127
	}
	sig := ws.Signal()
	if sig == syscall.SIGKILL {
		_ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
	}
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	n := itoa(int(sig))
	_ = syscall.Exec("/bin/sh", []string{"sh", "-c", "kill -" + n + " $$; exit " + itoa(128+int(sig))}, nil)
	return 128 + int(sig)
}

// ExitedUnreaped returns once this process's child pid has exited,
// leaving it unreaped (a zombie, its pid and group id still its own), or
// at once when pid is no child of this process's to wait for (ECHILD:
// reaped already). The supervisor waits so for its command; myelin's
// child package for a supervisor, before it marks it reaped.
func ExitedUnreaped(pid int) {
	var info [128]byte // a siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), wEXITED|wNOWAIT, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}
