// Package keys is the List of the in-memory storages (MemoryStorage, the
// script player's and the bench job's): the keys of a map under a prefix.
package keys

import (
	"slices"
	"strings"
)

// WithPrefix is the keys of items that start with prefix, sorted in byte
// order (the order every Storage.List returns).
func WithPrefix(items map[string][]byte, prefix string) []string {
	var keys []string
	for k := range items {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
