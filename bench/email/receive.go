package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"net"
	"net/smtp"
	"net/textproto"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Receive measures receiving email (issue 37): Connections SMTP clients (Go's
// net/smtp), each on a connection of its own for a slice, deliver Rate messages a
// second in all, each of Size bytes (a text part and a base64 attachment), to the
// SMTP listener of a server that is up for the whole scenario with jobs on. A
// message's latency runs from its MAIL FROM until the receiver in the bench has read
// its email.received delivery: the listener spooled it, a job parsed, threaded and
// stored it with its event, and the webhook pipeline delivered that. A message
// answered 250 and not delivered within Timeout after the slice is lost: a failure,
// as is any refusal, and a slice that delivered at under 95% of Rate.
//
// The server runs with --smtp-max-message-bytes MaxMessageBytes and
// --smtp-max-connections MaxConnections, which bound what the listener holds; after
// the rounds, the server's peak resident memory is reported against its resident
// memory when idle plus MemoryHeadroom and twice that bound (a message held by the
// listener, and as read by its job). The SPF, DKIM and DMARC checks ask a DNS
// address on 127.0.0.1 where nothing listens (--smtp-dns), so no query leaves the
// machine; they record temperror. The envelope senders' rate limit is off
// (--smtp-sender-rate 0): one sender delivers them all.
type Receive struct {
	Connections     int
	Rate            int
	Size            int
	MaxMessageBytes int64
	MaxConnections  int
	MemoryHeadroom  int64
	Timeout         time.Duration
}

// receiveLocal is the bench address that receives the messages.
const receiveLocal = "bench.inbox"

// Setup provisions the deployment with the receiving address, starts the receiver,
// sets the webhook and starts the server with its listener.
func (rv Receive) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	rc, err := env.StartReceiver(true)
	if err != nil {
		return nil, err
	}
	if err := d.SetWebhook(ctx, d.AccountID, rc.URL); err != nil {
		return nil, err
	}
	smtpAddr, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	dns, err := closedUDP()
	if err != nil {
		return nil, err
	}
	flags := append(Flags(), harness.AllowLoopback...)
	sb, err := d.Serve(ctx, append(flags, "--smtp-listen", smtpAddr, "--smtp-dns", dns, "--smtp-sender-rate", "0",
		"--smtp-max-message-bytes", strconv.FormatInt(rv.MaxMessageBytes, 10), "--smtp-max-connections", strconv.Itoa(rv.MaxConnections))...)
	if err != nil {
		return nil, err
	}
	if err := createAddress(ctx, sb, receiveLocal); err != nil {
		return nil, err
	}
	idle, _, err := harness.ProcessMemory(sb.PID())
	if err != nil {
		return nil, err
	}
	bound := idle + rv.MemoryHeadroom + 2*rv.MaxMessageBytes*int64(rv.MaxConnections)
	env.AfterRounds(func(context.Context, harness.Rounds) []harness.Figure {
		max := float64(bound) / (1 << 20)
		f := harness.Figure{Name: "server peak RSS", Unit: "MiB", Max: &max, Detail: fmt.Sprintf(
			"VmHWM over all rounds; target: idle RSS %.0f MiB + %d MiB headroom + 2 × %d MiB messages × %d connections",
			float64(idle)/(1<<20), rv.MemoryHeadroom>>20, rv.MaxMessageBytes>>20, rv.MaxConnections)}
		_, peak, err := harness.ProcessMemory(sb.PID())
		if err != nil {
			f.Error = err.Error()
		}
		f.Value = float64(peak) / (1 << 20)
		return []harness.Figure{f}
	})
	msg, err := newBenchMessage(rv.Size)
	if err != nil {
		return nil, err
	}
	r := &receiver{Receive: rv, addr: smtpAddr, rc: rc, msg: msg, to: receiveLocal + "@" + domain, env: env}
	return r.slice, nil
}

// closedUDP is an address on 127.0.0.1 where nothing listens.
func closedUDP() (string, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.LocalAddr().String(), nil
}

type receiver struct {
	Receive
	addr string
	rc   *harness.Receiver
	msg  benchMessage
	to   string
	env  *harness.Env
	n    atomic.Int64
}

// delivery is one message answered 250, by its Message-ID.
type delivery struct {
	id string
	at time.Time
}

