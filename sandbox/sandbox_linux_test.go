package sandbox_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/child"
	"github.com/myelin-run/myelin/internal/supervisor"
	"github.com/myelin-run/myelin/sandbox"
)

// world is a home with secrets and a workspace with protected paths, and
// a directory outside both.
type world struct {
	home, ws, outside string
}

const secret = "SECRET-KEY-MATERIAL"

func newWorld(t *testing.T) world {
	t.Helper()
	if supervisor.LandlockABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	if err := (sandbox.Policy{}).Apply(exec.Command("true"), t.TempDir()); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	root := t.TempDir()
	w := world{home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside")}
	for path, content := range map[string]string{
		"home/.ssh/id_ed25519":       secret,
		"home/.aws/credentials":      secret,
		"home/.config/myelin/rules":  secret,
		"home/.config/gcloud/token":  secret,
		"home/.config/editor/ok.txt": "readable config",
		"home/.docker/config.json":   secret,
		"home/.docker/other.json":    "readable docker",
		"home/.netrc":                secret,
		"home/.gitconfig":            "readable gitconfig",
		"home/.myelin/mcp-tokens/t":  secret,
		"ws/.git/config":             "[core]",
		"ws/sub/.git/config":         "[core]",
		"ws/vendor/lib/.git":         "gitdir: ../../.git/modules/lib",
		"ws/.gitmodules":             "[submodule \"lib\"]\n\tpath = vendor/lib\n",
		"ws/.myelin/history.db":      "store",
		"ws/.mcp.json":               "{}",
		"ws/src/main.go":             "package main",
		"outside/file":               "outside",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", w.home)
	t.Setenv("XDG_CONFIG_HOME", "")
	return w
}

// run runs script with bash in ws, confined by p, and returns its
// combined output and exit status.
func run(t *testing.T, p sandbox.Policy, ws, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = ws
	if err := p.Apply(cmd, ws); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	g, err := child.Start(cmd)
	if err != nil {
		t.Fatalf("child.Start: %v", err)
	}
	err = g.Wait()
	g.Kill()
	b, _ := os.ReadFile(out.Name())
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("waiting: %v", err)
	}
	return string(b), code
}

var off = sandbox.Policy{Mode: sandbox.Off}

// Each attempt is denied in the sandbox with the error the model should
// see, and does what it says with the sandbox off, so that a sandbox that
// lets it through fails the test.
func TestTheSandboxDeniesWhatOffAllows(t *testing.T) {
	w := newWorld(t)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			c, err := listener.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from outside\n"))
			c.Close()
		}
	}()
	port := strconv.Itoa(listener.Addr().(*net.TCPAddr).Port)
	me := strconv.Itoa(os.Getpid())
	tests := []struct {
		name, script string
		allowed      string // in the output with the sandbox off
		denied       string // in the output in the sandbox
	}{
		{"read an ssh key", `cat "$HOME/.ssh/id_ed25519"`, secret, "Permission denied"},
		{"read every ssh key by a glob", `cat "$HOME"/.ssh/*`, secret, "Permission denied"},
		{"read cloud credentials", `cat "$HOME/.aws/credentials"`, secret, "Permission denied"},
		{"read gcloud's token", `cat "$HOME/.config/gcloud/token"`, secret, "Permission denied"},
		{"read myelin's config", `cat "$HOME/.config/myelin/rules"`, secret, "Permission denied"},
		{"read myelin's token store", `cat "$HOME/.myelin/mcp-tokens/t"`, secret, "Permission denied"},
		{"read docker's credentials", `cat "$HOME/.docker/config.json"`, secret, "Permission denied"},
		{"read .netrc", `cat "$HOME/.netrc"`, secret, "Permission denied"},
		{"read a key through a symbolic link in the workspace", `ln -s "$HOME/.ssh/id_ed25519" link && cat link`, secret, "Permission denied"},
		{"read a key through /proc/self/root", `cat "/proc/self/root$HOME/.ssh/id_ed25519"`, secret, "Permission denied"},
		{"write outside the workspace", `echo pwned > ` + w.outside + `/file && cat ` + w.outside + `/file`, "pwned", "Read-only file system"},
		{"change a file's mode outside the workspace", `chmod 666 ` + w.outside + `/file && stat -c %a ` + w.outside + `/file`, "666", "Read-only file system"},
		{"change a secret's mode", `chmod 666 "$HOME/.ssh/id_ed25519" && stat -c %a "$HOME/.ssh/id_ed25519"`, "666", "Read-only file system"},
		{"write .git/config", `echo pwned >> .git/config && cat .git/config`, "pwned", "Read-only file system"},
		{"write a nested .git", `echo pwned >> sub/.git/config && cat sub/.git/config`, "pwned", "Read-only file system"},
		{"write a submodule's .git file", `echo pwned >> vendor/lib/.git && cat vendor/lib/.git`, "pwned", "Read-only file system"},
		{"move .git away", `mv .git moved && echo moved-it`, "moved-it", "Device or resource busy"},
		{"write .myelin", `echo pwned > .myelin/history.db && cat .myelin/history.db`, "pwned", "Read-only file system"},
		{"write .mcp.json", `echo pwned > .mcp.json && cat .mcp.json`, "pwned", "Read-only file system"},
		{"reach a server on the host's loopback", `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && cat <&3`, "hello from outside", "Connection refused"},
		{"read myelin's environment", `tr '\0' '\n' < /proc/` + me + `/environ | grep -c . && echo read`, "read", "Permission denied"},
		{"look into myelin's root", `ls /proc/` + me + `/root/ >/dev/null && echo listed`, "listed", "Permission denied"},
		{"make a user namespace and mount in it", `unshare -r -m sh -c 'mount -t tmpfs none src && echo mounted'`, "mounted", "unshare: "},
	}
	if supervisor.LandlockABI() >= 6 {
		tests = append(tests, struct{ name, script, allowed, denied string }{
			"signal myelin", `kill -CONT ` + me + ` && echo signalled`, "signalled", "Operation not permitted"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.HasPrefix(tt.script, "unshare") {
				if _, err := exec.LookPath("unshare"); err != nil {
					t.Skip("no unshare(1) here")
				}
			}
			defer restore(t, w)
			got, code := run(t, off, w.ws, tt.script)
			if !strings.Contains(got, tt.allowed) {
				t.Fatalf("with the sandbox off, %q gave (exit %d) %q, want %q in it: the test proves nothing", tt.script, code, got, tt.allowed)
			}
			restore(t, w)
			got, code = run(t, sandbox.Policy{}, w.ws, tt.script)
			if strings.Contains(got, tt.allowed) || code == 0 {
				t.Fatalf("in the sandbox, %q succeeded (exit %d): %q", tt.script, code, got)
			}
			if !strings.Contains(got, tt.denied) {
				t.Errorf("in the sandbox, %q said %q, want %q in it", tt.script, got, tt.denied)
			}
		})
	}
}

