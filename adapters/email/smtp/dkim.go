package smtp

import (
	"fmt"
	"os"
	"strings"

	mail "github.com/wneessen/go-mail"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// DKIMKeys are DKIM signers by From domain.
type DKIMKeys map[string]*mail.DKIMSigner

// For returns the signer for an address's domain, or nil.
func (k DKIMKeys) For(address string) *mail.DKIMSigner {
	if len(k) == 0 {
		return nil
	}
	at := strings.LastIndexByte(address, '@')
	return k[strings.ToLower(address[at+1:])]
}

// ParseDKIM reads the DKIM setting (SWITCHBOARD_SMTP_DKIM): a
// comma-separated list of domain=selector:keyfile, where keyfile is a PEM
// private key (RSA in PKCS#1 or PKCS#8, or Ed25519 in PKCS#8). The public
// key is published by the domain's owner as a TXT record at
// <selector>._domainkey.<domain>.
func ParseDKIM(spec string) (DKIMKeys, error) {
	keys := DKIMKeys{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		domain, rest, ok1 := strings.Cut(item, "=")
		selector, file, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || selector == "" || file == "" {
			return nil, fmt.Errorf("dkim: %q is not domain=selector:keyfile", item)
		}
		d, err := account.NormalizeDomain(domain)
		if err != nil {
			return nil, fmt.Errorf("dkim: %q is not a domain", domain)
		}
		pemBytes, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("dkim: read key for %s: %w", d, err)
		}
		key, err := mail.PrivKeyFromPEM(pemBytes)
		if err != nil {
			return nil, fmt.Errorf("dkim: key for %s: %w", d, err)
		}
		signer := mail.NewDKIMSigner(d, selector, key)
		// The signer picks its algorithm on its first signature; sign once
		// here so that concurrent sends later only read it.
		if _, err := signer.Sign([]byte("From: a@"+d+"\r\n"), []byte("\r\n")); err != nil {
			return nil, fmt.Errorf("dkim: key for %s cannot sign: %w", d, err)
		}
		keys[d] = signer
	}
	return keys, nil
}
