// Package supervisor is the process that stands between myelin and a
// command it starts on Linux (package child), so that nothing the command
// starts outlives the command's end or myelin: a child that calls setsid
// or forks twice leaves its process group, but not the supervisor's
// subtree (issue 26 §7).
//
// The supervisor is myelin's own executable started again with Env set;
// this package's init function turns it into the supervisor before main
// runs. It imports only syscall, so that it is initialized before nearly
// every other package (Go initializes a package as soon as what it imports
// is) and the re-start costs little more than the Go runtime's own start.
//
// It must not be used directly: package child starts it and speaks its
// protocol. It must not import anything but syscall (see above), nor
// write to the command's output, nor touch a process outside its subtree.
package supervisor

// Env is the environment variable that makes the program a supervisor.
// Its value is the number of the first of the two descriptors the
// supervisor reads and writes myelin's messages on (FirstFD, FirstFD+1);
// the descriptors below it are the command's (0, 1, 2 and its extra files).
// The supervisor removes the variable from the command's environment.
const Env = "MYELIN_CHILD_SUPERVISOR"

// The messages myelin writes on the control descriptor (FirstFD): a byte
// 1–64 asks the supervisor to send that signal to the command's process
// group while the command runs; the end of the pipe (myelin closed it, or
// died) asks it to kill the command and everything the command started,
// and exit.
//
// On the status descriptor (FirstFD+1) the supervisor writes one line once
// the command started ("ok " and the command's pid, in decimal) or could
// not start ("error: " and why, then it exits 127), and holds the
// descriptor until it exits: its end tells myelin that every process of
// the command's subtree is gone. The supervisor then exits as the command
// did: with its exit status, or by the same signal.
const (
	StatusOK    = "ok"
	StatusError = "error: "
)

// SandboxEnv is the environment variable that asks the supervisor to
// confine the command (package sandbox writes it; see the Op constants for
// its value). The supervisor removes it from the command's environment.
// Set without Env (the command was started without package child), the
// program refuses to run at all: it would run unconfined.
const SandboxEnv = "MYELIN_SANDBOX"

// SandboxArg0 is the first argument of a command package sandbox
// prepared: its Path is myelin's own executable and its arguments are
// SandboxArg0, the command's path and the command's arguments. Package
// child starts the command they name under a supervisor; started any
// other way, it runs myelin's executable with SandboxEnv and no Env,
// which refuses.
const SandboxArg0 = "myelin-sandboxed"
