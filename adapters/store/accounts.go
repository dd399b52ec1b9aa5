package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// AccountStore is the storage of the account use cases (accounts.Store): accounts, credentials, numbers, domains.
type AccountStore struct{ *Conn }

var _ accounts.Store = AccountStore{}

// AccountStore is db's AccountStore, outside any transaction.
func (db *DB) AccountStore() AccountStore { return AccountStore{db.base} }

// Repos is s itself: each of its methods is atomic by itself.
func (s AccountStore) Repos() accounts.Repos { return s }

// owned runs write in one transaction after checking there that the
// account accountID exists (NotFound otherwise).
func (r AccountStore) owned(ctx context.Context, accountID string, write func(ctx context.Context, c *Conn) error) error {
	return r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		if _, err := (AccountStore{c}).Account(ctx, accountID); err != nil {
			return err
		}
		return write(ctx, c)
	})
}

// insertRow inserts one row on c.
func insertRow(ctx context.Context, c *Conn, row any, what string) error {
	_, err := c.write.NewInsert().Model(row).Exec(ctx)
	return translate(err, what)
}

type accountRow struct {
	bun.BaseModel `bun:"table:accounts"`
	ID            string    `bun:"id,pk"`
	Name          string    `bun:"name"`
	Version       int64     `bun:"version"`
	RetentionDays int       `bun:"history_retention_days"`
	MessageDays   int       `bun:"message_retention_days"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

func (r accountRow) domain() account.Account {
	return account.Account{ID: r.ID, Name: r.Name, Version: r.Version, HistoryRetentionDays: r.RetentionDays, MessageRetentionDays: r.MessageDays,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// InsertAccount stores a new account and its credentials in one
// transaction.
func (r AccountStore) InsertAccount(ctx context.Context, a account.Account, credentials ...account.Credential) error {
	row := accountRow{ID: a.ID, Name: a.Name, Version: a.Version, RetentionDays: a.HistoryRetentionDays, MessageDays: a.MessageRetentionDays, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	if len(credentials) == 0 {
		return insertRow(ctx, r.Conn, &row, "account")
	}
	return r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		if err := insertRow(ctx, c, &row, "account"); err != nil {
			return err
		}
		for _, cred := range credentials {
			if err := insertRow(ctx, c, credentialToRow(cred), "credential"); err != nil {
				return err
			}
		}
		return nil
	})
}

// RenameAccount saves an account's name, moves its version on and reads
// it back, in one transaction.
func (r AccountStore) RenameAccount(ctx context.Context, id, name string, at time.Time) (account.Account, error) {
	return r.updateAccount(ctx, id, at, func(q *bun.UpdateQuery) *bun.UpdateQuery { return q.Set("name = ?", name) })
}

// SetHistoryRetention saves an account's own history retention in days
// (0: the server's), moves its version on and reads it back, in one
// transaction.
func (r AccountStore) SetHistoryRetention(ctx context.Context, id string, days int, at time.Time) (account.Account, error) {
	return r.updateAccount(ctx, id, at, func(q *bun.UpdateQuery) *bun.UpdateQuery { return q.Set("history_retention_days = ?", days) })
}

// SetMessageRetention saves an account's message retention in days (0:
// off), moves its version on and reads it back, in one transaction.
func (r AccountStore) SetMessageRetention(ctx context.Context, id string, days int, at time.Time) (account.Account, error) {
	return r.updateAccount(ctx, id, at, func(q *bun.UpdateQuery) *bun.UpdateQuery { return q.Set("message_retention_days = ?", days) })
}

// updateAccount changes the account as set says, updated at at, moves its
// version on and reads it back, in one transaction.
func (r AccountStore) updateAccount(ctx context.Context, id string, at time.Time, set func(*bun.UpdateQuery) *bun.UpdateQuery) (account.Account, error) {
	var out account.Account
	err := r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		res, err := set(c.write.NewUpdate().Model((*accountRow)(nil))).
			Set("updated_at = ?", at).Set("version = version + 1").
			Where("id = ?", id).Exec(ctx)
		if err != nil {
			return translate(err, "account")
		}
		if err := requireOneRow(res, "account"); err != nil {
			return err
		}
		out, err = AccountStore{c}.Account(ctx, id)
		return err
	})
	return out, err
}

// Account reads one account.
func (r AccountStore) Account(ctx context.Context, id string) (account.Account, error) {
	var row accountRow
	if err := r.selectOne(ctx, &row, "SELECT id, name, version, history_retention_days, message_retention_days, created_at, updated_at FROM accounts WHERE id = $1", id); err != nil {
		return account.Account{}, translate(err, "account")
	}
	return row.domain(), nil
}

// Accounts lists every account, oldest first.
func (r AccountStore) Accounts(ctx context.Context) ([]account.Account, error) {
	var rows []accountRow
	if err := r.read.NewSelect().Model(&rows).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, translate(err, "account")
	}
	out := make([]account.Account, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// CountAccounts counts accounts.
func (r AccountStore) CountAccounts(ctx context.Context) (int, error) {
	n, err := r.read.NewSelect().Model((*accountRow)(nil)).Count(ctx)
	return n, translate(err, "account")
}

const credentialColumns = "id, account_id, label, key_prefix, key_hash, secret_hash, created_at, revoked_at"

type credentialRow struct {
	bun.BaseModel `bun:"table:credentials"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	Label         string     `bun:"label"`
	KeyPrefix     string     `bun:"key_prefix"`
	KeyHash       []byte     `bun:"key_hash"`
	SecretHash    []byte     `bun:"secret_hash"`
	CreatedAt     time.Time  `bun:"created_at"`
	RevokedAt     *time.Time `bun:"revoked_at"`
}

