package harness

import (
	"encoding/binary"
	"io"
	"maps"
	"net"
	"testing"
	"time"
)

// wire builds client protocol messages.
type wire []byte

func (w wire) startup() wire {
	body := binary.BigEndian.AppendUint32(nil, protocol3)
	body = append(body, "user\x00bench\x00\x00"...)
	return append(binary.BigEndian.AppendUint32(w, uint32(4+len(body))), body...)
}

func (w wire) msg(typ byte, parts ...string) wire {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	w = append(w, typ)
	return append(binary.BigEndian.AppendUint32(w, uint32(4+len(body))), body...)
}

// session is a connection as pgdriver makes them: a transaction of simple queries,
// a prepared statement run twice outside it, and an autocommit NOTIFY.
func session() wire {
	return wire(nil).startup().
		msg('Q', "BEGIN\x00").
		msg('Q', "SELECT id FROM numbers WHERE number = '+1'\x00").
		msg('Q', "  INSERT INTO messages VALUES (1)\x00").
		msg('Q', "COMMIT\x00").
		msg('P', "s1\x00", "/* hot */ select * from messages where id = $1\x00", "\x00\x00").
		msg('D', "Ss1\x00").
		msg('S').
		msg('B', "\x00", "s1\x00", "\x00\x00\x00\x00\x00\x00").
		msg('E', "\x00", "\x00\x00\x00\x00").
		msg('S').
		msg('B', "\x00", "s1\x00", "\x00\x00\x00\x00\x00\x00").
		msg('E', "\x00", "\x00\x00\x00\x00").
		msg('S').
		msg('Q', "NOTIFY \"jobs\", ''\x00").
		msg('X')
}

func TestPGProxyCountsStatementsAndTransactions(t *testing.T) {
	t.Parallel()
	// The upstream "server" swallows whatever it gets.
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { upstream.Close() })
	go func() {
		for {
			c, err := upstream.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	p, err := StartPGProxy("postgres://bench@" + upstream.Addr().String() + "/db?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	for range 2 {
		c, err := net.Dial("tcp", p.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(session()); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	want := StatementCounts{
		Statements:   map[string]int{"BEGIN": 2, "SELECT": 6, "INSERT": 2, "COMMIT": 2, "NOTIFY": 2},
		Transactions: 2 * 4, // the block, two prepared SELECTs and the NOTIFY
	}
	deadline := time.Now().Add(5 * time.Second)
	var got StatementCounts
	for time.Now().Before(deadline) {
		if got = p.Counts(); got.Total() == want.Total() && got.Transactions == want.Transactions {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !maps.Equal(got.Statements, want.Statements) || got.Transactions != want.Transactions || got.Unparsed != 0 {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	if d := got.Sub(StatementCounts{Statements: map[string]int{"SELECT": 6}, Transactions: 1}); d.Total() != 8 || d.Transactions != 7 || d.Statements["SELECT"] != 0 {
		t.Errorf("Sub = %+v", d)
	}
	if p.URL != "postgres://bench@"+p.ln.Addr().String()+"/db?sslmode=disable" {
		t.Errorf("proxy URL = %s, want the upstream's with the proxy's address and sslmode=disable", p.URL)
	}
}

func TestPGProxyCountsUnparsedConnections(t *testing.T) {
	t.Parallel()
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { upstream.Close() })
	received := make(chan int, 1)
	go func() {
		c, err := upstream.Accept()
		if err != nil {
			return
		}
		n, _ := io.Copy(io.Discard, c)
		received <- int(n)
	}()
	p, err := StartPGProxy("postgres://bench@" + upstream.Addr().String() + "/db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte("\x16\x03\x01\x02\x00 a TLS client hello, say")
	if _, err := c.Write(junk); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case n := <-received:
		if n != len(junk) {
			t.Errorf("upstream got %d bytes, want all %d forwarded", n, len(junk))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("upstream got nothing")
	}
	if got := p.Counts(); got.Unparsed != 1 || got.Total() != 0 {
		t.Errorf("counts = %+v, want one unparsed connection", got)
	}
}

func TestKeyword(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]string{
		"select 1":                    "SELECT",
		"  \n\tINSERT INTO x":         "INSERT",
		"-- note\nUPDATE x SET y = 1": "UPDATE",
		"/* c */ (SELECT 1)":          "SELECT",
		"BEGIN; SET TRANSACTION":      "BEGIN",
		"":                            "",
	} {
		if got := keyword(q); got != want {
			t.Errorf("keyword(%q) = %q, want %q", q, got, want)
		}
	}
}
