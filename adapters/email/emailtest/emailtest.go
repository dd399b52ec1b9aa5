// Package emailtest is the contract suite of the email Sender port, run
// against every adapter (the sandbox sender, and SMTP against a real
// server on 127.0.0.1), and the MIME reader the SMTP tests use to look at
// what a server received.
package emailtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// Delivered is one email as its destination saw it.
type Delivered struct {
	// From and Recipients are the envelope; Sender and To the From and
	// To headers, display names decoded.
	From       string
	Recipients []string
	Sender     email.Mailbox
	To         []email.Mailbox
	MessageID  string
	Subject    string
	Text       string
	HTML       string
	// AttachmentName, AttachmentSize and AttachmentSHA256 (hex) describe
	// the attached file, if any; Attachment is its bytes where the
	// destination keeps them (a relay does, the sandbox mailbox does not).
	AttachmentName   string
	AttachmentSize   int64
	AttachmentSHA256 string
	Attachment       []byte
}

// Harness is one adapter under test and a view of where its emails went.
type Harness struct {
	Sender    appemail.Sender
	Delivered func(t *testing.T) []Delivered
}

// Outgoing returns a complete test email with a fresh Message-ID.
func Outgoing(n int) appemail.Outgoing {
	return appemail.Outgoing{
		MessageID: fmt.Sprintf("<eml_contract%d.%d@mail.example.com>", n, time.Now().UnixNano()),
		From:      "agent@mail.example.com", To: []email.Mailbox{{Address: "user@example.org"}},
		Cc: []string{"cc@example.org"}, Bcc: []string{"hidden@example.org"}, ReplyTo: []string{"replies@example.com"},
		Subject: fmt.Sprintf("Grüße Nr. %d", n), Text: "Hello there,\nsee you.",
		Date: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
	}
}

// Sender runs the contract of appemail.Sender against the harnesses that
// open returns; each call must give its own empty destination.
func Sender(t *testing.T, open func(t *testing.T) Harness) {
	t.Run("PlainTextReachesEveryRecipientOnce", func(t *testing.T) {
		t.Parallel()
		h := open(t)
		out := Outgoing(1)
		receipt, err := h.Sender.Send(context.Background(), out)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(receipt.Reply, "250"), "reply %q", receipt.Reply)
		got := h.Delivered(t)
		require.Len(t, got, 1)
		d := got[0]
		require.Equal(t, out.From, d.From)
		require.ElementsMatch(t, []string{"user@example.org", "cc@example.org", "hidden@example.org"}, d.Recipients)
		require.Equal(t, out.MessageID, d.MessageID)
		require.Equal(t, out.Subject, d.Subject)
		require.Equal(t, out.Text, strings.ReplaceAll(d.Text, "\r\n", "\n"))
		require.Empty(t, d.HTML)
	})

	t.Run("SeveralRecipientsWithDisplayNames", func(t *testing.T) {
		t.Parallel()
		h := open(t)
		out := Outgoing(5)
		out.FromName = "Acme Support"
		out.To = []email.Mailbox{{Name: "Ann Example", Address: "ann@example.org"}, {Name: "Doe, John", Address: "john@example.net"},
			{Name: "Zoë Ünver", Address: "zoe@example.com"}, {Address: "bob@example.org"}}
		_, err := h.Sender.Send(context.Background(), out)
		require.NoError(t, err)
		got := h.Delivered(t)
		require.Len(t, got, 1)
		require.Equal(t, email.Mailbox{Name: "Acme Support", Address: "agent@mail.example.com"}, got[0].Sender)
		require.Equal(t, out.To, got[0].To)
		require.ElementsMatch(t, []string{"ann@example.org", "john@example.net", "zoe@example.com", "bob@example.org", "cc@example.org", "hidden@example.org"},
			got[0].Recipients)
	})

	t.Run("HTMLTravelsWithItsTextAlternative", func(t *testing.T) {
		t.Parallel()
		h := open(t)
		out := Outgoing(2)
		out.HTML, out.Text = "<p>Hello <b>there</b></p>", "Hello there"
		_, err := h.Sender.Send(context.Background(), out)
		require.NoError(t, err)
		got := h.Delivered(t)
		require.Len(t, got, 1)
		require.Equal(t, out.HTML, got[0].HTML)
		require.Equal(t, out.Text, got[0].Text)
	})

	t.Run("AttachmentArrivesIntact", func(t *testing.T) {
		t.Parallel()
		h := open(t)
		out := Outgoing(3)
		data := bytes.Repeat([]byte{0, 1, 2, 250, 'x'}, 5000)
		out.Attachment = &appemail.Attachment{Name: "report.pdf", ContentType: "application/pdf", Data: data}
		_, err := h.Sender.Send(context.Background(), out)
		require.NoError(t, err)
		got := h.Delivered(t)
		require.Len(t, got, 1)
		require.Equal(t, "report.pdf", got[0].AttachmentName)
		require.Equal(t, int64(len(data)), got[0].AttachmentSize)
		sum := sha256.Sum256(data)
		require.Equal(t, hex.EncodeToString(sum[:]), got[0].AttachmentSHA256)
	})

	t.Run("ConcurrentSendsAllArrive", func(t *testing.T) {
		t.Parallel()
		h := open(t)
		const n = 24
		errs := make([]error, n)
		ids := map[string]bool{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := Outgoing(100 + i)
				mu.Lock()
				ids[out.MessageID] = true
				mu.Unlock()
				_, errs[i] = h.Sender.Send(context.Background(), out)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		got := h.Delivered(t)
		require.Len(t, got, n)
		for _, d := range got {
			require.True(t, ids[d.MessageID], "unexpected %s", d.MessageID)
			delete(ids, d.MessageID)
		}
	})

	t.Run("CancelledContextSendsNothing", func(t *testing.T) {
		t.Parallel()
		h := open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := h.Sender.Send(ctx, Outgoing(4))
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, h.Delivered(t))
	})
}