func (r credentialRow) domain() account.Credential {
	c := account.Credential{
		ID: r.ID, AccountID: r.AccountID, Label: r.Label, KeyPrefix: r.KeyPrefix,
		KeyHash: r.KeyHash, SecretHash: r.SecretHash, CreatedAt: r.CreatedAt.UTC(),
	}
	if r.RevokedAt != nil {
		at := r.RevokedAt.UTC()
		c.RevokedAt = &at
	}
	return c
}

// InsertCredential stores a new credential of an account that exists.
func (r AccountStore) InsertCredential(ctx context.Context, c account.Credential) error {
	return r.owned(ctx, c.AccountID, func(ctx context.Context, tx *Conn) error {
		return insertRow(ctx, tx, credentialToRow(c), "credential")
	})
}

func credentialToRow(c account.Credential) *credentialRow {
	return &credentialRow{
		ID: c.ID, AccountID: c.AccountID, Label: c.Label, KeyPrefix: c.KeyPrefix,
		KeyHash: c.KeyHash, SecretHash: c.SecretHash, CreatedAt: c.CreatedAt, RevokedAt: c.RevokedAt,
	}
}

// CredentialByKeyHash finds the credential whose key hashes to keyHash;
// it keeps nothing, so it has no use for accept.
func (r AccountStore) CredentialByKeyHash(ctx context.Context, keyHash []byte, _ func(account.Credential) bool) (account.Credential, error) {
	var row credentialRow
	if err := r.selectOne(ctx, &row, credentialByKeyHash, keyHash); err != nil {
		return account.Credential{}, translate(err, "credential")
	}
	if row.ID == "" {
		return account.Credential{}, failure.NotFound("credential")
	}
	return row.domain(), nil
}

// credentialByKeyHash returns one row whether the key exists or not (its
// columns NULL when it does not), so that an unknown key costs the same
// read and scan as a known one: authentication's timing must not tell
// them apart.
const credentialByKeyHash = "SELECT c.id, c.account_id, c.label, c.key_prefix, c.key_hash, c.secret_hash, c.created_at, c.revoked_at" +
	" FROM (SELECT 1 AS one) AS one LEFT JOIN credentials AS c ON c.key_hash = $1"

// Credential reads a credential of the account by its id.
func (r AccountStore) Credential(ctx context.Context, accountID, id string) (account.Credential, error) {
	var row credentialRow
	if err := r.selectOne(ctx, &row, "SELECT "+credentialColumns+" FROM credentials WHERE id = $1 AND account_id = $2", id, accountID); err != nil {
		return account.Credential{}, translate(err, "credential")
	}
	return row.domain(), nil
}

