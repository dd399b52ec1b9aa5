// Package accounts holds the tenancy use cases: accounts, API credentials,
// agent numbers and email domains, and the authentication of every request.
package accounts

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// Credential formats. The prefixes make leaked credentials easy to recognise
// for people and for secret scanners; the random parts are long enough
// (160 and 240 bits) that a fast keyed hash is a safe way to store them.
const (
	KeyPrefix    = "swk_"
	SecretPrefix = "sws_"
	keyRandom    = 32
	secretRandom = 48
	// shownKeyPrefix is how much of a key listings show.
	shownKeyPrefix = len(KeyPrefix) + 6
)

// Hash purposes, so that a key hash can never match a secret hash.
const (
	purposeKey    = "api-key"
	purposeSecret = "api-secret"
)

// Service runs the account use cases.
type Service struct {
	store Store
	keys  Keyring
	now   func() time.Time
	// historyRetention is the server's history retention.
	historyRetention time.Duration
	// unknownSecretHash is what the secret of an unknown key is compared
	// with, so that an unknown key costs the same work as a wrong secret.
	unknownSecretHash []byte
	// equal compares secret hashes in constant time (hmac.Equal); a
	// field so that tests can see the comparison is made.
	equal func(a, b []byte) bool
}

// Options tune a Service; the zero value is usable.
type Options struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// HistoryRetention is the server's history retention, which accounts
	// without their own follow; account.DefaultHistoryRetention when 0.
	HistoryRetention time.Duration
}

// NewService builds the account use cases over a store and the server keyring.
func NewService(store Store, keys Keyring, opts Options) *Service {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	retention := opts.HistoryRetention
	if retention <= 0 {
		retention = account.DefaultHistoryRetention
	}
	return &Service{
		store: store, keys: keys, now: now, historyRetention: retention,
		unknownSecretHash: keys.Hash(purposeSecret, randomToken(secretRandom)),
		equal:             hmac.Equal,
	}
}

// IssuedCredential is a credential together with its plain key and secret,
// which exist only in this value: they are shown once and never stored.
type IssuedCredential struct {
	Credential account.Credential
	Key        string
	Secret     string
}

// CreateAccount creates an account and its first credential.
func (s *Service) CreateAccount(ctx context.Context, name string) (account.Account, IssuedCredential, error) {
	if err := account.CheckName(name); err != nil {
		return account.Account{}, IssuedCredential{}, err
	}
	now := s.now().UTC()
	a := account.Account{ID: ident.New(ident.Account), Name: strings.TrimSpace(name), CreatedAt: now, UpdatedAt: now}
	issued := s.newCredential(a.ID, "default", now)
	if err := s.store.Repos().InsertAccount(ctx, a, issued.Credential); err != nil {
		return account.Account{}, IssuedCredential{}, fmt.Errorf("create account: %w", err)
	}
	return a, issued, nil
}

// Account returns one account.
func (s *Service) Account(ctx context.Context, id string) (account.Account, error) {
	if !ident.Valid(ident.Account, id) {
		return account.Account{}, failure.NotFound("account")
	}
	return s.store.Repos().Account(ctx, id)
}

// Accounts lists every account, oldest first.
func (s *Service) Accounts(ctx context.Context) ([]account.Account, error) {
	return s.store.Repos().Accounts(ctx)
}

// Rename changes an account's display name.
func (s *Service) Rename(ctx context.Context, id, name string) (account.Account, error) {
	if err := account.CheckName(name); err != nil {
		return account.Account{}, err
	}
	return s.store.Repos().RenameAccount(ctx, id, strings.TrimSpace(name), s.now().UTC())
}

// Overview is an account with everything it owns that a client needs to
// start sending: its numbers, email addresses and domains.
type Overview struct {
	Account account.Account
	Holdings
}

// Overview reads an account and what it owns. The slices are shared
// between callers and must not be modified.
func (s *Service) Overview(ctx context.Context, id string) (Overview, error) {
	if !ident.Valid(ident.Account, id) {
		return Overview{}, failure.NotFound("account")
	}
	r := s.store.Repos()
	a, err := r.Account(ctx, id)
	if err != nil {
		return Overview{}, err
	}
	h, err := r.Holdings(ctx, a)
	if err != nil {
		return Overview{}, err
	}
	return Overview{Account: a, Holdings: h}, nil
}

func (s *Service) newCredential(accountID, label string, now time.Time) IssuedCredential {
	key := KeyPrefix + randomToken(keyRandom)
	secret := SecretPrefix + randomToken(secretRandom)
	return IssuedCredential{
		Key:    key,
		Secret: secret,
		Credential: account.Credential{
			ID:         ident.New(ident.Credential),
			AccountID:  accountID,
			Label:      label,
			KeyPrefix:  key[:shownKeyPrefix],
			KeyHash:    s.keys.Hash(purposeKey, key),
			SecretHash: s.keys.Hash(purposeSecret, secret),
			CreatedAt:  now,
		},
	}
}

