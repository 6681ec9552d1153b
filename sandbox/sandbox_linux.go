package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/myelin-run/myelin/child/supervisor"
)

// apply prepares cmd for the supervisor (package child/supervisor, which
// says what it does with the spec): a new mount namespace, a user
// namespace unless myelin runs as root, a network namespace unless
// p.Network, and the spec of what the command may read and write.
func (p Policy) apply(cmd *exec.Cmd, workspace string) error {
	if err := available(); err != nil {
		return err
	}
	ws, writable, err := p.writableDirs(workspace)
	if err != nil {
		return err
	}
	denied := deniedSecrets()
	if err := p.checkWritable(writable, denied); err != nil {
		return err
	}
	env := append(p.scrub(cmd.Environ()), supervisor.SandboxEnv+"="+p.spec(ws, writable, denied))
	cmd.SysProcAttr = p.namespaces(cmd.SysProcAttr)
	cmd.Env = env
	cmd.Args = append([]string{supervisor.SandboxArg0, cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	return nil
}

// available says why this system cannot confine a command (an error
// wrapping ErrUnavailable), or nil.
func available() error {
	if abi := supervisor.LandlockABI(); abi < 1 {
		return unavailable("the kernel offers no Landlock: it needs Linux 5.13 or later with Landlock enabled (lsm=…,landlock)")
	}
	if os.Geteuid() != 0 {
		if why := userNamespacesRefused(); why != "" {
			return unavailable(why)
		}
	}
	return nil
}

// writableDirs is the workspace's real path, and the real paths of the
// directories the command may write: the workspace first (unless the mode
// is read-only), then p.Writable.
func (p Policy) writableDirs(workspace string) (ws string, writable []string, err error) {
	ws, err = realDir(workspace)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: the workspace: %w", err)
	}
	if p.Mode != ReadOnly {
		writable = append(writable, ws)
	}
	for _, dir := range p.Writable {
		d, err := realDir(dir)
		if err != nil {
			return "", nil, fmt.Errorf("sandbox: the writable directory: %w", err)
		}
		writable = append(writable, d)
	}
	return ws, writable, nil
}

// deniedSecrets is the real paths of the user's secrets (Secrets) that
// this process may read or search, which the command may not.
func deniedSecrets() []string {
	home, _ := os.UserHomeDir()
	config, _ := os.UserConfigDir()
	var denied []string
	for _, s := range Secrets(home, config) {
		// One this process may neither read nor search, the command may
		// not either (the same user, no capabilities): /etc/shadow for a
		// user. Ruling around it would only cost rules.
		if syscall.Access(s, 4 /* R_OK */) != nil && syscall.Access(s, 1 /* X_OK: a directory's files by name */) != nil {
			continue
		}
		if r, err := filepath.EvalSymlinks(s); err == nil {
			denied = append(denied, r)
		}
	}
	return denied
}

// checkWritable refuses a writable directory (writableDirs') inside one
// of the denied secrets.
func (p Policy) checkWritable(writable, denied []string) error {
	for i, w := range writable {
		for _, d := range denied {
			if within(w, d) {
				what := "the writable directory " + w
				if i == 0 && p.Mode != ReadOnly {
					what = "the workspace " + w
				}
				return fmt.Errorf("sandbox: %s is in %s, one of the user's secrets, which commands may neither read nor write; choose a directory outside it", what, d)
			}
		}
	}
	return nil
}

// spec is the supervisor's spec of the command's confinement: the
// writable mounts, the protected paths among them, /dev/shm, the network,
// the Landlock rules for reading everything but the denied paths and for
// writing the writable directories, and the devices.
func (p Policy) spec(ws string, writable, denied []string) string {
	var spec strings.Builder
	add := func(op byte, path string) { spec.WriteString(supervisor.Record(op, path)) }
	for _, w := range writable {
		add(supervisor.OpMountRW, w)
	}
	// A secret in a writable directory (the home as workspace) is
	// read-only as a mount too: Landlock does not rule chmod.
	for _, path := range append(protectedPaths(ws), denied...) {
		if under(path, writable) {
			add(supervisor.OpProtect, path)
		}
	}
	if st, err := os.Lstat("/dev/shm"); err == nil && st.IsDir() {
		add(supervisor.OpShm, "/dev/shm")
	}
	if !p.Network {
		// A path Unix socket reaches a daemon outside (Docker's is the
		// host's root), and the network namespace does not separate
		// them: Unix sockets count as the network.
		add(supervisor.OpLoopback, "")
		add(supervisor.OpNoUnix, "")
	}
	for _, r := range ruleTree(supervisor.OpRead, "/", denied) {
		add(r.op, r.path)
	}
	for _, w := range writable {
		for _, r := range ruleTree(supervisor.OpWrite, w, denied) {
			add(r.op, r.path)
		}
	}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"} {
		add(supervisor.OpDevice, dev)
	}
	return spec.String()
}

