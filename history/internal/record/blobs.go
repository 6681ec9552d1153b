package record

import "fmt"

// This file is the checks and errors of kept files (history.Blobs).

// MaxBlob is the largest file a store keeps: what workspace--read reads at
// the most (1 GiB), and what a Postgres bytea value holds.
const MaxBlob = 1 << 30

// CheckBlob refuses what no store keeps: an empty conversation id or path,
// data over MaxBlob. doing says what was being done, for the error. Every
// store's PutBlob calls it first, so that all refuse the same; it must not
// look at the store.
func CheckBlob(doing, id, path string, size int) error {
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

// BlobTaken is the error (wrapping ErrBlobTaken) of path kept with other
// bytes (sha256 have) than the ones given (sha256 want).
func BlobTaken(id, path, have, want string) error {
	return fmt.Errorf("keeping file %s of conversation %s: it is kept with other bytes (sha256 %s), not these (sha256 %s): %w",
		path, id, short12(have), short12(want), ErrBlobTaken)
}

// NoBlob is the error (wrapping ErrNotFound) of a path a conversation does
// not keep.
func NoBlob(id, path string) error {
	return fmt.Errorf("conversation %s keeps no file %s: %w", id, path, ErrNotFound)
}

// NoHash is the error (wrapping ErrNotFound) of a hash no kept file has.
func NoHash(hash string) error {
	return fmt.Errorf("no kept file has sha256 %s: %w", hash, ErrNotFound)
}

// short12 is the first 12 digits of a hash, as errors show it.
func short12(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
