package ident

import (
	"strings"
	"time"
)

// MadeAt is when an id New made with the given prefix was made, to the
// millisecond; ok is false when id is not such an id.
func MadeAt(prefix, id string) (at time.Time, ok bool) {
	rest, found := strings.CutPrefix(id, prefix+"_")
	if !found || len(rest) != timeChars+randomChars {
		return time.Time{}, false
	}
	var ms uint64
	for i := range timeChars {
		v := strings.IndexByte(alphabet, rest[i])
		if v < 0 {
			return time.Time{}, false
		}
		ms = ms<<5 | uint64(v)
	}
	return time.UnixMilli(int64(ms)).UTC(), true
}