func (r *receiver) slice(ctx context.Context, d time.Duration) (harness.Sample, error) {
	interval := time.Duration(int64(time.Second) * int64(r.Connections) / int64(r.Rate))
	var (
		mu        sync.Mutex
		delivered []delivery
		failed    int
		first     string
		wg        sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		if first == "" {
			first = err.Error()
		}
	}
	start := time.Now()
	for c := range r.Connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client, err := smtp.Dial(r.addr)
			if err != nil {
				fail(fmt.Errorf("connect to the listener: %w", err))
				return
			}
			defer client.Close()
			if err := client.Hello("bench.example"); err != nil {
				fail(err)
				return
			}
			// Each connection starts a share of the interval after the last, so
			// that the messages arrive evenly.
			offset := interval * time.Duration(c) / time.Duration(r.Connections)
			for i := 0; ; i++ {
				at := start.Add(offset + time.Duration(i)*interval)
				if at.Sub(start) >= d || ctx.Err() != nil {
					break
				}
				time.Sleep(time.Until(at))
				id := fmt.Sprintf("<bench-%d-%d@bench.example>", time.Now().UnixNano(), r.n.Add(1))
				sent := time.Now()
				if err := r.deliver(client, id); err != nil {
					fail(err)
					_ = client.Reset()
					continue
				}
				mu.Lock()
				delivered = append(delivered, delivery{id: id, at: sent})
				mu.Unlock()
			}
			_ = client.Quit()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if want := float64(r.Rate) * 0.95; float64(len(delivered))/elapsed.Seconds() < want {
		fail(fmt.Errorf("the listener took %.0f messages a second, not %d", float64(len(delivered))/elapsed.Seconds(), r.Rate))
	}
	var lat []time.Duration
	deadline := time.Now().Add(r.Timeout)
	for _, m := range delivered {
		for {
			if at, ok := r.rc.Take(m.id); ok {
				lat = append(lat, max(at.Sub(m.at), 0))
				break
			}
			if time.Now().After(deadline) {
				fail(fmt.Errorf("message %s, answered 250, reached no webhook within %s: lost", m.id, r.Timeout))
				break
			}
			select {
			case <-ctx.Done():
				return harness.Sample{}, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	r.env.Log.Info("receive slice", "accepted", len(delivered), "took", elapsed.Round(time.Millisecond), "failed", failed)
	return harness.Sample{Ops: len(lat), Elapsed: elapsed, Latencies: lat, Failed: failed, FirstFailure: first}, nil
}

// deliver sends one message with Message-ID id over client: MAIL FROM, RCPT TO, DATA,
// and the 250 that ends it.
func (r *receiver) deliver(client *smtp.Client, id string) error {
	if err := client.Mail("sender@bench.example"); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	if err := client.Rcpt(r.to); err != nil {
		return fmt.Errorf("RCPT TO: %w", err)
	}
	w, err := client.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(r.msg.with(id, r.to)); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("end of DATA: %w", err)
	}
	return nil
}

// benchMessage is the bench's message without its first header lines, which each
// delivery writes (Message-ID, To).
type benchMessage struct {
	rest []byte
}

// newBenchMessage writes a multipart/mixed message of about size bytes: a text part
// and a base64 attachment of pseudo-random bytes, with mime/multipart.
func newBenchMessage(size int) (benchMessage, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	text, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"text/plain; charset=utf-8"}})
	if err != nil {
		return benchMessage{}, err
	}
	if _, err := text.Write([]byte("Hello,\r\n\r\nthe report is attached.\r\n\r\nOn Tue, Nov 24, 2026 at 9:15 AM Bench wrote:\r\n> Send it.\r\n")); err != nil {
		return benchMessage{}, err
	}
	att, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/octet-stream"},
		"Content-Disposition": {`attachment; filename="report.bin"`}, "Content-Transfer-Encoding": {"base64"}})
	if err != nil {
		return benchMessage{}, err
	}
	// base64 makes 4 bytes of 3, in lines of 76 and a CRLF.
	raw := make([]byte, max(size-1024, 0)*3/4*76/78)
	for i := 0; i < len(raw); i += sha256.Size {
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		copy(raw[i:], sum[:])
	}
	encoded := base64.StdEncoding.EncodeToString(raw)
	for len(encoded) > 76 {
		if _, err := att.Write([]byte(encoded[:76] + "\r\n")); err != nil {
			return benchMessage{}, err
		}
		encoded = encoded[76:]
	}
	if _, err := att.Write([]byte(encoded + "\r\n")); err != nil {
		return benchMessage{}, err
	}
	if err := mw.Close(); err != nil {
		return benchMessage{}, err
	}
	header := "From: Bench Sender <sender@bench.example>\r\nSubject: Bench report\r\nDate: Tue, 24 Nov 2026 09:20:00 +0000\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=" + mw.Boundary() + "\r\n\r\n"
	return benchMessage{rest: append([]byte(header), body.Bytes()...)}, nil
}

// with is the whole message with Message-ID id, to to.
func (m benchMessage) with(id, to string) []byte {
	first := "Message-ID: " + id + "\r\nTo: " + to + "\r\n"
	out := make([]byte, 0, len(first)+len(m.rest))
	return append(append(out, first...), m.rest...)
}

// size is the message's length in bytes (its Message-ID and To aside).
func (m benchMessage) size() int { return len(m.rest) }
