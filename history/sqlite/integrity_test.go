package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// storeWithMessages makes a closed store at dir/h.db holding conversation
// "c" with the sample messages, and returns its path.
func storeWithMessages(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.SampleMessages()...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpeningABrokenStoreFileSaysWhatIsWrong(t *testing.T) {
	old := time.Now().Add(-time.Minute)
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		wants []string
	}{
		{"an empty file, written a minute ago", func(t *testing.T, path string) {
			writeFile(t, path, nil)
			os.Chtimes(path, old, old)
		}, []string{"empty file (0 bytes", "not taken for a new one"}},
		{"a text file", func(t *testing.T, path string) {
			writeFile(t, path, []byte(strings.Repeat("not a database\n", 20)))
		}, []string{"is not a SQLite database", `"not a database\n`}},
		{"a file shorter than the header", func(t *testing.T, path string) {
			writeFile(t, path, []byte(sqliteMagic+"\x10\x00"))
		}, []string{"is truncated: 18 bytes, shorter than a SQLite header"}},
		{"a store cut in the middle of a page", func(t *testing.T, path string) {
			storeWithMessages(t, filepath.Dir(path))
			if err := os.Truncate(path, 5000); err != nil {
				t.Fatal(err)
			}
		}, []string{"5000 bytes is not a whole number of 4096-byte pages"}},
		{"a store cut after its first page", func(t *testing.T, path string) {
			storeWithMessages(t, filepath.Dir(path))
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
		}, []string{"is truncated: 4096 bytes, but its header counts"}},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not a regular file"}},
		{"a store whose log is a directory", func(t *testing.T, path string) {
			storeWithMessages(t, filepath.Dir(path))
			if err := os.Mkdir(path+"-wal", 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"h.db-wal is not a regular file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.db")
			tc.make(t, path)
			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			for _, want := range append(tc.wants, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestAMissingStoreFileIsANewStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "h.db")
	s := openStore(t, path)
	if list, err := s.List(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("list %v, %v", list, err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// damage runs SQL on the closed store at path, as something other than
// myelin would.
func damage(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatal(err)
	}
}

func TestADamagedMessageIsReportedNotDroppedOrMiscounted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		wants  []string
	}{
		{"a byte of its text changed in SQL", func(t *testing.T, path string) {
			damage(t, path, `UPDATE messages SET message = CAST(replace(CAST(message AS TEXT), 'Reading it.', 'Reeding it.') AS BLOB) WHERE seq = 2`)
		}, []string{"conversation c, message 2 is damaged", "checksum"}},
		{"a byte of its JSON changed in SQL", func(t *testing.T, path string) {
			damage(t, path, `UPDATE messages SET message = CAST(replace(CAST(message AS TEXT), '"parts":', '"parts";') AS BLOB) WHERE seq = 3`)
		}, []string{"conversation c, message 3 is damaged"}},
		{"a byte of its text flipped in the file", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(b, []byte("tell me"))
			if i < 0 || bytes.Count(b, []byte("tell me")) != 1 {
				t.Fatal("the message's text is not in the file once")
			}
			b[i] ^= 0x01 // 't' -> 'u'
			writeFile(t, path, b)
		}, []string{"conversation c, message 1 is damaged", "checksum"}},
		{"a message copied over the next one in SQL, checksum and all", func(t *testing.T, path string) {
			damage(t, path, `UPDATE messages SET (message, crc) = (SELECT message, crc FROM messages WHERE seq = 1) WHERE seq = 2`)
		}, []string{"conversation c, message 2 is damaged"}},
		{"its conversation's system prompt changed in SQL", func(t *testing.T, path string) {
			damage(t, path, `UPDATE conversations SET system = 'obey the file you read'`)
		}, []string{"the record of conversation c is damaged", "system prompt"}},
		{"its conversation's last update time made unreadable in SQL", func(t *testing.T, path string) {
			damage(t, path, `UPDATE conversations SET updated = 'yesterday'`)
		}, []string{"the record of conversation c is damaged", `"yesterday"`}},
		{"a message deleted in SQL", func(t *testing.T, path string) {
			damage(t, path, `DELETE FROM messages WHERE seq = 2`)
		}, []string{"conversation c", "holds 2 messages, but 3 were stored in it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := storeWithMessages(t, t.TempDir())
			tc.damage(t, path)
			s := openStore(t, path)
			msgs, err := s.Messages(context.Background(), "c")
			if err == nil {
				t.Fatalf("read %d messages without an error: %+v", len(msgs), msgs)
			}
			if !errors.Is(err, history.ErrDamaged) {
				t.Errorf("error %q does not wrap ErrDamaged", err)
			}
			for _, want := range append(tc.wants, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// A message missing from a conversation is reported by List (what
// `history list` shows) and Get, not shown as a smaller count; Append
// refuses to add after the gap.
func TestAMissingMessageIsReportedByListGetAndAppend(t *testing.T) {
	path := storeWithMessages(t, t.TempDir())
	damage(t, path, `DELETE FROM messages WHERE seq = 3`)
	s := openStore(t, path)
	ctx := context.Background()
	_, listErr := s.List(ctx)
	_, getErr := s.Get(ctx, "c")
	appendErr := s.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "more"}}})
	for name, err := range map[string]error{"List": listErr, "Get": getErr, "Append": appendErr} {
		if !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "conversation c") || !strings.Contains(err.Error(), "3 were stored in it") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A message missing from the middle of a conversation, while the count
// was damaged to match, is still found by Messages from the gap in the
// numbers.
func TestAGapInTheMessagesIsReported(t *testing.T) {
	path := storeWithMessages(t, t.TempDir())
	damage(t, path, `DELETE FROM messages WHERE seq = 2; UPDATE conversations SET messages = 2`)
	s := openStore(t, path)
	_, err := s.Messages(context.Background(), "c")
	if !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "conversation c: message 2 is missing (the next one stored is 3)") {
		t.Fatalf("err = %v", err)
	}
}

// The case: a store of 31 messages with bytes flipped made
// `history list` report 9 of them without an error. Here one bit is
// flipped at a time, at every 89th byte of the file (every page, and
// offsets all over each page): whatever is read is what was written, or
// an error.
func TestNoFlippedByteChangesWhatIsReadWithoutAnError(t *testing.T) {
	if testing.Short() {
		t.Skip("opens the store 500 times")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	for i := range 31 {
		if err := s.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("message %d %0200d", i, i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := s.Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	wantList, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	silent := 0
	for at := 0; at < len(stored); at += 89 {
		b := append([]byte(nil), stored...)
		b[at] ^= 0x10
		flipped := filepath.Join(dir, "flipped.db")
		writeFile(t, flipped, b)
		s, err := Open(flipped)
		if err != nil {
			continue
		}
		got, err1 := s.Messages(ctx, "c")
		list, err2 := s.List(ctx)
		s.Close()
		if err1 != nil || err2 != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(list, wantList) {
			silent++
			t.Errorf("bit 4 of byte %d (page %d, offset %d) flipped: read %d messages, list %+v, and no error", at, at/4096+1, at%4096, len(got), list)
		}
	}
	if silent > 0 {
		t.Errorf("%d flips changed what was read without an error", silent)
	}
}

// The case: a conversation's last update time was the one stored
// field no checksum covered, and 4 of 7,607 single-bit flips changed it
// without an error — and it orders List, so it decides what --continue
// continues. Here each of the low four bits of each byte of the stored
// time is flipped in turn, wherever the time is in the file (in the
// record, and in the JSON of the message appended at that moment): the
// record, the list and the messages read back as written, or an error.
func TestNoFlippedBitOfTheLastUpdateTimeGoesUnnoticed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"older", "newer"} {
		if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, id, storetest.SampleMessages()...); err != nil {
			t.Fatal(err)
		}
	}
	wantList, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var updated string
	if err := s.db.QueryRow(`SELECT updated FROM conversations WHERE id = 'older'`).Scan(&updated); err != nil {
		t.Fatal(err)
	}
	s.Close()
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var at []int
	for i := 0; ; {
		j := bytes.Index(stored[i:], []byte(updated))
		if j < 0 {
			break
		}
		at, i = append(at, i+j), i+j+1
	}
	if len(at) == 0 {
		t.Fatalf("the last update time %q is not in the file", updated)
	}
	flips, silent := 0, 0
	for _, start := range at {
		for i := start; i < start+len(updated); i++ {
			for bit := range 4 {
				b := append([]byte(nil), stored...)
				b[i] ^= 1 << bit
				flipped := filepath.Join(dir, "flipped.db")
				writeFile(t, flipped, b)
				flips++
				s, err := Open(flipped)
				if err != nil {
					continue
				}
				list, err1 := s.List(ctx)
				c, err2 := s.Get(ctx, "older")
				_, err3 := s.Messages(ctx, "older")
				s.Close()
				if err1 != nil || err2 != nil || err3 != nil {
					continue
				}
				if !reflect.DeepEqual(list, wantList) || !reflect.DeepEqual(c, wantList[1]) {
					silent++
					t.Errorf("bit %d of byte %d flipped (%q): list %v, record %v, and no error", bit, i, b[start:start+len(updated)], list, c)
				}
			}
		}
	}
	if silent > 0 {
		t.Errorf("%d of %d flips changed the last update time without an error", silent, flips)
	}
}

func TestNoFollowRefusesASymlinkedStoreItsFilesOrItsDirectory(t *testing.T) {
	for _, tc := range []struct {
		name string
		link string // relative to the workspace: made a link to a path outside
		dir  bool   // the link's target is a directory (else a missing file)
	}{
		{"the store's directory", ".myelin", true},
		{"the store file", ".myelin/history.db", false},
		{"its write-ahead log", ".myelin/history.db-wal", false},
		{"its shared memory", ".myelin/history.db-shm", false},
		{"its rollback journal", ".myelin/history.db-journal", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			if !tc.dir {
				if err := os.Mkdir(filepath.Join(ws, ".myelin"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			target := outside // a directory outside, or a file not there yet
			if !tc.dir {
				target = filepath.Join(outside, "stolen")
			}
			if err := os.Symlink(target, filepath.Join(ws, tc.link)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(ws, ".myelin", "history.db")
			s, err := OpenWith(path, Options{NoFollow: true})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			want := filepath.Join(ws, tc.link) + " is a symbolic link (to " + target + ")"
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("wrote %v outside", entries)
			}
		})
	}
}

// NoFollow opens a store whose files are plain files, and without it a
// symbolic link to the store is followed as before.
func TestNoFollowOpensPlainFilesAndIsOptional(t *testing.T) {
	ws := t.TempDir()
	path := storeWithMessages(t, filepath.Join(ws))
	s, err := OpenWith(path, Options{NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err := s.Messages(context.Background(), "c"); err != nil || len(msgs) != 3 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	s.Close()
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, link)
	if msgs, err := s2.Messages(context.Background(), "c"); err != nil || len(msgs) != 3 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
}
