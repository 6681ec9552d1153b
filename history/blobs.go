package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/myelin-run/myelin/history/internal/record"
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
	// does the agent keep its spill files' bytes in it. A store kept
	// inside one workspace (the default SQLite file) is not shared, and
	// keeping the bytes there would only double the disk they take. (The
	// versions of the files the workspace tools change, which a rewind
	// puts back, the agent keeps in any Blobs store: FileChange.)
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
var ErrBlobTaken = record.ErrBlobTaken

// BlobHash is the hash a Blobs store keeps data by: its SHA-256 in
// lower-case hex.
func BlobHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
