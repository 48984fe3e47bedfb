package sinkcoord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sink-coordinator/sink-coordinator-go/internal/abi"
)

// Options configure a Runtime.
type Options struct {
	// CacheDir, if set, is wazero's compilation cache directory: a second
	// Runtime of the same module (another process) loads the machine code
	// from there instead of compiling again.
	CacheDir string
	// Interpreter selects wazero's interpreter instead of its compiler
	// (the default where wazero has one: amd64 and arm64).
	Interpreter bool
	// TableFormat is applied to every coordinator the Runtime creates
	// (Coordinator.SetTableFormat right after the constructor, as the Rust
	// host's RuntimeOptions::table_format). TableFormatNative, the zero
	// value, makes no call; TableFormatPaimon on a module older than 0.2.5
	// makes NewCoordinator return the *InvalidConfigError of SetTableFormat.
	TableFormat TableFormat
}

// fn names the exports this host calls; their full names carry the version.
type fn int

const (
	fnRealloc fn = iota
	fnCoordNew
	fnCoordDtor
	fnSetLimits
	fnSetTableFormat
	fnStart
	fnEvent
	fnEvents
	fnEventsPacked
	fnRestored
	fnSubtaskReset
	fnCheckpoint
	fnComplete
	fnAborted
	fnClose
	fnState
	fnCommittedUpTo
	fnWriterNew
	fnWriterDtor
	fnReport
	fnEndInput
	fnWriterCommitted
	fnWriterAborted
	fnWriterState
	fnWriterRestore
	fnLatestSnapshot
	fnSnapshotByID
	fnListSnapshots
	fnListTags
	fnCount
)

// exports: each export this host calls (fnRealloc is cabi_realloc),
// from the layouts generated from the WIT (package abi).
var exports = [fnCount]abi.Export{
	fnCoordNew:        abi.CoordinatorConstructor,
	fnCoordDtor:       abi.CoordinatorDtor,
	fnSetLimits:       abi.CoordinatorSetLimits,
	fnSetTableFormat:  abi.CoordinatorSetTableFormat,
	fnStart:           abi.CoordinatorStart,
	fnEvent:           abi.CoordinatorEvent,
	fnEvents:          abi.CoordinatorEvents,
	fnEventsPacked:    abi.CoordinatorEventsPacked,
	fnRestored:        abi.CoordinatorRestored,
	fnSubtaskReset:    abi.CoordinatorSubtaskReset,
	fnCheckpoint:      abi.CoordinatorCheckpoint,
	fnComplete:        abi.CoordinatorCheckpointComplete,
	fnAborted:         abi.CoordinatorCheckpointAborted,
	fnClose:           abi.CoordinatorClose,
	fnState:           abi.CoordinatorState,
	fnCommittedUpTo:   abi.CoordinatorCommittedUpTo,
	fnWriterNew:       abi.WriterConstructor,
	fnWriterDtor:      abi.WriterDtor,
	fnReport:          abi.WriterReport,
	fnEndInput:        abi.WriterEndInput,
	fnWriterCommitted: abi.WriterCommitted,
	fnWriterAborted:   abi.WriterCheckpointAborted,
	fnWriterState:     abi.WriterState,
	fnWriterRestore:   abi.WriterRestore,
	fnLatestSnapshot:  abi.TableLatestSnapshot,
	fnSnapshotByID:    abi.TableSnapshotById,
	fnListSnapshots:   abi.TableListSnapshots,
	fnListTags:        abi.TableListTags,
}

// optional exports: added within 0.2 (a 0.2.1 module lacks events-packed,
// a 0.2.4 one set-table-format).
var optionalExports = map[fn]bool{fnEventsPacked: true, fnSetTableFormat: true}

// Runtime is one compiled core module: every Coordinator, Writer and Table
// made from it is an instance of its own. Safe for concurrent use.
type Runtime struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	version  string
	sha256   string
	format   TableFormat // Options.TableFormat
	names    [fnCount]string
	posts    [fnCount]string // "" where the export has no cabi_post_ (abi.Export.PostReturn)
	has      [fnCount]bool
}

