package rest_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// videoBytes is the size of the inbound video the media benchmarks
// stream: the 16 MB limit of the kind.
const videoBytes = 16 << 20

// BenchmarkMediaStream streams a 16 MB video a WhatsApp user sent through
// its signed link, from the Cloud API fake on 127.0.0.1 through
// Switchboard to the client; BenchmarkPlainCopy serves the same bytes
// from one loopback server to the client, the floor a stream through
// Switchboard is compared with. Both report the heap in use after the
// transfers beyond what it was before (heap-growth-B).
func BenchmarkMediaStream(b *testing.B) {
	bundle := setupChannels(b, store.SQLite)
	video := bytes.Repeat([]byte{0, 0, 0, 0x20, 'f', 't', 'y', 'p'}, videoBytes/8)
	bundle.wa.AddMedia("media-video", "video/mp4", video)
	body := whatsappfake.MediaMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.video", "video",
		map[string]any{"id": "media-video", "mime_type": "video/mp4", "sha256": "x"})
	if r := bundle.whatsappPost(b, body, whatsappfake.Sign(body, waSecret)); r.StatusCode != http.StatusOK {
		b.Fatalf("webhook: %d %s", r.StatusCode, r.Body)
	}
	var id string
	if err := bundle.db.Bun().NewRaw("SELECT id FROM messages WHERE provider_message_id = 'wamid.video'").Scan(b.Context(), &id); err != nil {
		b.Fatal(err)
	}
	m := domain.Message{ID: id, AccountID: bundle.account, Content: domain.Content{Kind: domain.KindVideo, MediaRef: "media-video"}}
	link := bundle.links.Link(m, time.Now())
	streamEach(b, link)
}

// BenchmarkPlainCopy is BenchmarkMediaStream's floor: the same 16 MB from
// a loopback server straight to the client.
func BenchmarkPlainCopy(b *testing.B) {
	video := bytes.Repeat([]byte{0, 0, 0, 0x20, 'f', 't', 'y', 'p'}, videoBytes/8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		w.Header().Set("Content-Length", strconv.Itoa(len(video)))
		_, _ = io.Copy(w, bytes.NewReader(video))
	}))
	b.Cleanup(srv.Close)
	streamEach(b, srv.URL)
}

// BenchmarkPlainProxy is the floor of the same path: a loopback server
// that copies the 16 MB from another loopback server to the client, as
// Switchboard copies the provider's download, with nothing else.
func BenchmarkPlainProxy(b *testing.B) {
	video := bytes.Repeat([]byte{0, 0, 0, 0x20, 'f', 't', 'y', 'p'}, videoBytes/8)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		w.Header().Set("Content-Length", strconv.Itoa(len(video)))
		_, _ = io.Copy(w, bytes.NewReader(video))
	}))
	b.Cleanup(origin.Close)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := http.Get(origin.URL)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.Header().Set("Content-Length", strconv.FormatInt(res.ContentLength, 10))
		_, _ = io.Copy(w, res.Body)
	}))
	b.Cleanup(proxy.Close)
	streamEach(b, proxy.URL)
}

// streamEach GETs url b.N times, reading each answer to its end, and
// reports the bytes per second and the heap's growth.
func streamEach(b *testing.B, url string) {
	b.Helper()
	client := &http.Client{}
	get := func() {
		res, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if err != nil || n != videoBytes || res.StatusCode != http.StatusOK {
			b.Fatalf("got %d bytes, status %d: %v", n, res.StatusCode, err)
		}
	}
	get() // connections and pools warm
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.SetBytes(videoBytes)
	b.ReportAllocs()
	b.ResetTimer()
	peak := uint64(0)
	for b.Loop() {
		get()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(peak)-int64(before.HeapInuse)), "peak-heap-growth-B")
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse)), "heap-growth-B")
}