// FromKept is what the sandbox mailbox kept of an email.
func FromKept(k appemail.KeptEmail) (Delivered, error) {
	from, err := mail.ParseAddress(k.From)
	if err != nil {
		return Delivered{}, fmt.Errorf("kept From %q: %w", k.From, err)
	}
	to, err := mail.ParseAddressList(k.To)
	if err != nil {
		return Delivered{}, fmt.Errorf("kept To %q: %w", k.To, err)
	}
	d := Delivered{
		From: from.Address, Sender: mailbox(from), MessageID: k.MessageID, Subject: k.Subject, Text: k.Text, HTML: k.HTML,
	}
	for _, a := range to {
		d.To = append(d.To, mailbox(a))
		d.Recipients = append(d.Recipients, a.Address)
	}
	d.Recipients = append(append(d.Recipients, k.Cc...), k.Bcc...)
	if k.Attachment != nil {
		d.AttachmentName, d.AttachmentSize, d.AttachmentSHA256 = k.Attachment.Name, k.Attachment.Size, k.Attachment.SHA256
	}
	return d, nil
}

func mailbox(a *mail.Address) email.Mailbox { return email.Mailbox{Name: a.Name, Address: a.Address} }

// FromMIME reads a received message.
func FromMIME(from string, to []string, data []byte) (Delivered, *mail.Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return Delivered{}, nil, err
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return Delivered{}, nil, err
	}
	d := Delivered{From: from, Recipients: to, MessageID: msg.Header.Get("Message-Id"), Subject: subject}
	if sender, err := msg.Header.AddressList("From"); err == nil && len(sender) == 1 {
		d.Sender = mailbox(sender[0])
	}
	if list, err := msg.Header.AddressList("To"); err == nil {
		for _, a := range list {
			d.To = append(d.To, mailbox(a))
		}
	}
	body, err := io.ReadAll(msg.Body)
	if err != nil {
		return Delivered{}, nil, err
	}
	if err := readPart(&d, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Header.Get("Content-Disposition"), body); err != nil {
		return Delivered{}, nil, err
	}
	return d, msg, nil
}

func readPart(d *Delivered, contentType, encoding, disposition string, body []byte) error {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			p, err := r.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			b, err := io.ReadAll(p)
			if err != nil {
				return err
			}
			if err := readPart(d, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p.Header.Get("Content-Disposition"), b); err != nil {
				return err
			}
		}
	}
	var decoded []byte
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		decoded, err = io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
	case "base64":
		decoded, err = io.ReadAll(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("\r\n"), nil), []byte("\n"), nil))))
	default:
		decoded = body
	}
	if err != nil {
		return err
	}
	if disp, dparams, err := mime.ParseMediaType(disposition); err == nil && disp == "attachment" {
		sum := sha256.Sum256(decoded)
		d.AttachmentName, d.Attachment = dparams["filename"], decoded
		d.AttachmentSize, d.AttachmentSHA256 = int64(len(decoded)), hex.EncodeToString(sum[:])
		return nil
	}
	switch mediaType {
	case "text/plain":
		d.Text = strings.TrimRight(strings.ReplaceAll(string(decoded), "\r\n", "\n"), "\n")
	case "text/html":
		d.HTML = strings.TrimRight(strings.ReplaceAll(string(decoded), "\r\n", "\n"), "\n")
	}
	return nil
}
