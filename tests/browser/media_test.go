package browser

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// A photo a user sent shows in the thread as the image itself, loaded
// through its signed media link from the server's own origin.
func TestThreadsShowAPhotoAUserSent(t *testing.T) {
	t.Parallel()
	var picture bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for x := range 40 {
		for y := range 30 {
			img.Set(x, y, color.RGBA{R: 200, G: uint8(y * 8), B: 80, A: 255})
		}
	}
	require.NoError(t, png.Encode(&picture, img))
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(picture.Bytes())
	}))
	t.Cleanup(files.Close)

	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.1/32"}})
	s.mustAPI(http.MethodPost, "/v1/sandbox/{account}/inbound", map[string]any{
		"service": "whatsapp", "from": "+14155550125", "to": s.Number, "sender_name": "Pia",
		"message_type": "media", "media_url": files.URL + "/photo.png", "media_type": "image", "caption": "the view",
	})
	tb := openFirstThread(t, s)
	tb.waitFor("the photo to load", `() => {
		const i = document.querySelector('.messages img.media');
		return i && i.complete && i.naturalWidth === 40 && i.naturalHeight === 30;
	}`)
	tb.requireHealthy()
}
