package accounts

import "sync/atomic"

// CountSecretComparisons makes s count its constant-time comparisons of
// secret hashes.
func CountSecretComparisons(s *Service) *atomic.Int32 {
	var n atomic.Int32
	equal := s.equal
	s.equal = func(a, b []byte) bool {
		n.Add(1)
		return equal(a, b)
	}
	return &n
}
