package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/profiles"
)

// encoded is a 2x2 picture as PNG (its first pixel transparent) or JPEG.
func encoded(t *testing.T, format string) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	for i, c := range []color.NRGBA{{0, 0, 0, 0}, {255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}} {
		img.Set(i%2, i/2, c)
	}
	var b bytes.Buffer
	if format == "png" {
		require.NoError(t, png.Encode(&b, img))
	} else {
		require.NoError(t, jpeg.Encode(&b, img, nil))
	}
	return b.Bytes()
}

// The bot's name goes out as setMyName {"name"}; a rate limit is a
// transient provider error with its retry_after.
func TestSetProfileName(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t)
	ctx := context.Background()
	out, err := p.SetProfileName(ctx, number, fake.Settings(), "Ada from Acme")
	require.NoError(t, err)
	require.Equal(t, profiles.Outcome{Applied: true}, out)
	calls := fake.Calls("setMyName")
	require.Len(t, calls, 1)
	require.Equal(t, map[string]any{"name": "Ada from Acme"}, calls[0].Params, "exactly the name, for every language")
	require.Equal(t, "Ada from Acme", fake.Profile().Name)

	fake.RateLimitNext(30)
	_, err = p.SetProfileName(ctx, number, fake.Settings(), "Ada")
	var pe *messaging.ProviderError
	require.True(t, errors.As(err, &pe), "got %v", err)
	require.Equal(t, "rate_limited", pe.Code)
	require.False(t, pe.Permanent)
	require.Equal(t, "Ada from Acme", fake.Profile().Name, "unchanged")

	_, err = p.SetProfileName(ctx, number, map[string]string{}, "Ada")
	require.True(t, errors.As(err, &pe) && pe.Code == "provider_misconfigured", "got %v", err)
}

// The picture goes out as setMyProfilePhoto in multipart/form-data: photo
// is the InputProfilePhotoStatic naming its part with attach://, the part
// a JPEG; a PNG is converted, its transparency over white.
func TestSetProfilePicture(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t)
	ctx := context.Background()
	jpg := encoded(t, "jpeg")
	out, err := p.SetProfilePicture(ctx, number, fake.Settings(), profiles.Picture{URL: "https://files.example.com/a.jpg", ContentType: "image/jpeg", Data: jpg, Width: 2, Height: 2})
	require.NoError(t, err)
	require.Equal(t, profiles.Outcome{Applied: true}, out)
	calls := fake.Calls("setMyProfilePhoto")
	require.Len(t, calls, 1)
	var photo map[string]string
	require.NoError(t, json.Unmarshal([]byte(calls[0].Params["photo"].(string)), &photo))
	require.Equal(t, "static", photo["type"])
	part, ok := strings.CutPrefix(photo["photo"], "attach://")
	require.True(t, ok, "%v", photo)
	require.Equal(t, "<upload>", calls[0].Params[part], "the file is the part photo names")
	require.Equal(t, jpg, fake.Profile().Photo, "a JPEG is sent as it is")

	_, err = p.SetProfilePicture(ctx, number, fake.Settings(), profiles.Picture{ContentType: "image/png", Data: encoded(t, "png"), Width: 2, Height: 2})
	require.NoError(t, err)
	sent, err := jpeg.Decode(bytes.NewReader(fake.Profile().Photo))
	require.NoError(t, err, "a PNG arrives as a JPEG")
	require.Equal(t, image.Rect(0, 0, 2, 2), sent.Bounds())
	r, g, b, _ := sent.At(0, 0).RGBA()
	require.Greater(t, min(r, g, b), uint32(0xe000), "the transparent pixel is white")

	fake.RateLimitNext(5)
	_, err = p.SetProfilePicture(ctx, number, fake.Settings(), profiles.Picture{ContentType: "image/jpeg", Data: jpg})
	var pe *messaging.ProviderError
	require.True(t, errors.As(err, &pe) && pe.Code == "rate_limited", "got %v", err)
}
