// Package mailauth checks where a received message comes from: SPF with
// blitiri.com.ar/go/spf (RFC 7208, its lookup limits included), DKIM
// signatures with github.com/emersion/go-msgauth/dkim, and DMARC (RFC
// 7489) with go-msgauth/dmarc's record lookup and the alignment of the
// From domain with the passing SPF and DKIM domains, relaxed or strict as
// the record says (organizational domains from golang.org/x/net/publicsuffix).
//
// Every DNS query goes through the Resolver the Checker is built with: the
// system's (*net.Resolver) in service, a fake in tests.
package mailauth

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-msgauth/dmarc"
	"golang.org/x/net/publicsuffix"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// Resolver answers the DNS queries of the checks; *net.Resolver is one.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupAddr(ctx context.Context, addr string) ([]string, error)
}

// MaxSignatures bounds the DKIM signatures verified of one message.
const MaxSignatures = 5

// Checker checks messages (appemail.Authenticator). A nil resolver
// records every result as none, with the reason.
type Checker struct {
	dns     Resolver
	timeout time.Duration
}

var _ appemail.Authenticator = Checker{}

// New returns a checker asking dns, each message's checks bounded by
// timeout together.
func New(dns Resolver, timeout time.Duration) Checker { return Checker{dns: dns, timeout: timeout} }

// Check runs SPF, DKIM and DMARC on s, whose From header's domain is
// fromDomain.
func (c Checker) Check(ctx context.Context, s email.Spooled, fromDomain string) email.Authentication {
	if c.dns == nil {
		return email.Authentication{SPF: email.AuthNone, DKIM: email.AuthNone, DMARC: email.AuthNone, Reason: "no DNS resolver is configured"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var a email.Authentication
	a.SPF, a.SPFDomain = c.spf(ctx, s)
	a.DKIM, a.DKIMDomains = c.dkim(ctx, s.Raw)
	a.DMARC, a.DMARCPolicy = c.dmarc(ctx, a, strings.ToLower(fromDomain))
	return a
}

// spf checks the envelope sender (postmaster@ the HELO name for a bounce)
// against the connecting address.
func (c Checker) spf(ctx context.Context, s email.Spooled) (result, domain string) {
	sender := s.MailFrom
	if sender == "" {
		sender = "postmaster@" + s.Helo
	}
	if i := strings.LastIndexByte(sender, '@'); i >= 0 {
		domain = strings.ToLower(sender[i+1:])
	}
	ip := net.ParseIP(s.RemoteIP)
	if ip == nil || domain == "" {
		return email.AuthNone, domain
	}
	res, _ := spf.CheckHostWithSender(ip, s.Helo, sender, spf.WithResolver(c.dns), spf.WithContext(ctx))
	return string(res), domain
}

// dkim verifies the message's signatures: pass when one verifies (with
// the domains that did), else temperror, fail or none.
func (c Checker) dkim(ctx context.Context, raw []byte) (string, []string) {
	verifications, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
		LookupTXT:        func(name string) ([]string, error) { return c.dns.LookupTXT(ctx, name) },
		MaxVerifications: MaxSignatures,
	})
	if err != nil && len(verifications) == 0 {
		return email.AuthPermError, nil
	}
	result := email.AuthNone
	var passed []string
	for _, v := range verifications {
		switch {
		case v.Err == nil:
			passed = append(passed, strings.ToLower(v.Domain))
		case dkim.IsTempFail(v.Err) && result != email.AuthFail:
			result = email.AuthTempError
		default:
			result = email.AuthFail
		}
	}
	if len(passed) > 0 {
		return email.AuthPass, passed
	}
	return result, nil
}

// dmarc finds the From domain's policy (or its organizational domain's)
// and checks that a passing SPF or DKIM domain aligns with it.
func (c Checker) dmarc(ctx context.Context, a email.Authentication, from string) (result, policy string) {
	if from == "" {
		return email.AuthNone, ""
	}
	lookup := &dmarc.LookupOptions{LookupTXT: func(name string) ([]string, error) { return c.dns.LookupTXT(ctx, name) }}
	org := organizational(from)
	rec, err := dmarc.LookupWithOptions(from, lookup)
	subdomain := false
	if errors.Is(err, dmarc.ErrNoPolicy) && org != from {
		rec, err = dmarc.LookupWithOptions(org, lookup)
		subdomain = true
	}
	switch {
	case errors.Is(err, dmarc.ErrNoPolicy):
		return email.AuthNone, ""
	case dmarc.IsTempFail(err):
		return email.AuthTempError, ""
	case err != nil:
		return email.AuthPermError, ""
	}
	policy = string(rec.Policy)
	if subdomain && rec.SubdomainPolicy != "" {
		policy = string(rec.SubdomainPolicy)
	}
	if a.SPF == email.AuthPass && aligned(a.SPFDomain, from, rec.SPFAlignment) {
		return email.AuthPass, policy
	}
	for _, d := range a.DKIMDomains {
		if aligned(d, from, rec.DKIMAlignment) {
			return email.AuthPass, policy
		}
	}
	return email.AuthFail, policy
}

// aligned tells whether domain d aligns with the From domain: the same
// name in strict mode, the same organizational domain in relaxed mode.
func aligned(d, from string, mode dmarc.AlignmentMode) bool {
	d = strings.ToLower(d)
	if mode == dmarc.AlignmentStrict {
		return d == from
	}
	return organizational(d) == organizational(from)
}

// organizational is the registered domain of name under the public
// suffix list (example.co.uk for mail.example.co.uk), or name itself.
func organizational(name string) string {
	if org, err := publicsuffix.EffectiveTLDPlusOne(name); err == nil {
		return org
	}
	return name
}
