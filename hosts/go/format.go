package sinkcoord

import "fmt"

// TableFormat is how a coordinator writes its table (wit `table-format`,
// WIT 0.2.5). It is host configuration, not part of the state bytes: a
// restored coordinator must be given the format again.
type TableFormat uint8

const (
	// TableFormatNative is this project's own snapshot log
	// (snapshot/<20 digits>, tag/<name>): the format of a coordinator whose
	// SetTableFormat is never called.
	TableFormatNative TableFormat = iota
	// TableFormatPaimon is an Apache Paimon append table with unaware
	// buckets (docs/paimon.md): schema/schema-0 must exist in the storage,
	// and every committable is one data file's metadata (encoding PCM v1).
	TableFormatPaimon
)

var tableFormatNames = [...]string{"native", "paimon"}

// String is the WIT name ("native", "paimon").
func (f TableFormat) String() string { return enumName(tableFormatNames[:], f, "TableFormat") }

// ParseTableFormat reads a WIT name ("native", "paimon").
func ParseTableFormat(name string) (TableFormat, error) {
	for i, n := range tableFormatNames {
		if n == name {
			return TableFormat(i), nil
		}
	}
	return 0, fmt.Errorf("sinkcoord: unknown table format %q (native or paimon)", name)
}

// SetTableFormat chooses the table format; allowed only before Start (else
// a fatal *IllegalStateError). A module older than 0.2.5 has no
// set-table-format and writes the native log only: asked for
// TableFormatNative it needs no call, asked for another format it returns
// an *InvalidConfigError without entering the guest (the coordinator stays
// usable), with the message of the Rust host.
func (c *Coordinator) SetTableFormat(format TableFormat) error {
	defer c.lock()()
	in := c.in
	if format > TableFormatPaimon {
		return fmt.Errorf("sinkcoord: set-table-format: %v is not a WIT case", format)
	}
	if in.trapped != nil {
		return in.trapped
	}
	if !in.rt.has[fnSetTableFormat] {
		if format == TableFormatNative {
			return nil
		}
		return &InvalidConfigError{fmt.Sprintf("table-format %v: the component has no set-table-format (it needs WIT 0.2.5 or later)", format)}
	}
	// (handle, enum discriminant) -> the return area of result<_, error>,
	// as set-limits.
	in.stack[0], in.stack[1] = uint64(c.self), uint64(format)
	return in.unitCall(fnSetTableFormat, "set-table-format")
}

// HasSetTableFormat reports whether the module exports set-table-format
// (WIT 0.2.5 on), i.e. whether it can write a table other than the native log.
func (r *Runtime) HasSetTableFormat() bool { return r.has[fnSetTableFormat] }
