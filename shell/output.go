package shell

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/myelin-run/myelin/internal/leftover"
	"github.com/myelin-run/myelin/workspace"
)

// OutputDir is where the output files of running commands live, relative
// to the workspace root: inside .myelin/, so that a crash leaves nothing
// outside it, and so that the conversion can rename an output into
// .myelin/tool-results/ on the same file system.
const OutputDir = ".myelin/shell"

// tempOutputs is the kind of an output file made outside a workspace (no
// workspace directory, or OutputDir could not be made):
// $TMPDIR/myelin-shell-<pid>-<random>.out, locked (flock, exclusive)
// through the file as one in OutputDir is. One a killed myelin left is
// removed by a later sweep, at the next such file's making, once nobody
// holds its lock: neither myelin nor its command, which inherits it
// (package internal/leftover). Those named myelin-shell-<random>.out
// (made before locks) are never swept.
var tempOutputs = &leftover.Kind{Prefix: "myelin-shell-", Suffix: ".out"}

// outputFile creates a new file for a command's output under dir's
// OutputDir, open for reading and writing and locked (flock, exclusive)
// for as long as it is open: by this process, by the command that inherits
// it and by the conversion it is handed to. CleanOutputs removes only the
// files it can lock, so it never takes a live process's output. A clean-up
// may open a file between its creation and its lock and remove it; the
// file is then made again.
//
// With no workspace directory (dir ""), or when OutputDir cannot be made
// (a read-only workspace), the file goes to the OS's temporary directory,
// locked as well (tempOutputs): one a crash leaves there is swept when a
// later one is made. When OutputDir or a directory on its way is
// a symbolic link (or not a directory), the command is refused with an
// error naming it (workspace.OwnLinkError): the link is never followed.
func outputFile(dir string) (*os.File, error) {
	if dir == "" {
		return tempOutputs.Create()
	}
	d, err := workspace.MakeOwnDir(dir, OutputDir)
	var le *workspace.OwnLinkError
	if errors.As(err, &le) {
		return nil, err
	}
	if err != nil {
		return tempOutputs.Create()
	}
	for tries := 0; ; tries++ {
		p := filepath.Join(d, randomName()+".out")
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && tries < 100 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := flock(f, syscall.LOCK_EX); err != nil {
			_ = f.Close()
			_ = os.Remove(p)
			return nil, err
		}
		if named(f, p) {
			return f, nil
		}
		_ = f.Close() // removed by a clean-up before it was locked
		if tries >= 100 {
			return nil, errors.New("output files in " + d + " keep being removed")
		}
	}
}

// CleanOutputs removes the output files under dir's OutputDir that no
// live process holds: those left by a myelin that ended without handing
// them to the conversion (killed, crashed). Two myelin processes may share
// a workspace: a file it cannot lock belongs to one that is running and is
// left alone. It reports nothing; a file it cannot remove stays for the
// next start.
func CleanOutputs(dir string) {
	if dir == "" {
		return
	}
	if workspace.CheckOwnDir(dir, OutputDir) != nil {
		return // a link: what it leads to is not ours to clean
	}
	d := filepath.Join(dir, filepath.FromSlash(OutputDir))
	entries, err := os.ReadDir(d)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".out") {
			continue
		}
		p := filepath.Join(d, e.Name())
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if flock(f, syscall.LOCK_EX|syscall.LOCK_NB) == nil && named(f, p) {
			_ = os.Remove(p)
		}
		_ = f.Close()
	}
}

// flock applies how (syscall.LOCK_EX, with LOCK_NB or not) to f.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// named reports whether p is still the name of the open file f.
func named(f *os.File, p string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(p)
	return err == nil && os.SameFile(a, b)
}

func randomName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