// LoadRuntime reads a core module file (dist/sink-coordinator-<v>.core.wasm)
// and compiles it. If FILE.sha256 exists beside it (the release's digest,
// in sha256sum format), the bytes must match it.
func LoadRuntime(ctx context.Context, path string, opts Options) (*Runtime, error) {
	core, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sinkcoord: %w", err)
	}
	if want, err := os.ReadFile(path + ".sha256"); err == nil {
		sum := sha256.Sum256(core)
		fields := strings.Fields(string(want))
		if len(fields) == 0 || fields[0] != hex.EncodeToString(sum[:]) {
			return nil, fmt.Errorf("sinkcoord: %s does not match its digest %s.sha256", path, path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sinkcoord: %w", err)
	}
	return NewRuntime(ctx, core, opts)
}

// NewRuntime compiles a core module. The module's version is checked
// against CompatibleVersions before anything is linked; its imports must be
// exactly the ten this host provides.
func NewRuntime(ctx context.Context, core []byte, opts Options) (*Runtime, error) {
	if opts.TableFormat > TableFormatPaimon {
		return nil, fmt.Errorf("sinkcoord: Options.TableFormat %v is not a WIT case", opts.TableFormat)
	}
	cfg := wazero.NewRuntimeConfig()
	if opts.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	if opts.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("sinkcoord: compilation cache %s: %w", opts.CacheDir, err)
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	r, err := newRuntime(ctx, rt, core)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	r.format = opts.TableFormat
	return r, nil
}

func newRuntime(ctx context.Context, rt wazero.Runtime, core []byte) (*Runtime, error) {
	compiled, err := rt.CompileModule(ctx, core)
	if err != nil {
		return nil, fmt.Errorf("sinkcoord: not a core module: %w", err)
	}
	exported := compiled.ExportedFunctions()
	names := make([]string, 0, len(exported))
	for n := range exported {
		names = append(names, n)
	}
	version, err := checkVersion(names)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(core)
	r := &Runtime{rt: rt, compiled: compiled, version: version, sha256: hex.EncodeToString(sum[:])}
	for id, e := range exports {
		name := "cabi_realloc"
		if e.Name != "" {
			name = "sink:coordinator/" + e.Interface + "@" + version + "#" + e.Name
		}
		r.names[id] = name
		_, r.has[id] = exported[name]
		if !r.has[id] && !optionalExports[fn(id)] {
			return nil, fmt.Errorf("sinkcoord: the core module (sink:coordinator@%s) does not export %q", version, name)
		}
		if r.has[id] && e.PostReturn {
			post := "cabi_post_" + name
			if _, ok := exported[post]; !ok {
				return nil, fmt.Errorf("sinkcoord: the core module (sink:coordinator@%s) does not export %q", version, post)
			}
			r.posts[id] = post
		}
	}
	if compiled.ExportedMemories()["memory"] == nil {
		return nil, fmt.Errorf("sinkcoord: the core module exports no memory")
	}
	if err := r.linkImports(ctx, compiled); err != nil {
		return nil, err
	}
	return r, nil
}

// Version is the module's WIT package version ("0.2.3").
func (r *Runtime) Version() string { return r.version }

// SHA256 is the lowercase hex digest of the module's bytes.
func (r *Runtime) SHA256() string { return r.sha256 }

// Close releases the runtime and every instance made from it.
func (r *Runtime) Close(ctx context.Context) error { return r.rt.Close(ctx) }

// importSig is one import this host provides.
type importSig struct {
	iface, name     string
	params, results []api.ValueType
	f               api.GoModuleFunc
}

var i32, i64 = api.ValueTypeI32, api.ValueTypeI64

func hostImports() []importSig {
	return []importSig{
		{"sink:coordinator/storage", "get", []api.ValueType{i32, i32, i32}, nil, hostGet},
		{"sink:coordinator/storage", "put-if-absent", []api.ValueType{i32, i32, i32, i32, i32}, nil, hostPutIfAbsent},
		{"sink:coordinator/storage", "put", []api.ValueType{i32, i32, i32, i32, i32}, nil, hostPut},
		{"sink:coordinator/storage", "delete", []api.ValueType{i32, i32, i32}, nil, hostDelete},
		{"sink:coordinator/storage", "list", []api.ValueType{i32, i32, i32}, nil, hostList},
		{"sink:coordinator/clock", "now-ms", nil, []api.ValueType{i64}, hostNowMs},
		{"[export]sink:coordinator/coordinator", "[resource-new]coordinator", []api.ValueType{i32}, []api.ValueType{i32}, hostResourceNew},
		{"[export]sink:coordinator/coordinator", "[resource-drop]coordinator", []api.ValueType{i32}, nil, hostResourceDrop(fnCoordDtor)},
		{"[export]sink:coordinator/writer", "[resource-new]writer", []api.ValueType{i32}, []api.ValueType{i32}, hostResourceNew},
		{"[export]sink:coordinator/writer", "[resource-drop]writer", []api.ValueType{i32}, nil, hostResourceDrop(fnWriterDtor)},
	}
}

// linkImports instantiates one host module per import module name, named
// with the module's own version; every import of the module must be one of
// them (a module wanting something else fails here, not at a call).
func (r *Runtime) linkImports(ctx context.Context, compiled wazero.CompiledModule) error {
	provided := map[[2]string]bool{}
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for _, s := range hostImports() {
		module := s.iface + "@" + r.version
		provided[[2]string{module, s.name}] = true
		b, ok := builders[module]
		if !ok {
			b = r.rt.NewHostModuleBuilder(module)
			builders[module] = b
			order = append(order, module)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(s.f, s.params, s.results).Export(s.name)
	}
	for _, def := range compiled.ImportedFunctions() {
		module, name, _ := def.Import()
		if !provided[[2]string{module, name}] {
			return fmt.Errorf("sinkcoord: the core module imports %q from %q, which this host does not provide", name, module)
		}
	}
	if len(compiled.ImportedMemories()) > 0 {
		return fmt.Errorf("sinkcoord: the core module imports a memory; this host provides none")
	}
	for _, module := range order {
		if _, err := builders[module].Instantiate(ctx); err != nil {
			return fmt.Errorf("sinkcoord: linking %s: %w", module, err)
		}
	}
	return nil
}