// IssueCredential adds a credential to an account.
func (s *Service) IssueCredential(ctx context.Context, accountID, label string) (IssuedCredential, error) {
	if label == "" {
		label = "default"
	}
	if len(label) > 100 {
		return IssuedCredential{}, failure.Invalid(failure.Field("string_too_long", "label must be at most 100 characters", "label"))
	}
	issued := s.newCredential(accountID, label, s.now().UTC())
	if err := s.store.Repos().InsertCredential(ctx, issued.Credential); err != nil {
		return IssuedCredential{}, err
	}
	return issued, nil
}

// Credentials lists an account's credentials, revoked ones included.
func (s *Service) Credentials(ctx context.Context, accountID string) ([]account.Credential, error) {
	if _, err := s.store.Repos().Account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.store.Repos().Credentials(ctx, accountID)
}

// RevokeCredential stops a credential from authenticating. Revoking twice is
// not an error; the first revocation time is kept.
func (s *Service) RevokeCredential(ctx context.Context, accountID, credentialID string) (account.Credential, error) {
	return s.store.Repos().RevokeCredential(ctx, accountID, credentialID, s.now().UTC())
}

// Principal is who a request acts as.
type Principal struct {
	AccountID    string
	CredentialID string
}

// Authenticate checks a key and, unless keyOnly, its secret. keyOnly serves
// the cron routes, where "Authorization: Bearer <key>" is a full credential.
// Every failure is the same Unauthenticated error, whichever half was wrong.
//
// An unknown key, a revoked key and a wrong secret take the same path: the
// keyed hashes of the key and of the presented secret, one lookup by the
// key's hash that reads the database, and a constant-time comparison with
// the stored secret hash, or with a dummy hash when there is none. The
// cache in front of the lookup (adapters/cache) answers from a kept
// credential only when the secret matches it (the accept of
// CredentialByKeyHash): a refusal reads the database whether the key was
// kept or never seen, so its timing does not tell whether a key exists.
func (s *Service) Authenticate(ctx context.Context, key, secret string, keyOnly bool) (Principal, error) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) > 200 || (!keyOnly && len(secret) > 200) {
		return Principal{}, failure.Unauthenticated()
	}
	keyHash := s.keys.Hash(purposeKey, key)
	var secretHash []byte
	if !keyOnly {
		secretHash = s.keys.Hash(purposeSecret, secret)
	}
	admits := func(c account.Credential) bool {
		known := c.ID != "" && !c.Revoked()
		stored := c.SecretHash
		if !known {
			stored = s.unknownSecretHash
		}
		match := keyOnly || s.equal(stored, secretHash)
		return known && match
	}
	c, err := s.store.Repos().CredentialByKeyHash(ctx, keyHash, admits)
	if failure.Is(err, failure.KindNotFound) {
		c, err = account.Credential{}, nil
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up credential: %w", err)
	}
	if !admits(c) {
		return Principal{}, failure.Unauthenticated()
	}
	return Principal{AccountID: c.AccountID, CredentialID: c.ID}, nil
}

// Verify checks that the credential p authenticated with may still be
// used: it exists, belongs to p's account and is not revoked; otherwise
// Unauthenticated. Sessions signed in with a key call it on every use, so
// revoking the key ends them. The lookup is the credential cache's
// (adapters/cache), which forgets a key revoked anywhere within about a
// second.
func (s *Service) Verify(ctx context.Context, p Principal) error {
	c, err := s.store.Repos().Credential(ctx, p.AccountID, p.CredentialID)
	if failure.Is(err, failure.KindNotFound) {
		return failure.Unauthenticated()
	}
	if err != nil {
		return fmt.Errorf("look up credential: %w", err)
	}
	if c.Revoked() {
		return failure.Unauthenticated()
	}
	return nil
}

// NumberInput is what an operator gives to add an agent number.
type NumberInput struct {
	AccountID string
	Number    string
	Service   string
	Provider  string
	// Settings are the provider's configuration (tokens, ids); they are
	// sealed with the server key before they are stored.
	Settings map[string]string
	Enabled  bool
}

// AddNumber registers an agent number on an account. A number is unique per
// service across all accounts.
func (s *Service) AddNumber(ctx context.Context, in NumberInput) (account.Number, error) {
	var p failure.Problems
	if !account.ValidE164(in.Number) {
		p.Add("value_error", "number must be in E.164 form, e.g. +14155550100", "number")
	}
	service, ok := account.ParseService(in.Service)
	if !ok {
		p.Add("enum", "service must be one of whatsapp, telegram", "service")
	}
	var provider account.Provider
	if ok {
		var err error
		if provider, err = account.ParseProvider(in.Provider, service); err != nil {
			p = append(p, failure.As(err).Fields...)
		}
	}
	if err := p.Err(); err != nil {
		return account.Number{}, err
	}
	n := account.Number{
		ID: ident.New(ident.Number), AccountID: in.AccountID, Number: in.Number,
		Service: service, Provider: provider, Enabled: in.Enabled, CreatedAt: s.now().UTC(),
	}
	settings := in.Settings
	if settings == nil {
		settings = map[string]string{}
	}
	raw, err := json.Marshal(settings)
	if err != nil {
		return account.Number{}, fmt.Errorf("encode provider settings: %w", err)
	}
	n.SealedSettings = s.keys.Seal(raw, n.ID)
	err = s.store.Repos().InsertNumber(ctx, n)
	if failure.Is(err, failure.KindConflict) {
		return account.Number{}, failure.Conflict("number_exists", "number "+n.Number+" is already registered for "+string(service))
	}
	if err != nil {
		return account.Number{}, err
	}
	return n, nil
}

