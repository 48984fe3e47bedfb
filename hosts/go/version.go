package sinkcoord

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CompatibleVersions are the WIT package versions of sink:coordinator this
// host runs: 0.2.x from 0.2.1 on, the range of the Rust host
// (sink_coordinator_host::artifact::COMPATIBLE_VERSIONS), the npm and the
// Python package. Within 0.2 versions only add; this host calls
// events-packed (0.2.2) when the module exports it, else events (0.2.1).
const CompatibleVersions = ">=0.2.1, <0.3.0"

// exportedVersions are the sorted, distinct versions V of the module's
// `sink:coordinator/<interface>@V#<function>` exports.
func exportedVersions(names []string) []string {
	var found []string
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, "sink:coordinator/")
		if !ok {
			continue
		}
		_, v, ok := strings.Cut(rest, "@")
		if !ok {
			continue
		}
		v, _, _ = strings.Cut(v, "#")
		found = append(found, v)
	}
	slices.Sort(found)
	return slices.Compact(found)
}

// checkVersion returns the module's version if this host runs it, else an
// *IncompatibleComponentError with the message every host prints.
func checkVersion(names []string) (string, error) {
	found := exportedVersions(names)
	wanted := "this host runs sink:coordinator " + CompatibleVersions
	switch {
	case len(found) == 0:
		return "", &IncompatibleComponentError{found, fmt.Sprintf(
			"not a sink-coordinator component: it exports no sink:coordinator interface (%s)", wanted)}
	case len(found) > 1:
		return "", &IncompatibleComponentError{found, fmt.Sprintf(
			"incompatible component: %s, the component exports several versions (%s)", wanted, strings.Join(found, ", "))}
	case !compatible(found[0]):
		return "", &IncompatibleComponentError{found, fmt.Sprintf(
			"incompatible component: %s, the component is sink:coordinator@%s", wanted, found[0])}
	}
	return found[0], nil
}

// compatible: a plain semver release (no pre-release, no leading zeros)
// within >=0.2.1, <0.3.0.
func compatible(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	var n [3]uint64
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return false
		}
		x, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return false
		}
		n[i] = x
	}
	return n[0] == 0 && n[1] == 2 && n[2] >= 1
}
