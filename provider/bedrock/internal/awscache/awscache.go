// Package awscache replaces a cache file the AWS CLI shares with
// bedrock's AWS credential providers — an SSO session's token
// (~/.aws/sso/cache, awssso) or an `aws login` session's credentials
// (~/.aws/login/cache, awslogin) — after a provider has refreshed it, so
// that whoever reads the file meanwhile (another myelin, the AWS CLI)
// finds the old content or the new, never a torn or empty file, and a
// crash leaves one of the two.
//
// It exists so that both providers write their caches one way, in one
// place. It must not decide where a cache lives, what it holds or which
// mode it has (its callers do), must not read a cache, and must not put
// a file's content (tokens, keys) in an error.
package awscache

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// tries bounds the temporary names tried when one is taken.
const tries = 10

// Replace puts data at path whole: it writes a new file beside path
// (path.tmp-<unix nanoseconds>-<random>, created with mode less the
// process umask, as any created file), syncs it to disk, and renames it
// over path. A reader sees the old file or the new one; of two processes
// replacing the same path at once, the last rename wins, whole. A failed
// step removes the temporary file and leaves path as it was. The
// directory is synced after the rename when it can be (a failure there
// costs only the rename's durability, not the file, and is not an
// error).
func Replace(path string, data []byte, mode fs.FileMode) error {
	f, err := create(path, mode.Perm())
	if err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // the error to report is the step's
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // best effort: see Replace's doc
		_ = d.Close()
	}
	return nil
}

// create makes a new temporary file beside path, never one that exists.
func create(path string, mode fs.FileMode) (*os.File, error) {
	var err error
	for range tries {
		name := path + ".tmp-" + strconv.FormatInt(time.Now().UnixNano(), 10) + "-" + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
		var f *os.File
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, err
}
