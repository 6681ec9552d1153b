package sqlite

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// The driver's errors are told apart by SQLite's result codes: each case
// makes the real error and checks that exactly its classifier says yes.
func TestDriverErrorsAreClassifiedByTheirResultCodes(t *testing.T) {
	dir := t.TempDir()
	open := func(t *testing.T, name string) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	exec := func(db *sql.DB, q string) error { _, err := db.Exec(q); return err }

	noTable := exec(open(t, "a.db"), `SELECT * FROM nothing_here`)

	fk := open(t, "b.db")
	for _, q := range []string{`PRAGMA foreign_keys = ON`, `CREATE TABLE p (id TEXT PRIMARY KEY)`,
		`CREATE TABLE c (p TEXT REFERENCES p(id))`} {
		if err := exec(fk, q); err != nil {
			t.Fatal(err)
		}
	}
	foreign := exec(fk, `INSERT INTO c VALUES ('missing')`)

	// a database whose table's root page is overwritten with garbage
	path := filepath.Join(dir, "c.db")
	db := open(t, "c.db")
	if err := exec(db, `CREATE TABLE t (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := exec(db, `INSERT INTO t VALUES ('y')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := len(raw) / 2
	for i := page; i < len(raw); i++ {
		raw[i] = 0xA5
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var got string
	damaged := open(t, "c.db").QueryRow(`SELECT x FROM t`).Scan(&got)

	for _, tc := range []struct {
		name                                  string
		err                                   error
		table, foreign, damaged, busy, noOpen bool
	}{
		{"a missing table", noTable, true, false, false, false, false},
		{"a foreign key that fails", foreign, false, true, false, false, false},
		{"a damaged page", damaged, false, false, true, false, false},
	} {
		if tc.err == nil {
			t.Fatalf("%s: no error to classify", tc.name)
		}
		for _, c := range []struct {
			what      string
			got, want bool
		}{
			{"noSuchTable", noSuchTable(tc.err), tc.table},
			{"isForeignKey", isForeignKey(tc.err), tc.foreign},
			{"isDamaged", isDamaged(tc.err), tc.damaged},
			{"isBusy", isBusy(tc.err), tc.busy},
			{"cannotOpen", cannotOpen(tc.err), tc.noOpen},
		} {
			if c.got != c.want {
				t.Errorf("%s (%v): %s = %v, want %v", tc.name, tc.err, c.what, c.got, c.want)
			}
		}
	}
}
