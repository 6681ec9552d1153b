package history

import (
	"context"
	"slices"

	"github.com/myelin-run/myelin/history/internal/record"
)

// memBlobs is what a Memory keeps of Blobs: each content once, by hash,
// and the hash each (conversation, path) names.
type memBlobs struct {
	data  map[string][]byte
	paths map[blobName]string
}

// blobName is a kept file's name: its conversation and path.
type blobName struct{ id, path string }

// Shared reports the Memory's ShareBlobs (see Blobs).
func (s *Memory) Shared() bool { return s.ShareBlobs }

// PutBlob keeps data as the file at path of conversation id (see Blobs).
func (s *Memory) PutBlob(ctx context.Context, id, path string, data []byte) (string, error) {
	if err := stopped(ctx, "keeping file "+path+" of conversation "+id); err != nil {
		return "", err
	}
	if err := record.CheckBlob("keeping file "+path+" of conversation "+id, id, path, len(data)); err != nil {
		return "", err
	}
	hash := BlobHash(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return "", err
	}
	b := &s.blobs
	name := blobName{id, path}
	if have, ok := b.paths[name]; ok {
		if have != hash {
			return "", record.BlobTaken(id, path, have, hash)
		}
		return hash, nil
	}
	if b.data == nil {
		b.data, b.paths = map[string][]byte{}, map[blobName]string{}
	}
	if _, ok := b.data[hash]; !ok {
		b.data[hash] = slices.Clone(data)
	}
	b.paths[name] = hash
	return hash, nil
}

// BlobAt returns the bytes kept as the file at path of conversation id
// (see Blobs), or, for a fork or a branch, of a conversation whose
// messages it holds (Memory.family).
func (s *Memory) BlobAt(ctx context.Context, id, path string) (string, []byte, error) {
	if err := stopped(ctx, "reading file "+path+" of conversation "+id); err != nil {
		return "", nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return "", nil, err
	}
	for _, owner := range s.family(id) { // a fork's messages name its bases' files
		if hash, ok := s.blobs.paths[blobName{owner, path}]; ok {
			return hash, slices.Clone(s.blobs.data[hash]), nil
		}
	}
	return "", nil, record.NoBlob(id, path)
}

// BlobByHash returns the bytes whose hash is hash (see Blobs).
func (s *Memory) BlobByHash(ctx context.Context, hash string) ([]byte, error) {
	if err := stopped(ctx, "reading the kept file of sha256 "+hash); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.blobs.data[hash]
	if !ok {
		return nil, record.NoHash(hash)
	}
	return slices.Clone(data), nil
}