// NumberSettings opens the sealed provider settings of a number.
func (s *Service) NumberSettings(n account.Number) (map[string]string, error) {
	raw, err := s.keys.Open(n.SealedSettings, n.ID)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", n.ID, err)
	}
	var settings map[string]string
	if err := json.Unmarshal(raw, &settings); err != nil {
		return nil, fmt.Errorf("number %s settings: %w", n.ID, err)
	}
	return settings, nil
}

// Numbers lists an account's agent numbers.
func (s *Service) Numbers(ctx context.Context, accountID string) ([]account.Number, error) {
	if _, err := s.store.Repos().Account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.store.Repos().Numbers(ctx, accountID)
}

// SetNumberEnabled enables or disables an agent number; a disabled number
// cannot send and its inbound traffic is refused.
func (s *Service) SetNumberEnabled(ctx context.Context, accountID, idOrNumber string, enabled bool) (account.Number, error) {
	id := idOrNumber
	if account.ValidE164(idOrNumber) {
		numbers, err := s.store.Repos().Numbers(ctx, accountID)
		if err != nil {
			return account.Number{}, err
		}
		id = ""
		for _, n := range numbers {
			if n.Number == idOrNumber {
				if id != "" {
					return account.Number{}, failure.Conflict("ambiguous_number", idOrNumber+" is registered on several services; name it by its number id")
				}
				id = n.ID
			}
		}
		if id == "" {
			return account.Number{}, failure.NotFound("number")
		}
	}
	return s.store.Repos().SetNumberEnabled(ctx, accountID, id, enabled)
}

// SetNumberProfile stores the display name and picture URL that change
// sets for the account's agent number numberID (the values as the caller
// checked them; see account.CheckProfileName) and returns the number.
// NotFound for a number of another account.
func (s *Service) SetNumberProfile(ctx context.Context, accountID, numberID string, change account.ProfileChange) (account.Number, error) {
	if change.At.IsZero() {
		change.At = s.now().UTC()
	}
	return s.store.Repos().SetNumberProfile(ctx, accountID, numberID, change)
}

// AddDomain authorises a custom email domain for an account. A domain can be
// authorised for one account only.
func (s *Service) AddDomain(ctx context.Context, accountID, name string) (account.Domain, error) {
	n, err := account.NormalizeDomain(name)
	if err != nil {
		return account.Domain{}, err
	}
	d := account.Domain{ID: ident.New(ident.Domain), AccountID: accountID, Name: n, CreatedAt: s.now().UTC()}
	err = s.store.Repos().InsertDomain(ctx, d)
	if failure.Is(err, failure.KindConflict) {
		return account.Domain{}, failure.Conflict("domain_exists", "domain "+n+" is already authorised")
	}
	if err != nil {
		return account.Domain{}, err
	}
	return d, nil
}

// Domains lists an account's custom email domains.
func (s *Service) Domains(ctx context.Context, accountID string) ([]account.Domain, error) {
	if _, err := s.store.Repos().Account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.store.Repos().Domains(ctx, accountID)
}

// Demo is what `serve --demo` prints for a newcomer.
type Demo struct {
	Account    account.Account
	Credential IssuedCredential
	Number     account.Number
}

// DemoNumber is the sandbox WhatsApp number of the demo account.
const DemoNumber = "+15550000001"

// EnsureDemo creates a demo account with a sandbox WhatsApp number if the
// database has no account yet; it returns nil when accounts already exist.
func (s *Service) EnsureDemo(ctx context.Context) (*Demo, error) {
	count, err := s.store.Repos().CountAccounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("count accounts: %w", err)
	}
	if count > 0 {
		return nil, nil
	}
	a, cred, err := s.CreateAccount(ctx, "Demo")
	if err != nil {
		return nil, err
	}
	n, err := s.AddNumber(ctx, NumberInput{AccountID: a.ID, Number: DemoNumber, Service: string(account.WhatsApp), Provider: string(account.ProviderSandbox), Enabled: true})
	if err != nil {
		return nil, fmt.Errorf("add demo number: %w", err)
	}
	return &Demo{Account: a, Credential: cred, Number: n}, nil
}

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomToken returns n characters of base62 (5.95 bits each), drawn without
// modulo bias.
func randomToken(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n*2)
	for len(out) < n {
		_, _ = rand.Read(buf)
		for _, b := range buf {
			if b < 248 { // 248 = 4*62: keep only bytes that map evenly
				out = append(out, tokenAlphabet[int(b)%62])
				if len(out) == n {
					break
				}
			}
		}
	}
	return string(out)
}
