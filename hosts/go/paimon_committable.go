package sinkcoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Committables of Paimon mode (docs/paimon.md, "The committable (encoding
// PCM v1)"): the metadata of one new data file, the bytes a writer passes
// to Writer.Report when the coordinator's table format is Paimon.

// MaxFileNameBytes is the longest data file name the coordinator accepts,
// in UTF-8 bytes.
const MaxFileNameBytes = 255

// ErrCommittable wraps every error of EncodeCommittable: the data file
// breaks a rule the coordinator would refuse it for (as a fatal
// invalid-event), so it is refused before it is sent.
var ErrCommittable = errors.New("sinkcoord: paimon committable")

// Datum is one partition or stats value: Null (or a nil Datum), Int32
// (INT, TINYINT, SMALLINT, DATE in days since epoch), Int64 (BIGINT),
// String (STRING, VARCHAR, CHAR) or Bool (BOOLEAN). The set is closed: the
// encoding has a tag for each and no other.
type Datum interface {
	// appendTo writes the value's tag and bytes; unexported so that no
	// other type can claim to be a Datum.
	appendTo(out []byte) []byte
}

// Null is SQL null.
type Null struct{}

// Int32 is a 32-bit value: INT, TINYINT, SMALLINT or DATE.
type Int32 int32

// Int64 is a 64-bit value: BIGINT.
type Int64 int64

// String is a STRING, VARCHAR or CHAR value; it must be valid UTF-8.
type String string

// Bool is a BOOLEAN value.
type Bool bool

func (Null) appendTo(out []byte) []byte { return append(out, 0) }
func (v Int32) appendTo(out []byte) []byte {
	return binary.LittleEndian.AppendUint32(append(out, 1), uint32(v))
}
func (v Int64) appendTo(out []byte) []byte {
	return binary.LittleEndian.AppendUint64(append(out, 2), uint64(v))
}
func (v String) appendTo(out []byte) []byte { return appendStr(append(out, 3), string(v)) }
func (v Bool) appendTo(out []byte) []byte {
	if v {
		return append(out, 4, 1)
	}
	return append(out, 4, 0)
}

// ColumnStats is one column's value stats. Min and Max are Null when every
// value is null; a nil NullCount means the writer does not know it (Go 1.26:
// NullCount: new(int64(3))).
type ColumnStats struct {
	Column    string
	Min, Max  Datum
	NullCount *int64
}

// DataFile is a new data file of an append table, as a writer reports it.
// FileName is the plain name (e.g. data-<uuid>-0.parquet) under the
// partition's bucket-0/; Partition holds one value per partition key in key
// order (nil for an unpartitioned table); no ValueStats means none.
type DataFile struct {
	FileName           string
	FileSize           int64
	RowCount           int64
	SchemaID           int64
	MinSequenceNumber  int64
	MaxSequenceNumber  int64
	CreationTimeMillis int64
	Partition          []Datum
	ValueStats         []ColumnStats
}

func appendStr(out []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint32(out, uint32(len(s))), s...)
}

func appendDatum(out []byte, v Datum) []byte {
	if v == nil {
		return Null{}.appendTo(out)
	}
	return v.appendTo(out)
}

func checkStr(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrCommittable, what)
	}
	if uint64(len(s)) > math.MaxUint32 {
		return fmt.Errorf("%w: %s is longer than 2^32 - 1 bytes", ErrCommittable, what)
	}
	return nil
}

func checkDatum(what string, v Datum) error {
	if s, ok := v.(String); ok {
		return checkStr(what, string(s))
	}
	return nil
}

// check makes the checks the coordinator makes without the table: the
// partition arity and the value types against the schema are its alone.
func (f *DataFile) check() error {
	n := f.FileName
	if err := checkStr("file name", n); err != nil {
		return err
	}
	if n == "" || len(n) > MaxFileNameBytes || n == "." || n == ".." ||
		strings.ContainsFunc(n, func(r rune) bool { return r == '/' || r == '\\' || r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: file name %q is not a plain file name (1 to %d bytes, not . or .., no /, \\ or control character)",
			ErrCommittable, n, MaxFileNameBytes)
	}
	// Paimon's fields are signed 64-bit: sizes are never negative.
	for _, c := range []struct {
		what string
		v    int64
	}{{"file size", f.FileSize}, {"row count", f.RowCount}, {"schema id", f.SchemaID}} {
		if c.v < 0 {
			return fmt.Errorf("%w: %s %d is negative", ErrCommittable, c.what, c.v)
		}
	}
	if uint64(len(f.Partition)) > math.MaxUint32 || uint64(len(f.ValueStats)) > math.MaxUint32 {
		return fmt.Errorf("%w: more than 2^32 - 1 partition values or stats columns", ErrCommittable)
	}
	for i, v := range f.Partition {
		if err := checkDatum(fmt.Sprintf("partition value %d", i), v); err != nil {
			return err
		}
	}
	for _, s := range f.ValueStats {
		if err := checkStr("stats column name", s.Column); err != nil {
			return err
		}
		if err := checkDatum(fmt.Sprintf("min of stats column %q", s.Column), s.Min); err != nil {
			return err
		}
		if err := checkDatum(fmt.Sprintf("max of stats column %q", s.Column), s.Max); err != nil {
			return err
		}
		// The encoding's -1 is "unknown", which is a nil NullCount here: a
		// negative count would read back as unknown, not as what was sent.
		if s.NullCount != nil && *s.NullCount < 0 {
			return fmt.Errorf("%w: null count %d of stats column %q is negative (nil means unknown)",
				ErrCommittable, *s.NullCount, s.Column)
		}
	}
	return nil
}

// EncodeCommittable returns the committable of f, encoding PCM v1. The error
// (wrapping ErrCommittable) names the field that breaks a rule.
func EncodeCommittable(f DataFile) ([]byte, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, 96+len(f.FileName))
	out = append(out, 'P', 'C', 'M', 1)
	out = appendStr(out, f.FileName)
	for _, x := range []int64{f.FileSize, f.RowCount, f.SchemaID, f.MinSequenceNumber, f.MaxSequenceNumber, f.CreationTimeMillis} {
		out = binary.LittleEndian.AppendUint64(out, uint64(x))
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(f.Partition)))
	for _, v := range f.Partition {
		out = appendDatum(out, v)
	}
	if len(f.ValueStats) == 0 {
		return append(out, 0), nil
	}
	out = binary.LittleEndian.AppendUint32(append(out, 1), uint32(len(f.ValueStats)))
	for _, s := range f.ValueStats {
		out = appendStr(out, s.Column)
		out = appendDatum(out, s.Min)
		out = appendDatum(out, s.Max)
		nc := int64(-1)
		if s.NullCount != nil {
			nc = *s.NullCount
		}
		out = binary.LittleEndian.AppendUint64(out, uint64(nc))
	}
	return out, nil
}
