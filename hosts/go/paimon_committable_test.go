package sinkcoord_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// committableVectors is tests/paimon/committables.json, whose hex the Rust
// encoder fixes (paimon/tests/committable_vectors.rs). The 64-bit fields are
// decimal strings there.
type committableVectors struct {
	Cases []struct {
		Name     string `json:"name"`
		DataFile struct {
			FileName           string                       `json:"file_name"`
			FileSize           string                       `json:"file_size"`
			RowCount           string                       `json:"row_count"`
			SchemaID           string                       `json:"schema_id"`
			MinSequenceNumber  string                       `json:"min_sequence_number"`
			MaxSequenceNumber  string                       `json:"max_sequence_number"`
			CreationTimeMillis string                       `json:"creation_time_millis"`
			Partition          []map[string]json.RawMessage `json:"partition"`
			ValueStats         []struct {
				Column    string                     `json:"column"`
				Min       map[string]json.RawMessage `json:"min"`
				Max       map[string]json.RawMessage `json:"max"`
				NullCount *string                    `json:"null_count"`
			} `json:"value_stats"`
		} `json:"data_file"`
		Hex string `json:"hex"`
	} `json:"cases"`
}

func vectorInt(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func vectorDatum(t *testing.T, m map[string]json.RawMessage) sc.Datum {
	t.Helper()
	if len(m) != 1 {
		t.Fatalf("a value has one kind: %v", m)
	}
	for kind, raw := range m {
		switch kind {
		case "null":
			return sc.Null{}
		case "int":
			return sc.Int32(vectorJSON[int32](t, raw))
		case "long":
			return sc.Int64(vectorInt(t, vectorJSON[string](t, raw)))
		case "string":
			return sc.String(vectorJSON[string](t, raw))
		case "bool":
			return sc.Bool(vectorJSON[bool](t, raw))
		}
		t.Fatalf("unknown value kind %q", kind)
	}
	panic("unreachable")
}

// vectorJSON is raw decoded as a T.
func vectorJSON[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEncodeCommittableVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "tests", "paimon", "committables.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v committableVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 8 {
		t.Fatalf("%d cases", len(v.Cases))
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			j := c.DataFile
			f := sc.DataFile{
				FileName:           j.FileName,
				FileSize:           vectorInt(t, j.FileSize),
				RowCount:           vectorInt(t, j.RowCount),
				SchemaID:           vectorInt(t, j.SchemaID),
				MinSequenceNumber:  vectorInt(t, j.MinSequenceNumber),
				MaxSequenceNumber:  vectorInt(t, j.MaxSequenceNumber),
				CreationTimeMillis: vectorInt(t, j.CreationTimeMillis),
			}
			for _, p := range j.Partition {
				f.Partition = append(f.Partition, vectorDatum(t, p))
			}
			for _, s := range j.ValueStats {
				cs := sc.ColumnStats{Column: s.Column, Min: vectorDatum(t, s.Min), Max: vectorDatum(t, s.Max)}
				if s.NullCount != nil {
					cs.NullCount = new(vectorInt(t, *s.NullCount))
				}
				f.ValueStats = append(f.ValueStats, cs)
			}
			got, err := sc.EncodeCommittable(f)
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(got) != c.Hex {
				t.Fatalf("got  %x\nwant %s", got, c.Hex)
			}
		})
	}
}

func TestEncodeCommittableNilDatumIsNull(t *testing.T) {
	f := sc.DataFile{FileName: "a.parquet", Partition: []sc.Datum{nil}}
	a, errA := sc.EncodeCommittable(f)
	f.Partition = []sc.Datum{sc.Null{}}
	b, errB := sc.EncodeCommittable(f)
	if errA != nil || errB != nil || string(a) != string(b) {
		t.Fatalf("%x %v / %x %v", a, errA, b, errB)
	}
}

func TestEncodeCommittableRefuses(t *testing.T) {
	ok := sc.DataFile{FileName: "data-1-0.parquet", FileSize: 1, RowCount: 1}
	for _, c := range []struct {
		name string
		edit func(*sc.DataFile)
		want string
	}{
		{"empty name", func(f *sc.DataFile) { f.FileName = "" }, "not a plain file name"},
		{"dot dot", func(f *sc.DataFile) { f.FileName = ".." }, "not a plain file name"},
		{"path", func(f *sc.DataFile) { f.FileName = "bucket-0/x.parquet" }, "not a plain file name"},
		{"backslash", func(f *sc.DataFile) { f.FileName = `a\b` }, "not a plain file name"},
		{"control", func(f *sc.DataFile) { f.FileName = "a\nb" }, "not a plain file name"},
		{"too long", func(f *sc.DataFile) { f.FileName = strings.Repeat("a", sc.MaxFileNameBytes+1) }, "not a plain file name"},
		{"bad utf8 name", func(f *sc.DataFile) { f.FileName = "a\xffb" }, "not valid UTF-8"},
		{"negative size", func(f *sc.DataFile) { f.FileSize = -1 }, "file size -1 is negative"},
		{"negative rows", func(f *sc.DataFile) { f.RowCount = -2 }, "row count -2 is negative"},
		{"negative schema", func(f *sc.DataFile) { f.SchemaID = -1 }, "schema id -1 is negative"},
		{"bad utf8 value", func(f *sc.DataFile) { f.Partition = []sc.Datum{sc.String("\xc3")} }, "partition value 0 is not valid UTF-8"},
		{"negative null count", func(f *sc.DataFile) {
			f.ValueStats = []sc.ColumnStats{{Column: "id", Min: sc.Int64(1), Max: sc.Int64(2), NullCount: new(int64(-1))}}
		}, `null count -1 of stats column "id" is negative`},
	} {
		f := ok
		c.edit(&f)
		_, err := sc.EncodeCommittable(f)
		if !errors.Is(err, sc.ErrCommittable) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := sc.EncodeCommittable(ok); err != nil {
		t.Fatal(err)
	}
	// 255 bytes is allowed, in a multi-byte name too.
	if _, err := sc.EncodeCommittable(sc.DataFile{FileName: strings.Repeat("é", 127) + "a"}); err != nil {
		t.Fatal(err)
	}
}