// restore puts the world's files back as newWorld made them.
func restore(t *testing.T, w world) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(w.ws, "moved")); err == nil {
		os.Rename(filepath.Join(w.ws, "moved"), filepath.Join(w.ws, ".git"))
	}
	os.Remove(filepath.Join(w.ws, "link"))
	for path, content := range map[string]string{
		".git/config": "[core]", "sub/.git/config": "[core]", "vendor/lib/.git": "gitdir: ../../.git/modules/lib", ".myelin/history.db": "store", ".mcp.json": "{}",
	} {
		if err := os.WriteFile(filepath.Join(w.ws, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(w.outside, "file"), []byte("outside"), 0o644)
	os.Chmod(filepath.Join(w.outside, "file"), 0o644)
	os.Chmod(filepath.Join(w.home, ".ssh/id_ed25519"), 0o644)
}

// What a command needs stays allowed in the sandbox: the workspace, its
// temp dir, the system, the home's other files, /dev/null, its own
// loopback.
func TestTheSandboxAllowsTheWorkspaceTheSystemAndItsTempDir(t *testing.T) {
	w := newWorld(t)
	script := `set -e
echo made > src/new.go && cat src/new.go
mkdir -p build/out && mv src/new.go build/out/ && rm -r build
cat .git/config >/dev/null && echo git-readable
cat "$HOME/.gitconfig"; echo
cat "$HOME/.config/editor/ok.txt"; echo
cat "$HOME/.docker/other.json"; echo
ls "$HOME" >/dev/null && echo home-listed
ls / >/dev/null && echo root-listed
echo t > "$TMPDIR/t" && cat "$TMPDIR/t"
echo "$TMPDIR" > tmpdir
echo gone > /dev/null && echo devnull
head -c 4 /dev/urandom | wc -c
echo shm > /dev/shm/x && cat /dev/shm/x
git --version >/dev/null 2>&1 || true
echo done`
	got, code := run(t, sandbox.Policy{}, w.ws, script)
	for _, want := range []string{"made", "git-readable", "readable gitconfig", "readable config", "readable docker", "home-listed", "root-listed", "t\n", "devnull", "4\n", "shm", "done"} {
		if !strings.Contains(got, want) {
			t.Errorf("in the sandbox the output lacks %q (exit %d):\n%s", want, code, got)
		}
	}
	tmp, err := os.ReadFile(filepath.Join(w.ws, "tmpdir"))
	if err != nil {
		t.Fatalf("the command wrote no tmpdir file: %v", err)
	}
	dir := strings.TrimSpace(string(tmp))
	if !strings.Contains(dir, "myelin-sandbox-") {
		t.Errorf("TMPDIR is %q, want a temp dir of the command's own", dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temp dir %s is still there after the command (%v)", dir, err)
	}
}

// A command serves and reaches itself on its own loopback with no
// network (a test's server).
func TestTheSandboxKeepsItsOwnLoopback(t *testing.T) {
	w := newWorld(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to listen with")
	}
	script := `python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); a.send(b"loop"); print(c.recv(4).decode())'`
	if got, code := run(t, sandbox.Policy{}, w.ws, script); strings.TrimSpace(got) != "loop" {
		t.Errorf("the loopback inside the sandbox: exit %d, %q", code, got)
	}
}

func TestReadOnlyWritesOnlyTheTempDir(t *testing.T) {
	w := newWorld(t)
	p := sandbox.Policy{Mode: sandbox.ReadOnly}
	got, code := run(t, p, w.ws, `echo x > new.txt`)
	if code == 0 || !strings.Contains(got, "Read-only file system") {
		t.Errorf("read-only: writing the workspace gave exit %d, %q", code, got)
	}
	if got, code := run(t, off, w.ws, `echo x > new.txt && cat new.txt`); code != 0 || got != "x\n" {
		t.Fatalf("off: writing the workspace gave exit %d, %q", code, got)
	}
	got, code = run(t, p, w.ws, `cat src/main.go && echo t > "$TMPDIR/t" && cat "$TMPDIR/t"`)
	if code != 0 || got != "package main"+"t\n" { // main.go has no newline at its end
		t.Errorf("read-only: reading the workspace and writing TMPDIR gave exit %d, %q", code, got)
	}
}

func TestWritableAndNetworkLoosenTheSandbox(t *testing.T) {
	w := newWorld(t)
	script := `echo w > ` + w.outside + `/new && cat ` + w.outside + `/new`
	if got, code := run(t, sandbox.Policy{}, w.ws, script); code == 0 {
		t.Fatalf("without Writable the command wrote outside: %q", got)
	}
	if got, code := run(t, sandbox.Policy{Writable: []string{w.outside}}, w.ws, script); code != 0 || got != "w\n" {
		t.Errorf("with Writable %s: exit %d, %q", w.outside, code, got)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		if c, err := listener.Accept(); err == nil {
			c.Write([]byte("hi\n"))
			c.Close()
		}
	}()
	port := strconv.Itoa(listener.Addr().(*net.TCPAddr).Port)
	if got, code := run(t, sandbox.Policy{Network: true}, w.ws, `exec 3<>/dev/tcp/127.0.0.1/`+port+` && cat <&3`); code != 0 || got != "hi\n" {
		t.Errorf("with Network: exit %d, %q", code, got)
	}
}

// Provider keys and tokens never reach a command; the allow-list and
// Policy.Env do.
func TestTheEnvironmentIsScrubbedToTheAllowList(t *testing.T) {
	w := newWorld(t)
	leaks := []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MYELIN_TOKEN", "SSH_AUTH_SOCK", "MY_VAR"}
	for _, name := range leaks {
		t.Setenv(name, "leaked-"+name)
	}
	t.Setenv("LC_TIME", "C")
	got, _ := run(t, off, w.ws, `env`)
	for _, name := range leaks {
		if !strings.Contains(got, "leaked-"+name) {
			t.Fatalf("with the sandbox off %s did not pass: the test proves nothing", name)
		}
	}
	got, _ = run(t, sandbox.Policy{Env: []string{"MY_VAR"}}, w.ws, `env`)
	for _, name := range leaks[:len(leaks)-1] {
		if strings.Contains(got, "leaked-"+name) {
			t.Errorf("%s reached the sandboxed command", name)
		}
	}
	for _, want := range []string{"MY_VAR=leaked-MY_VAR", "LC_TIME=C", "HOME=" + w.home, "PATH=", "TMPDIR="} {
		if !strings.Contains(got, want) {
			t.Errorf("the sandboxed command's environment lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, supervisor.SandboxEnv) || strings.Contains(got, supervisor.Env) {
		t.Errorf("the supervisor's variables reached the command:\n%s", got)
	}
}

// A command Apply prepared never runs unconfined: started without package
// child, it refuses.
func TestAPreparedCommandStartedWithoutChildDoesNotRun(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command("bash", "-c", "echo ran > "+w.outside+"/ran")
	cmd.Dir = w.ws
	if err := (sandbox.Policy{}).Apply(cmd, w.ws); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 126 {
		t.Errorf("started with cmd.Run: %v; want exit status 126", err)
	}
	if !strings.Contains(string(out), "must be started with package child") {
		t.Errorf("started with cmd.Run, it said %q; want it to say it must be started with package child", out)
	}
	if _, err := os.Stat(filepath.Join(w.outside, "ran")); err == nil {
		t.Error("the command ran")
	}
}

// Where no sandbox is available the command is refused, with an error
// naming --sandbox off; Off still runs.
func TestWithoutASandboxTheCommandIsRefusedNamingSandboxOff(t *testing.T) {
	w := newWorld(t)
	check := func(how string) {
		t.Helper()
		cmd := exec.Command("bash", "-c", "echo ran > "+w.outside+"/ran")
		err := (sandbox.Policy{}).Apply(cmd, w.ws)
		if !errors.Is(err, sandbox.ErrUnavailable) {
			t.Errorf("%s: Apply = %v, want ErrUnavailable", how, err)
		}
		for _, want := range []string{"--sandbox off", "the test says so"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: Apply = %v, want it to name %q", how, err, want)
			}
		}
		cmd = exec.Command("true")
		if err := off.Apply(cmd, w.ws); err != nil {
			t.Errorf("%s: Off: %v", how, err)
		}
	}
	restore := sandbox.ForceUnavailable("the test says so")
	check("ForceUnavailable")
	restore()
	t.Setenv(sandbox.UnavailableEnv, "the test says so")
	check(sandbox.UnavailableEnv)
}

// A supervisor that cannot set the sandbox up refuses the command with
// ErrUnavailable, naming what failed: here a protected path that became a
// symbolic link between Apply and the start.
func TestASandboxThatCannotBeSetUpRefusesTheCommand(t *testing.T) {
	w := newWorld(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cmd := exec.Command("bash", "-c", "echo ran > ran")
	cmd.Dir = w.ws
	if err := (sandbox.Policy{}).Apply(cmd, w.ws); err != nil {
		t.Fatal(err)
	}
	mcp := filepath.Join(w.ws, ".mcp.json")
	os.Remove(mcp)
	if err := os.Symlink(filepath.Join(w.outside, "file"), mcp); err != nil {
		t.Fatal(err)
	}
	_, err := child.Start(cmd)
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("child.Start = %v, want ErrUnavailable", err)
	}
	for _, want := range []string{".mcp.json", "--sandbox off"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("child.Start = %v, want it to name %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(w.ws, "ran")); err == nil {
		t.Error("the command ran")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the refused command's temp dir is left in %s: %v", tmp, left)
	}
}

func TestApplyRefusesBadInput(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct {
		p    sandbox.Policy
		want string
	}{
		{sandbox.Policy{Mode: "strict"}, `unknown mode "strict"`},
		{sandbox.Policy{Writable: []string{"rel/dir"}}, `"rel/dir" is not an absolute path`},
		{sandbox.Policy{Writable: []string{w.outside + "/missing"}}, "missing"},
		{sandbox.Policy{Env: []string{"A=B"}}, `"A=B" is not the name of an environment variable`},
		{sandbox.Policy{Writable: []string{w.home + "/.ssh"}}, "is in " + w.home + "/.ssh, one of the user's secrets"},
	} {
		err := tt.p.Apply(exec.Command("true"), w.ws)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Apply(%+v) = %v, want an error saying %q", tt.p, err, tt.want)
		}
	}
}

// The sandbox's mounts stay in its own mount namespace: as root, without
// a user namespace, a shared / would carry them to the host's.
func TestTheSandboxsMountsDoNotReachTheHost(t *testing.T) {
	w := newWorld(t)
	done := make(chan string, 1)
	go func() {
		out, _ := run(t, sandbox.Policy{}, w.ws, `touch ready; for i in $(seq 500); do [ -e stop ] && break; sleep 0.01; done; echo ok`)
		done <- out
	}()
	for {
		if _, err := os.Stat(filepath.Join(w.ws, "ready")); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	os.WriteFile(filepath.Join(w.ws, "stop"), nil, 0o644)
	if out := <-done; out != "ok\n" {
		t.Fatalf("the command: %q", out)
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(info), w.ws) || strings.Contains(string(info), "myelin-sandbox-") {
		t.Errorf("the host's mounts show the sandbox's:\n%s", info)
	}
}

// A workspace that holds the user's secrets (the home itself) is
// writable, and its secrets stay unreadable, unwritable and their modes
// unchanged; the rest of it is read and written as usual.
func TestSecretsInTheWorkspaceStaySecret(t *testing.T) {
	w := newWorld(t)
	script := `cat .ssh/id_ed25519; echo more >> .ssh/id_ed25519; chmod 600 .netrc; cat .aws/credentials; ` +
		`echo ok > .config/editor/new.txt && cat .config/editor/new.txt; cat .gitconfig; echo`
	got, _ := run(t, off, w.home, script)
	if strings.Count(got, secret) != 2 || !strings.Contains(got, "ok\nreadable gitconfig") {
		t.Fatalf("with the sandbox off: %q: the test proves nothing", got)
	}
	os.WriteFile(filepath.Join(w.home, ".ssh/id_ed25519"), []byte(secret), 0o644)
	os.Chmod(filepath.Join(w.home, ".netrc"), 0o644)
	got, _ = run(t, sandbox.Policy{}, w.home, script)
	if strings.Contains(got, secret) || !strings.Contains(got, "ok\nreadable gitconfig") {
		t.Errorf("in the sandbox with the home as workspace: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(w.home, ".ssh/id_ed25519")); string(b) != secret {
		t.Errorf("the key was written: %q", b)
	}
	if st, _ := os.Stat(filepath.Join(w.home, ".netrc")); st.Mode().Perm() != 0o644 {
		t.Errorf(".netrc's mode was changed to %v", st.Mode().Perm())
	}
}
