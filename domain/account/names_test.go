package account

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The hand-written checks must accept exactly what these expressions, their
// specification, accept.
var (
	e164Spec    = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	dnsNameSpec = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
)

func TestNameChecksMatchTheirSpecification(t *testing.T) {
	fixed := []string{
		"", "+", "+1", "+123456", "+1234567", "+12345678901234", "+123456789012345", "+1234567890123456",
		"+0234567", "1234567", "+12345a7", "++1234567", "+١٢٣٤٥٦٧",
		"example.com", "mail.example.com", "a.co", "a.c", "a-b.example.org", "-a.example.org", "a-.example.org",
		"example.c0m", "example.com-", "example..com", ".example.com", "example.", "com", "xn--bcher-kva.example",
		"EXAMPLE.com", "ex_ample.com", strings.Repeat("a", 63) + ".com", strings.Repeat("a", 64) + ".com",
		"example." + strings.Repeat("c", 63), "example." + strings.Repeat("c", 64), "1.2.3.4", "a.b.c.d.ef",
	}
	check := func(s string) {
		if got, want := ValidE164(s), e164Spec.MatchString(s); got != want {
			t.Errorf("ValidE164(%q) = %v, the expression says %v", s, got, want)
		}
		if got, want := isDNSName(s), dnsNameSpec.MatchString(s); got != want {
			t.Errorf("isDNSName(%q) = %v, the expression says %v", s, got, want)
		}
	}
	for _, s := range fixed {
		check(s)
	}
	// Random strings over the alphabets that matter, of the lengths that matter.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, alphabet := range []string{"+0123456789a", "abc-.019_A"} {
		for range 200_000 {
			b := make([]byte, rng.IntN(20))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			check(string(b))
		}
	}
}
