package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Blobs is the part of a Store that keeps the bytes of a conversation's
// workspace files (spill files and saved payloads, contract §4 and §5), so
// that a conversation resumed in another workspace — another host sharing
// the store — can still read the files its stored text names. It is
// optional, like Requests: a Store without it keeps conversations, and
// their files live only in the workspace that wrote them.
//
// Bytes are kept once per content (content-addressed by their SHA-256) and
// named by (conversation, path): the workspace-relative path the file was
// saved under. A path names one content for good: keeping the same bytes
// under it again is a no-op, other bytes an error wrapping ErrBlobTaken
// (spill files are never overwritten, so neither are their blobs).
//
// A Blobs store must not interpret paths (the workspace checks them
// before it writes a file) nor change the bytes it is given.
type Blobs interface {
	// Shared reports whether the store is shared by workspaces that do
	// not share their files (other hosts, other directories): only then
	// does the agent keep its files' bytes in it. A store kept inside one
	// workspace (the default SQLite file) is not shared, and keeping the
	// bytes there would only double the disk they take.
	Shared() bool
	// PutBlob keeps data as the file at path of conversation id and
	// returns its hash (BlobHash). It waits for the store's durability,
	// as Append does: a file named in a result must be kept before the
	// result is sent (contract §7). An unknown conversation is an error
	// wrapping ErrNotFound; the path kept with other bytes, one wrapping
	// ErrBlobTaken.
	PutBlob(ctx context.Context, id, path string, data []byte) (hash string, err error)
	// BlobAt returns the bytes kept as the file at path of conversation
	// id and their hash as stored (a reader checks one against the
	// other: BlobHash). A path it does not keep is an error wrapping
	// ErrNotFound.
	BlobAt(ctx context.Context, id, path string) (hash string, data []byte, err error)
	// BlobByHash returns the bytes whose hash is hash, whatever path and
	// conversation keep them; an unknown hash is an error wrapping
	// ErrNotFound.
	BlobByHash(ctx context.Context, hash string) ([]byte, error)
}

// ErrBlobTaken is wrapped by the error of a PutBlob whose path is already
// kept with other bytes.
var ErrBlobTaken = errors.New("the path is already kept with other bytes, and a kept file is never replaced")

// BlobHash is the hash a Blobs store keeps data by: its SHA-256 in
// lower-case hex.
func BlobHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// MaxBlob is the largest file a Blobs store keeps: what workspace--read
// reads at the most (1 GiB), and what a Postgres bytea value holds.
const MaxBlob = 1 << 30

// checkBlob refuses what no Blobs store keeps: an empty conversation id or
// path, data over MaxBlob. doing says what was being done, for the error.
func checkBlob(doing, id, path string, size int) error {
	switch {
	case id == "":
		return fmt.Errorf("%s: no conversation id", doing)
	case path == "":
		return fmt.Errorf("%s: no path", doing)
	case size > MaxBlob:
		return fmt.Errorf("%s: the file is %d bytes, over the %d a store keeps", doing, size, MaxBlob)
	}
	return nil
}

// blobTaken is the error of path kept with other bytes (have) than the
// ones given (want).
func blobTaken(id, path, have, want string) error {
	return fmt.Errorf("keeping file %s of conversation %s: it is kept with other bytes (sha256 %s), not these (sha256 %s): %w",
		path, id, short12(have), short12(want), ErrBlobTaken)
}

// errNoBlob is the error of a path a conversation does not keep.
func errNoBlob(id, path string) error {
	return fmt.Errorf("conversation %s keeps no file %s: %w", id, path, ErrNotFound)
}

// errNoHash is the error of a hash no file has.
func errNoHash(hash string) error {
	return fmt.Errorf("no kept file has sha256 %s: %w", hash, ErrNotFound)
}

// short12 is the first 12 digits of a hash, as errors show it.
func short12(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