// namespaces is a copy of attr (nil: none) that starts the supervisor in
// namespaces of its own: mounts, the network unless p.Network, and, for a
// user other than root, the user's.
func (p Policy) namespaces(attr *syscall.SysProcAttr) *syscall.SysProcAttr {
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	} else {
		copied := *attr
		attr = &copied
	}
	attr.Cloneflags |= syscall.CLONE_NEWNS
	if !p.Network {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		// A user namespace gives the supervisor the capabilities to
		// mount: the same ids inside as outside, so that the command's
		// files and `id` are the user's; the supervisor keeps the
		// capabilities across its exec (ambient) and drops them all
		// before the command's. Root has them already, and without a
		// user namespace Go starts the supervisor with vfork rather than
		// fork, which costs about 6 ms less (docs/performance.md).
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.AmbientCaps = []uintptr{capSysAdmin, capNetAdmin, capSetpcap}
	}
	return attr
}

// userNamespacesRefused says why this system refuses a user namespace to
// a user, as its settings say, or "" (it is read once: the settings
// rarely change, and a refusal they do not show is reported when the
// supervisor fails).
var userNamespacesRefused = sync.OnceValue(func() string {
	for _, c := range []struct{ file, refused, why string }{
		{"/proc/sys/user/max_user_namespaces", "0", "user namespaces are turned off (user.max_user_namespaces = 0)"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0", "user namespaces are refused to users (kernel.unprivileged_userns_clone = 0)"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor keeps users' namespaces from mounting (kernel.apparmor_restrict_unprivileged_userns = 1)"},
	} {
		if b, err := os.ReadFile(c.file); err == nil && strings.TrimSpace(string(b)) == c.refused {
			return c.why
		}
	}
	return ""
})

const (
	capSetpcap  = 8 // to empty the bounding set
	capNetAdmin = 12
	capSysAdmin = 21
)

// realDir is dir, absolute with its symbolic links resolved, when it is a
// directory.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	st, err := os.Stat(r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return r, nil
}

// under says whether path is one of dirs or below one.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if within(path, d) {
			return true
		}
	}
	return false
}

// within says whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

type rule struct {
	op   byte
	path string
}

// ruleTree is the rules that give op on root less the denied paths:
// Landlock rules only add, and a right on a directory holds for all below
// it, so a directory with a denied path below it gets only the right to
// list it, and each of its entries a rule of its own (symbolic links
// none: what they lead to has its own rule, or is denied). An entry made
// after the rules were made is not reachable: what is not allowed is
// denied.
func ruleTree(op byte, root string, denied []string) []rule {
	var below []string
	for _, d := range denied {
		if d == root {
			return nil
		}
		if within(d, root) {
			below = append(below, d)
		}
	}
	if len(below) == 0 {
		return []rule{{op, root}}
	}
	out := []rule{{supervisor.OpList, root}}
	entries, err := os.ReadDir(root)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		out = append(out, ruleTree(op, filepath.Join(root, e.Name()), below)...)
	}
	return out
}

// gitDepth is how deep below the workspace root a .git is looked for
// (a workspace of repositories, each with its own), and maxGitDirs bounds
// the directories read to find them: reading the directories of a large
// tree costs milliseconds per command (1 ms for the 40 of myelin's own at depth 2).
const (
	gitDepth   = 1
	maxGitDirs = 200
)

// protectedPaths are the paths of the workspace a command may not write
// (docs/security.md; workspace/protect.go for the workspace tools): .git,
// .myelin and .mcp.json at the root, each .git down to gitDepth
// directories below it (node_modules and hidden directories not entered),
// and the .git of each submodule .gitmodules names. A protected path that
// is a symbolic link is resolved: what it leads to is protected.
func protectedPaths(ws string) []string {
	var out []string
	seen := map[string]bool{}
	addReal := func(p string) {
		st, err := os.Lstat(p)
		if err != nil {
			return
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			if p, err = filepath.EvalSymlinks(p); err != nil {
				return
			}
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	addReal(filepath.Join(ws, ".myelin"))
	addReal(filepath.Join(ws, ".mcp.json"))
	addReal(filepath.Join(ws, ".git"))
	level, read := []string{ws}, 0
	for depth := 1; depth <= gitDepth; depth++ {
		var next []string
		for _, dir := range level {
			if read++; read > maxGitDirs {
				break
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				name := e.Name()
				if !e.IsDir() || strings.HasPrefix(name, ".") || name == "node_modules" {
					continue
				}
				sub := filepath.Join(dir, name)
				addReal(filepath.Join(sub, ".git"))
				next = append(next, sub)
			}
		}
		level = next
	}
	if data, err := os.ReadFile(filepath.Join(ws, ".gitmodules")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
			rel := filepath.Clean(strings.TrimSpace(value))
			if ok && strings.TrimSpace(key) == "path" && filepath.IsLocal(rel) {
				addReal(filepath.Join(ws, rel, ".git"))
			}
		}
	}
	return out
}