// Credentials lists an account's credentials, oldest first.
func (r AccountStore) Credentials(ctx context.Context, accountID string) ([]account.Credential, error) {
	var rows []credentialRow
	if err := r.read.NewSelect().Model(&rows).Where("account_id = ?", accountID).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, translate(err, "credential")
	}
	out := make([]account.Credential, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// RevokeCredential marks a credential revoked (keeping an earlier revocation
// time) and returns it.
func (r AccountStore) RevokeCredential(ctx context.Context, accountID, id string, at time.Time) (account.Credential, error) {
	_, err := r.write.NewUpdate().Model((*credentialRow)(nil)).
		Set("revoked_at = ?", at).
		Where("id = ? AND account_id = ? AND revoked_at IS NULL", id, accountID).
		Exec(ctx)
	if err != nil {
		return account.Credential{}, translate(err, "credential")
	}
	var row credentialRow
	if err := r.write.NewSelect().Model(&row).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx); err != nil {
		return account.Credential{}, translate(err, "credential")
	}
	return row.domain(), nil
}

// RevokedSince lists the credentials revoked at or after since, oldest
// revocation first.
func (r AccountStore) RevokedSince(ctx context.Context, since time.Time) ([]account.Credential, error) {
	var rows []credentialRow
	err := r.read.NewSelect().Model(&rows).Where("revoked_at IS NOT NULL AND revoked_at >= ?", since).
		Order("revoked_at").Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read revoked credentials: %w", err)
	}
	out := make([]account.Credential, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

const numberColumns = "id, account_id, number, service, provider, sealed_settings, enabled, created_at, profile_name, profile_picture_url, profile_updated_at"

type numberRow struct {
	bun.BaseModel  `bun:"table:numbers"`
	ID             string    `bun:"id,pk"`
	AccountID      string    `bun:"account_id"`
	Number         string    `bun:"number"`
	Service        string    `bun:"service"`
	Provider       string    `bun:"provider"`
	SealedSettings []byte    `bun:"sealed_settings"`
	Enabled        bool      `bun:"enabled"`
	CreatedAt      time.Time `bun:"created_at"`
	// The profile columns are empty (and the time NULL) until the
	// account sets a profile.
	ProfileName       string     `bun:"profile_name"`
	ProfilePictureURL string     `bun:"profile_picture_url"`
	ProfileUpdatedAt  *time.Time `bun:"profile_updated_at"`
}

func (r numberRow) domain() account.Number {
	return account.Number{
		ID: r.ID, AccountID: r.AccountID, Number: r.Number, Service: account.Service(r.Service),
		Provider: account.Provider(r.Provider), SealedSettings: r.SealedSettings, Enabled: r.Enabled,
		CreatedAt: r.CreatedAt.UTC(),
		Profile:   account.Profile{Name: r.ProfileName, PictureURL: r.ProfilePictureURL, UpdatedAt: utcPtr(r.ProfileUpdatedAt)},
	}
}

// InsertNumber stores a new agent number of an account that exists.
func (r AccountStore) InsertNumber(ctx context.Context, n account.Number) error {
	row := numberRow{
		ID: n.ID, AccountID: n.AccountID, Number: n.Number, Service: string(n.Service),
		Provider: string(n.Provider), SealedSettings: n.SealedSettings, Enabled: n.Enabled, CreatedAt: n.CreatedAt,
	}
	return r.owned(ctx, n.AccountID, func(ctx context.Context, c *Conn) error { return insertRow(ctx, c, &row, "number") })
}

// Numbers lists an account's numbers, oldest first.
func (r AccountStore) Numbers(ctx context.Context, accountID string) ([]account.Number, error) {
	var rows []numberRow
	if err := r.selectAll(ctx, &rows, "SELECT "+numberColumns+" FROM numbers WHERE account_id = $1 ORDER BY created_at, id", accountID); err != nil {
		return nil, translate(err, "number")
	}
	out := make([]account.Number, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// SetNumberEnabled flips a number's enabled flag and returns the number.
func (r AccountStore) SetNumberEnabled(ctx context.Context, accountID, id string, enabled bool) (account.Number, error) {
	return r.updateNumber(ctx, accountID, id, r.write.NewUpdate().Model((*numberRow)(nil)).Set("enabled = ?", enabled))
}

// updateNumber runs q, an update of numbers with its Sets, on the number
// id of the account (NotFound when there is none), and reads it back.
func (r AccountStore) updateNumber(ctx context.Context, accountID, id string, q *bun.UpdateQuery) (account.Number, error) {
	res, err := q.Where("id = ? AND account_id = ?", id, accountID).Exec(ctx)
	if err != nil {
		return account.Number{}, translate(err, "number")
	}
	if err := requireOneRow(res, "number"); err != nil {
		return account.Number{}, err
	}
	var row numberRow
	if err := r.write.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return account.Number{}, translate(err, "number")
	}
	return row.domain(), nil
}

// SetNumberProfile sets the fields of a number's profile that change
// names and returns the number.
func (r AccountStore) SetNumberProfile(ctx context.Context, accountID, id string, change account.ProfileChange) (account.Number, error) {
	q := r.write.NewUpdate().Model((*numberRow)(nil)).Set("profile_updated_at = ?", change.At)
	if change.Name != nil {
		q = q.Set("profile_name = ?", *change.Name)
	}
	if change.PictureURL != nil {
		q = q.Set("profile_picture_url = ?", *change.PictureURL)
	}
	return r.updateNumber(ctx, accountID, id, q)
}

type domainRow struct {
	bun.BaseModel `bun:"table:domains"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	Name          string    `bun:"name"`
	CreatedAt     time.Time `bun:"created_at"`
}

// InsertDomain stores a custom email domain of an account that exists.
func (r AccountStore) InsertDomain(ctx context.Context, d account.Domain) error {
	row := domainRow{ID: d.ID, AccountID: d.AccountID, Name: d.Name, CreatedAt: d.CreatedAt}
	return r.owned(ctx, d.AccountID, func(ctx context.Context, c *Conn) error { return insertRow(ctx, c, &row, "domain") })
}

// Domains lists an account's custom domains by name.
func (r AccountStore) Domains(ctx context.Context, accountID string) ([]account.Domain, error) {
	var rows []domainRow
	if err := r.selectAll(ctx, &rows, "SELECT id, account_id, name, created_at FROM domains WHERE account_id = $1 ORDER BY name", accountID); err != nil {
		return nil, translate(err, "domain")
	}
	out := make([]account.Domain, len(rows))
	for i, row := range rows {
		out[i] = account.Domain{ID: row.ID, AccountID: row.AccountID, Name: row.Name, CreatedAt: row.CreatedAt.UTC()}
	}
	return out, nil
}

type emailAddressRow struct {
	bun.BaseModel `bun:"table:email_addresses"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	LocalPart     string    `bun:"local_part"`
	Domain        string    `bun:"domain"`
	CreatedAt     time.Time `bun:"created_at"`
}

// EmailAddresses lists an account's email addresses, oldest first.
func (r AccountStore) EmailAddresses(ctx context.Context, accountID string) ([]account.EmailAddress, error) {
	var rows []emailAddressRow
	if err := r.selectAll(ctx, &rows, "SELECT id, account_id, local_part, domain, created_at FROM email_addresses WHERE account_id = $1 ORDER BY created_at, id", accountID); err != nil {
		return nil, translate(err, "email address")
	}
	out := make([]account.EmailAddress, len(rows))
	for i, row := range rows {
		out[i] = account.EmailAddress{ID: row.ID, AccountID: row.AccountID, LocalPart: row.LocalPart, Domain: row.Domain, CreatedAt: row.CreatedAt.UTC()}
	}
	return out, nil
}

type rowsAffected interface{ RowsAffected() (int64, error) }

// requireOneRow turns an update that touched nothing into NotFound.
func requireOneRow(res rowsAffected, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("rows affected: %w", err)
	}
	if n == 0 {
		return failure.NotFound(what)
	}
	return nil
}

// Holdings reads what an account owns (its version is not needed here:
// this reads the current state).
func (r AccountStore) Holdings(ctx context.Context, a account.Account) (accounts.Holdings, error) {
	var h accounts.Holdings
	var err error
	if h.Numbers, err = r.Numbers(ctx, a.ID); err != nil {
		return accounts.Holdings{}, err
	}
	if h.EmailAddresses, err = r.EmailAddresses(ctx, a.ID); err != nil {
		return accounts.Holdings{}, err
	}
	if h.Domains, err = r.Domains(ctx, a.ID); err != nil {
		return accounts.Holdings{}, err
	}
	return h, nil
}
